import { hostname } from 'node:os';
import type { Knex } from 'knex';
import { type Clock, systemClock } from '../clock.js';
import { dialectOf } from '../db/database.js';
import { OUTBOX_DELIVERIES_TABLE, OUTBOX_EVENTS_TABLE } from '../db/migrations/0001-outbox.js';
import { randomToken } from '../ids.js';
import { type Logger, silentLogger } from '../logger.js';
import { createCommitHooks } from './commit-hooks.js';
import { createDeliveryRunner } from './delivery-runner.js';
import { createDispatcher } from './dispatcher.js';
import { createOutboxClaimer } from './outbox-claimer.js';
import type { Payload } from './outbox-rows.js';
import { createOutboxWriter } from './outbox-writer.js';
import { checkName, createEventRegistry } from './registry.js';
import type { EventCatalog, EventDefinition, EventHandlerDefinition, EventOutbox } from './types.js';

export { EventPayloadError } from './outbox-writer.js';

/** Options of {@link createEventBus}. */
export interface EventBusOptions {
  /** The database holding `core_outbox_events` and `core_outbox_deliveries` (migrated by `coreMigrations`). */
  readonly db: Knex;
  /** Where retries (warn) and dead deliveries (error) are logged; silent by default. */
  readonly logger?: Logger;
  /** The source of time for occurrence, lease and retry timestamps; the wall clock by default. */
  readonly clock?: Clock;
  /**
   * Identifies this dispatcher in `claimed_by`; unique per process by default
   * (`host/pid/random`). Two live buses must never share one.
   */
  readonly instanceId?: string;
  /**
   * How long a claim lasts, in milliseconds (30 000 by default). A delivery
   * whose dispatcher died becomes claimable again when its lease expires, so
   * keep it above the longest expected handler run.
   */
  readonly leaseMs?: number;
  /** Milliseconds between polls once {@link EventBus.start} was called (1 000 by default). */
  readonly pollIntervalMs?: number;
  /** Deliveries claimed (and run concurrently) at once (50 by default). */
  readonly batchSize?: number;
  /** Attempts before a delivery is marked `dead` (10 by default). */
  readonly maxAttempts?: number;
  /** The first retry delay in milliseconds, doubled on every further failure (1 000 by default). */
  readonly retryBaseMs?: number;
  /** The longest retry delay in milliseconds (300 000, five minutes, by default). */
  readonly retryMaxMs?: number;
  /**
   * How long a handler may run before its attempt counts as failed, in
   * milliseconds; {@link leaseMs} by default, since another dispatcher may
   * claim the delivery after that anyway. The timed-out handler is not
   * cancelled (handlers must be idempotent).
   */
  readonly handlerTimeoutMs?: number;
  /**
   * How long a successful delivery may wait for the other deliveries running
   * in this process, to be marked delivered in the same statement as them,
   * in milliseconds (20 by default). Successes that find nothing else
   * running are marked at the next turn of the event loop.
   */
  readonly markWaitMs?: number;
}

/**
 * The in-process event bus over the durable outbox. Events written with
 * {@link EventOutbox.write} in a transaction are stored with one delivery per
 * subscribed handler; after the transaction commits, dispatchers claim due
 * deliveries under a lease, run the handlers and record the outcome.
 * Delivery is at least once (a handler that outlives its lease, or whose
 * outcome cannot be recorded, runs again) and unordered.
 *
 * A started bus claims the deliveries it writes (its lease starts at the
 * write) and runs them once the transaction commits, without claiming or
 * reading them again. If it stops first, they wait for the lease to run out
 * and are then claimed like any other delivery. A bus that is not started
 * writes them unclaimed.
 */
export interface EventBus extends EventOutbox {
  /** The id this bus claims deliveries under. */
  readonly instanceId: string;
  /**
   * Makes an event type known (for the catalog and validation). Writing or
   * subscribing registers it too.
   *
   * @throws Error when another definition already uses the same type.
   */
  register<T extends Payload>(event: EventDefinition<T>): void;
  /**
   * Subscribes a handler: events of its type written from now on get a
   * delivery for it. Deliveries are claimed only by buses that have a handler
   * of that name.
   *
   * @throws Error when a handler of the same name is already subscribed.
   */
  subscribe<T extends Payload>(handler: EventHandlerDefinition<T>): void;
  /** Starts polling for due deliveries (and dispatching right after commits). Idempotent; timers are unref'd. */
  start(): void;
  /** Stops polling and waits for the dispatch in progress, with its handlers, to finish (those run after a commit too). */
  stop(): Promise<void>;
  /**
   * Claims and delivers every delivery due now, batch after batch, after
   * waiting for the deliveries this bus claimed when it wrote them and is
   * still running. Concurrent calls (and the poller) coalesce: a call made
   * during a run waits for one follow-up run, so it sees everything
   * committed before it was made.
   *
   * @returns how many deliveries it processed (delivered, retried or dead), those it waited for included.
   */
  dispatchPending(): Promise<number>;
  /** Every registered event and subscribed handler. */
  catalog(): EventCatalog;
  /**
   * Deletes events older than `olderThanMs` milliseconds whose deliveries are
   * all `delivered` or `dead` (with their deliveries).
   *
   * @returns how many events were deleted.
   */
  prune(olderThanMs: number): Promise<number>;
}

/** How long a successful delivery waits for others still running by default (`markWaitMs`), in milliseconds. */
const MARK_WAIT_MS = 20;

function positive(name: string, value: number | undefined, fallback: number, { integer = false } = {}): number {
  const result = value ?? fallback;
  if (!Number.isFinite(result) || result <= 0 || (integer && !Number.isInteger(result))) {
    throw new RangeError(`createEventBus: ${name} must be a positive ${integer ? 'integer' : 'number'}, got ${String(value)}`);
  }
  return result;
}

/**
 * Creates the event bus of one process over the outbox tables. It composes
 * named pieces: the registry of event types and handlers
 * (`registry.ts`), the writer of outbox rows (`outbox-writer.ts`), the
 * claimer that leases due deliveries (`outbox-claimer.ts`), the runner of
 * handlers with retries, backoff and dead deliveries
 * (`delivery-runner.ts`, marking successes through `success-recorder.ts`),
 * the dispatch loop and poller (`dispatcher.ts`) and the hooks that run
 * deliveries once their transaction commits (`commit-hooks.ts`).
 *
 * @example
 * const bus = createEventBus({ db, logger });
 * bus.subscribe(defineEventHandler({ name: 'oidc.revoke-evicted-session', module: 'oidc', event: UserSessionEvicted, handle: async ({ payload }) => … }));
 * bus.start();
 * await db.transaction(async (trx) => {
 *   await trx('identity_sessions').where({ id }).update({ revoked_at: now });
 *   await bus.write(trx, [{ event: UserSessionEvicted, payload: { userId, sessionId: id } }]);
 * });
 * // after commit the handler runs; on shutdown:
 * await bus.stop();
 */
export function createEventBus(options: EventBusOptions): EventBus {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  const instanceId = options.instanceId ?? `${hostname()}/${process.pid}/${randomToken(6)}`;
  checkName('instanceId', instanceId);
  const leaseMs = positive('leaseMs', options.leaseMs, 30_000);
  const pollIntervalMs = positive('pollIntervalMs', options.pollIntervalMs, 1_000);
  const batchSize = positive('batchSize', options.batchSize, 50, { integer: true });
  const maxAttempts = positive('maxAttempts', options.maxAttempts, 10, { integer: true });
  const retryBaseMs = positive('retryBaseMs', options.retryBaseMs, 1_000);
  const retryMaxMs = positive('retryMaxMs', options.retryMaxMs, 300_000);
  const handlerTimeoutMs = positive('handlerTimeoutMs', options.handlerTimeoutMs, leaseMs);
  const markWaitMs = positive('markWaitMs', options.markWaitMs, MARK_WAIT_MS);
  const logger = (options.logger ?? silentLogger).child({ component: 'event-bus', instanceId });
  const postgres = dialectOf(db) === 'postgres';

  const registry = createEventRegistry();
  const writer = createOutboxWriter({ registry, clock, instanceId, leaseMs, postgres });
  const claimer = createOutboxClaimer({
    db,
    clock,
    instanceId,
    leaseMs,
    batchSize,
    postgres,
    handlerNames: registry.handlerNames,
  });
  const runner = createDeliveryRunner({
    db,
    clock,
    instanceId,
    logger,
    handlerOf: registry.handler,
    handlerTimeoutMs,
    maxAttempts,
    retryBaseMs,
    retryMaxMs,
    markWaitMs,
  });
  const dispatcher = createDispatcher({ claimer, runner, batchSize, pollIntervalMs, logger });
  const commits = createCommitHooks(dispatcher);

  return {
    instanceId,
    register: registry.register,
    subscribe: registry.subscribe,
    async write(trx, pending) {
      // A running dispatcher claims the deliveries as it writes them (its lease starts now) and runs them once
      // the transaction commits: no claim statement and no read of the events afterwards. Should the process
      // die first, any dispatcher takes them over when the lease runs out, as after a crash mid-delivery.
      const claimNow = dispatcher.isClaimingWrites();
      const written = await writer.write(trx, pending, claimNow);
      if (written.deliveries.length === 0) return;
      if (!claimNow) {
        commits.dispatchAfterCommit(trx);
        return;
      }
      const batch = commits.claimedAfterCommit(trx);
      if (!batch) return; // no commit to wait for: the lease runs out and the poller takes them over
      for (const row of written.events) batch.rows.set(row.id, row);
      batch.deliveries.push(...written.deliveries);
    },
    dispatchPending: dispatcher.dispatchPending,
    start: dispatcher.start,
    stop: dispatcher.stop,
    catalog: registry.catalog,
    async prune(olderThanMs) {
      if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
        throw new RangeError(`prune: olderThanMs must be a non-negative number, got ${String(olderThanMs)}`);
      }
      const cutoff = new Date(clock.now().getTime() - olderThanMs).toISOString();
      return db(OUTBOX_EVENTS_TABLE)
        .where('occurred_at', '<', cutoff)
        .whereNotExists(
          db(OUTBOX_DELIVERIES_TABLE)
            .select(db.raw('1'))
            .whereRaw('?? = ??', [`${OUTBOX_DELIVERIES_TABLE}.event_id`, `${OUTBOX_EVENTS_TABLE}.id`])
            .where('status', 'pending'),
        )
        .delete();
    },
  };
}
