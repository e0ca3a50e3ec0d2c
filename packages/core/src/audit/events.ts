import { z } from 'zod';
import { defineEvent } from '../events/types.js';
import { AUDIT_ACTOR_TYPES, AUDIT_OUTCOMES } from './entry.js';

const Party = z.object({ type: z.string(), id: z.string().nullable(), display: z.string().nullable() });

/** The payload of {@link AuditEventRecorded}: the record as the API shows it, without its hashes. */
export const AuditEventPayload = z.object({
  id: z.string(),
  sequence: z.number().int(),
  occurredAt: z.string(),
  organizationId: z.string().nullable(),
  actor: Party.extend({ type: z.enum(AUDIT_ACTOR_TYPES) }),
  action: z.string(),
  target: Party.nullable(),
  outcome: z.enum(AUDIT_OUTCOMES),
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
  traceId: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
});

/**
 * An audit record was written: published in the transaction of the change
 * it records (so it is delivered only if that change commits). Webhook
 * endpoints subscribe to it as `audit.event`; its `organizationId` routes it
 * to that organization's endpoints.
 */
export const AuditEventRecorded = defineEvent({
  type: 'AuditEventRecordedEvent',
  module: 'core',
  description: 'An audit record was written (delivered to webhook endpoints as `audit.event`).',
  schema: AuditEventPayload,
});
