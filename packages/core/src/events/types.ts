import type { Knex } from 'knex';
import type { z } from 'zod';

/**
 * An integration event type: past-tense name, the module that publishes it
 * and the schema of its payload (primitives only).
 */
export interface EventDefinition<T extends Record<string, unknown> = Record<string, unknown>> {
  /** The event name, past tense, e.g. `UserSessionEvictedEvent`. */
  readonly type: string;
  /** The publishing module, e.g. `identity`. */
  readonly module: string;
  readonly description: string;
  /** The payload schema; used to validate at write time and to document the event. */
  readonly schema: z.ZodType<T>;
}

/**
 * Declares an event type.
 *
 * @example
 * export const UserSessionEvicted = defineEvent({
 *   type: 'UserSessionEvictedEvent',
 *   module: 'identity',
 *   description: 'A login pushed the user past the concurrent session limit; the oldest session was revoked.',
 *   schema: z.object({ userId: z.string(), sessionId: z.string() }),
 * });
 */
export function defineEvent<T extends Record<string, unknown>>(definition: EventDefinition<T>): EventDefinition<T> {
  return definition;
}

/** A stored event as handlers receive it. */
export interface EventEnvelope<T extends Record<string, unknown> = Record<string, unknown>> {
  readonly id: string;
  readonly type: string;
  readonly payload: T;
  /** ISO 8601 UTC. */
  readonly occurredAt: string;
  /** 1 on the first delivery to this handler, then 2, 3… on retries. */
  readonly attempt: number;
}

/** A subscriber: one named, idempotent reaction of one module to one event type. */
export interface EventHandlerDefinition<T extends Record<string, unknown> = Record<string, unknown>> {
  /** Unique across the process, e.g. `notifications.mail-email-change-confirmation`. */
  readonly name: string;
  /** The consuming module, e.g. `notifications`. */
  readonly module: string;
  readonly event: EventDefinition<T>;
  readonly description?: string;
  /** Throwing schedules a retry with backoff. */
  handle(envelope: EventEnvelope<T>): Promise<void>;
}

/**
 * Declares a handler.
 *
 * @example
 * bus.subscribe(defineEventHandler({ name: 'oidc.revoke-evicted-session', module: 'oidc', event: UserSessionEvicted, handle: async ({ payload }) => … }));
 */
export function defineEventHandler<T extends Record<string, unknown>>(
  definition: EventHandlerDefinition<T>,
): EventHandlerDefinition<T> {
  return definition;
}

/** An event to write: its definition and its payload. */
export interface PendingEvent<T extends Record<string, unknown> = any> {
  readonly event: EventDefinition<T>;
  readonly payload: T;
}

/**
 * Writes events in the caller's transaction (the durable outbox). They are
 * dispatched to handlers after that transaction commits; if it rolls back,
 * they never existed.
 */
export interface EventOutbox {
  write(trx: Knex.Transaction, events: ReadonlyArray<PendingEvent>): Promise<void>;
}

/** What the development event catalog shows: every event with its publisher and consumers. */
export interface EventCatalog {
  readonly events: ReadonlyArray<EventDefinition>;
  readonly handlers: ReadonlyArray<Pick<EventHandlerDefinition, 'name' | 'module' | 'description'> & { readonly event: string }>;
}
