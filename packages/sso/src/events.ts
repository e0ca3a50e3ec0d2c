import { defineEvent } from '@idt/core';
import { z } from 'zod';
import { CONNECTION_KINDS } from './connections/records.js';

/** What happened to a connection. */
export const CONNECTION_CHANGES = ['created', 'updated', 'enabled', 'disabled', 'deleted'] as const;

/**
 * A single sign-on connection was created, changed, enabled, disabled or
 * deleted; written to the outbox in the transaction of the change.
 */
export const SsoConnectionChangedEvent = defineEvent({
  type: 'SsoConnectionChangedEvent',
  module: 'sso',
  description:
    'A single sign-on connection was created, changed, enabled, disabled or deleted. Consumers audit it or refresh a cached sign-in page.',
  schema: z.object({
    connectionId: z.string().min(1),
    organizationId: z.string().min(1).nullable().describe('The owning organization; null for a platform connection.'),
    kind: z.enum(CONNECTION_KINDS),
    name: z.string(),
    change: z.enum(CONNECTION_CHANGES),
    enabled: z.boolean().describe('Whether the connection is enabled after the change (false once deleted).'),
    changedBy: z.string().min(1).nullable().describe('The user who made the change; null for a service account.'),
    changedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link SsoConnectionChangedEvent}. */
export type SsoConnectionChangedPayload = z.output<typeof SsoConnectionChangedEvent.schema>;

/** An organization proved control of a domain by its DNS TXT record. */
export const DomainVerifiedEvent = defineEvent({
  type: 'DomainVerifiedEvent',
  module: 'sso',
  description:
    'An organization proved control of a domain through its DNS TXT record; addresses of the domain now route to its connections.',
  schema: z.object({
    domainId: z.string().min(1),
    organizationId: z.string().min(1),
    domain: z.string().min(1),
    verifiedBy: z.string().min(1).nullable().describe('The user who asked for the check; null for a service account.'),
    verifiedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link DomainVerifiedEvent}. */
export type DomainVerifiedPayload = z.output<typeof DomainVerifiedEvent.schema>;

/** Every integration event of the sso module, for the catalog and webhooks. */
export const ssoEvents = [SsoConnectionChangedEvent, DomainVerifiedEvent] as const;
