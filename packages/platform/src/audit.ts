import { type AuditActor, type AuditMetadataValue, defineAuditActions, isSecretLookingKey } from '@idt/core';
import type { PlatformActor } from './access.js';
import type { JsonValue } from './settings/definitions.js';

/**
 * The audit actions of the platform module. Organization settings, user
 * overrides and flag overrides are recorded on the organization's trail;
 * `system.*` settings, flag definitions and webhook endpoints (platform
 * administration) on the platform trail.
 */
export const PlatformAuditActions = defineAuditActions('platform', {
  settingChanged: {
    action: 'platform.setting.changed',
    description:
      'A setting was set: an organization value, a user’s own override in an organization, or a platform-wide `system.*` value.',
    targetType: 'setting',
  },
  settingReset: {
    action: 'platform.setting.reset',
    description: 'A stored setting value was removed: the default (or the organization’s value) applies again.',
    targetType: 'setting',
  },
  flagCreated: { action: 'platform.flag.created', description: 'A feature flag was defined.', targetType: 'featureFlag' },
  flagUpdated: {
    action: 'platform.flag.updated',
    description: 'A feature flag’s definition (default, rollout, variants) changed.',
    targetType: 'featureFlag',
  },
  flagDeleted: {
    action: 'platform.flag.deleted',
    description: 'A feature flag was deleted, with every organization’s overrides of it.',
    targetType: 'featureFlag',
  },
  flagOverrideSet: {
    action: 'platform.flagOverride.set',
    description: 'An organization set its override of a feature flag, for itself or for one member.',
    targetType: 'featureFlag',
  },
  flagOverrideRemoved: {
    action: 'platform.flagOverride.removed',
    description: 'An organization removed its override of a feature flag (for itself or for one member).',
    targetType: 'featureFlag',
  },
  webhookEndpointCreated: {
    action: 'platform.webhookEndpoint.created',
    description: 'A webhook endpoint was registered.',
    targetType: 'webhookEndpoint',
  },
  webhookEndpointUpdated: {
    action: 'platform.webhookEndpoint.updated',
    description: 'A webhook endpoint’s URL, description, event types, organization or enabled state changed.',
    targetType: 'webhookEndpoint',
  },
  webhookEndpointDeleted: {
    action: 'platform.webhookEndpoint.deleted',
    description: 'A webhook endpoint was deleted.',
    targetType: 'webhookEndpoint',
  },
  webhookEndpointSecretRotated: {
    action: 'platform.webhookEndpoint.secretRotated',
    description: 'A webhook endpoint’s signing secret was replaced; the previous one signs on for the grace period.',
    targetType: 'webhookEndpoint',
  },
});

/** Where a platform change came from, for its audit record (`auditRequestOf(route)` of `@idt/core` is one). */
export interface PlatformRequestFacts {
  readonly ip?: string | null;
  readonly userAgent?: string | null;
  readonly traceId?: string | null;
}

/** The request facts of an audit entry: `null` for each one missing (a call from code rather than a request). */
export function requestFactsOf(request: PlatformRequestFacts = {}): Required<{
  [K in keyof PlatformRequestFacts]: string | null;
}> {
  return { ip: request.ip ?? null, userAgent: request.userAgent ?? null, traceId: request.traceId ?? null };
}

/**
 * The audit actor of a platform caller, as `auditActorOf` of `@idt/core`
 * names a request's principal: an API key by its id, a service account by
 * its client id, anyone else as the user.
 */
export function platformAuditActor(actor: PlatformActor): AuditActor {
  const display = actor.name ?? null;
  if (actor.kind === 'apiKey') return { type: 'apiKey', id: actor.credentialId ?? actor.subject, display };
  if (actor.kind === 'service') return { type: 'service', id: actor.clientId ?? actor.subject, display };
  return { type: 'user', id: actor.userId ?? actor.subject, display };
}

/** The longest setting value (as JSON) copied into a record; longer ones are recorded by length. */
const MAX_RECORDED_VALUE = 1024;

/**
 * What a record says about a setting's new value. `custom.*` values are free
 * text an organization may use for anything, and a key that names a secret
 * (`billing.apiKey`) may hold one: neither is copied, only its length.
 */
export function settingValueFacts(key: string, value: JsonValue): Record<string, AuditMetadataValue> {
  const text = JSON.stringify(value);
  if (key.startsWith('custom.') || isSecretLookingKey(key) || text.length > MAX_RECORDED_VALUE) {
    return { valueLength: text.length };
  }
  return { value };
}

/** An endpoint URL for people to read: without its query, user name or password (a URL may carry a token there). */
export function endpointDisplay(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '';
  }
}
