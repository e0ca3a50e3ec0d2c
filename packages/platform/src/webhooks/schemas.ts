import { pageSchema } from '@idt/core';
import { z } from 'zod';

const Url = z
  .string({ error: 'Enter a URL.' })
  .trim()
  .min(1, 'Enter a URL.')
  .max(2000, 'Use at most 2000 characters.')
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'https:' || url.protocol === 'http:') && url.username === '' && url.password === '';
    } catch {
      return false;
    }
  }, 'Use an http(s) URL without credentials.');

const EventTypes = z
  .array(z.string({ error: 'An event type is text.' }).max(100), { error: 'eventTypes is a list.' })
  .max(50, 'Use at most 50 event types.')
  .transform((types) => [...new Set(types)].sort());

const OrganizationId = z
  .string({ error: 'organizationId is an organization id.' })
  .regex(/^[0-9a-fA-F-]{36}$/, 'Use an organization id.')
  .nullish()
  .transform((value) => (value ? value.toLowerCase() : null));

/** The body of `POST /v1/webhooks/endpoints`. */
export const EndpointInput = z.object({
  url: Url,
  description: z.string({ error: 'A description is text.' }).trim().max(500, 'Use at most 500 characters.').default(''),
  eventTypes: EventTypes.default([]).describe('Empty: every event type.'),
  organizationId: OrganizationId.describe('Only events of this organization.'),
  enabled: z.boolean({ error: 'enabled is true or false.' }).default(true),
});

/** A validated endpoint. */
export type EndpointInput = z.output<typeof EndpointInput>;

/** The body of `PATCH /v1/webhooks/endpoints/{id}`: the fields to change. */
export const EndpointPatch = z.object({
  url: Url.optional(),
  description: z.string({ error: 'A description is text.' }).trim().max(500, 'Use at most 500 characters.').optional(),
  eventTypes: EventTypes.optional(),
  organizationId: z
    .string()
    .regex(/^[0-9a-fA-F-]{36}$/, 'Use an organization id.')
    .nullable()
    .optional()
    .transform((value) => (typeof value === 'string' ? value.toLowerCase() : value)),
  enabled: z.boolean({ error: 'enabled is true or false.' }).optional(),
});

/** A validated patch. */
export type EndpointPatch = z.output<typeof EndpointPatch>;

/** The body of `POST /v1/webhooks/endpoints/{id}/rotate-secret`. */
export const RotateSecretInput = z
  .object({
    graceSeconds: z
      .number({ error: 'graceSeconds is a number.' })
      .int('Use a whole number.')
      .min(0, 'Use 0 to 604800.')
      .max(604_800, 'Use 0 to 604800.')
      .default(86_400),
  })
  .default({ graceSeconds: 86_400 });

const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });

/** An endpoint as the API answers it (never its secret). */
export const EndpointResponse = z.object({
  id: z.string().meta({ format: 'uuid' }),
  url: z.string(),
  description: z.string(),
  eventTypes: z.array(z.string()),
  organizationId: z.string().nullable(),
  enabled: z.boolean(),
  disabledReason: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
  lastSuccessAt: timestamp.nullable(),
  failureStreakSince: timestamp.nullable(),
});

/** An endpoint response. */
export type EndpointResponse = z.output<typeof EndpointResponse>;

/** `POST /v1/webhooks/endpoints`: the endpoint and its secret, shown this once. */
export const EndpointCreated = z.object({ endpoint: EndpointResponse, secret: z.string().describe('`whsec_…`, shown once') });

/** One delivery attempt. */
export const DeliveryAttemptResponse = z.object({
  id: z.string(),
  messageId: z.string(),
  eventType: z.string(),
  attempt: z.number().int(),
  status: z.enum(['pending', 'succeeded', 'failed']).describe('pending: failed, and another attempt is scheduled'),
  responseStatus: z.number().int().nullable(),
  durationMs: z.number().int(),
  error: z.string().nullable(),
  createdAt: timestamp,
  nextAttemptAt: timestamp.nullable(),
});

/** A delivery attempt response. */
export type DeliveryAttemptResponse = z.output<typeof DeliveryAttemptResponse>;

/** A page of delivery attempts. */
export const DeliveryAttemptPage = pageSchema(DeliveryAttemptResponse);

/** The query of the delivery log. */
export const DeliveriesQuery = z.object({
  status: z.enum(['pending', 'succeeded', 'failed']).optional(),
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.coerce
    .number()
    .int()
    .min(1)
    .default(20)
    .transform((value) => Math.min(value, 100)),
});
