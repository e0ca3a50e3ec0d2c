import { defineEvent } from '@idt/core';
import { z } from 'zod';

/** The contracts namespace of the platform module's integration events (SPEC 6). */
export const PLATFORM_EVENTS_NAMESPACE = 'Platform.Events';

/** The cache-invalidation namespace of setting values (key: an organization id, or `system`). */
export const SETTINGS_CACHE = 'platform.settings';
/** The cache-invalidation namespace of feature flags (key: `definitions`, or an organization id for its overrides). */
export const FLAGS_CACHE = 'platform.flags';
/**
 * The cache-invalidation namespace of webhook endpoint routing (which
 * endpoints receive which events; key `*`): evicted by every write of an
 * endpoint that changes its URL, event types, organization or whether it is enabled.
 */
export const WEBHOOK_ENDPOINTS_CACHE = 'platform.webhook-endpoints';

/**
 * A setting value was set or reset: a platform-wide `system.*` value, an
 * organization's, or one user's override. Written in the transaction of the
 * change. Contracts namespace `Platform.Events`.
 */
export const SettingChangedEvent = defineEvent({
  type: 'SettingChangedEvent',
  module: 'platform',
  description: `A setting value was set or reset (contracts namespace \`${PLATFORM_EVENTS_NAMESPACE}\`).`,
  schema: z.object({
    scope: z.enum(['system', 'organization', 'user']),
    organizationId: z.string().nullable(),
    userId: z.string().nullable(),
    key: z.string(),
    change: z.enum(['set', 'reset']),
    changedBy: z.string(),
    changedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link SettingChangedEvent}. */
export type SettingChangedPayload = z.output<typeof SettingChangedEvent.schema>;

/**
 * A feature flag was defined, changed or deleted, or an organization's or
 * user's override of it was set or removed. No event is written per
 * evaluation. Contracts namespace `Platform.Events`.
 */
export const FeatureFlagChangedEvent = defineEvent({
  type: 'FeatureFlagChangedEvent',
  module: 'platform',
  description: `A feature flag or one of its overrides changed (contracts namespace \`${PLATFORM_EVENTS_NAMESPACE}\`).`,
  schema: z.object({
    key: z.string(),
    organizationId: z.string().nullable(),
    userId: z.string().nullable(),
    change: z.enum(['created', 'updated', 'deleted', 'override-set', 'override-removed']),
    changedBy: z.string(),
    changedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link FeatureFlagChangedEvent}. */
export type FeatureFlagChangedPayload = z.output<typeof FeatureFlagChangedEvent.schema>;

/**
 * A changelog entry was published (the first time, or again after being
 * unpublished). Written in the transaction that publishes it; webhooks call
 * it `changelog.published`. Contracts namespace `Platform.Events`.
 */
export const ChangelogPublishedEvent = defineEvent({
  type: 'ChangelogPublishedEvent',
  module: 'platform',
  description: `A changelog entry was published (contracts namespace \`${PLATFORM_EVENTS_NAMESPACE}\`).`,
  schema: z.object({
    entryId: z.string(),
    version: z.string(),
    title: z.string(),
    releasedAt: z.string().describe('ISO 8601 UTC'),
    publishedBy: z.string(),
    publishedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link ChangelogPublishedEvent}. */
export type ChangelogPublishedPayload = z.output<typeof ChangelogPublishedEvent.schema>;

/**
 * An announcement was published, by hand or by the scheduling job. Written
 * in the transaction that publishes it. `organizationId` owns it; with
 * `target` `all` it is for every organization, with `role` for the members
 * holding `targetValue`. With the notifications module present, the
 * platform module turns it into one in-app notification per targeted member. Webhooks
 * call it `announcement.published`. Contracts namespace `Platform.Events`.
 */
export const AnnouncementPublishedEvent = defineEvent({
  type: 'AnnouncementPublishedEvent',
  module: 'platform',
  description: `An announcement was published (contracts namespace \`${PLATFORM_EVENTS_NAMESPACE}\`).`,
  schema: z.object({
    announcementId: z.string(),
    organizationId: z.string(),
    title: z.string(),
    type: z.string(),
    target: z.enum(['all', 'organization', 'role']),
    targetValue: z.string().nullable(),
    publishedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link AnnouncementPublishedEvent}. */
export type AnnouncementPublishedPayload = z.output<typeof AnnouncementPublishedEvent.schema>;

/**
 * A webhook endpoint was disabled by delivery: it answered 410 Gone, or its
 * deliveries failed for 5 days. Written in the transaction that disables it;
 * platform administrators are told (an in-app notification when the
 * notifications module is present). Contracts namespace `Platform.Events`.
 */
export const WebhookEndpointDisabledEvent = defineEvent({
  type: 'WebhookEndpointDisabledEvent',
  module: 'platform',
  description: `Delivery disabled a webhook endpoint (contracts namespace \`${PLATFORM_EVENTS_NAMESPACE}\`).`,
  schema: z.object({
    endpointId: z.string(),
    url: z.string(),
    reason: z.string(),
    disabledAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link WebhookEndpointDisabledEvent}. */
export type WebhookEndpointDisabledPayload = z.output<typeof WebhookEndpointDisabledEvent.schema>;

/** Every integration event of the platform module, for the catalog. */
export const platformEvents = [
  SettingChangedEvent,
  FeatureFlagChangedEvent,
  ChangelogPublishedEvent,
  AnnouncementPublishedEvent,
  WebhookEndpointDisabledEvent,
] as const;
