import { hostname } from 'node:os';
import type { Knex } from 'knex';
import type { z } from 'zod';
import { type Clock, systemClock } from '../clock.js';
import { dialectOf, toIso } from '../db/database.js';
import { OUTBOX_DELIVERIES_TABLE, OUTBOX_EVENTS_TABLE } from '../db/migrations/0001-outbox.js';
import {
  type ListStatement,
  listStatement,
  MAX_LIST_ITEMS,
  runListStatement,
  runStatement,
  type StatementBinding,
  selectListRows,
} from '../db/statements.js';
import { newId, randomToken } from '../ids.js';
import { type Logger, silentLogger } from '../logger.js';
import type { EventCatalog, EventDefinition, EventEnvelope, EventHandlerDefinition, EventOutbox, PendingEvent } from './types.js';

type Payload = Record<string, unknown>;

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

/** Thrown by {@link EventOutbox.write} when a payload does not match its event's schema. */
export class EventPayloadError extends Error {
  /** The event type whose payload was refused. */
  readonly eventType: string;
  /** The schema's findings. */
  readonly issues: readonly z.core.$ZodIssue[];
  constructor(eventType: string, error: z.ZodError) {
    const summary = error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
      .join('; ');
    super(`Invalid payload for event ${eventType}: ${summary}`, { cause: error });
    this.name = 'EventPayloadError';
    this.eventType = eventType;
    this.issues = error.issues;
  }
}

/** Thrown into a delivery's outcome when its handler runs past `handlerTimeoutMs`. */
class HandlerTimeoutError extends Error {
  constructor(handler: string, ms: number) {
    super(`Event handler ${handler} did not finish within ${ms} ms`);
    this.name = 'HandlerTimeoutError';
  }
}

interface ClaimedDelivery {
  id: string;
  event_id: string;
  handler: string;
  attempts: number;
}

interface EventRow {
  id: string;
  type: string;
  payload: string;
  occurred_at: unknown;
}

const EVENT_COLUMNS = ['id', 'type', 'payload', 'occurred_at'] as const;
const DELIVERY_COLUMNS = [
  'id',
  'event_id',
  'handler',
  'status',
  'attempts',
  'next_attempt_at',
  'claimed_by',
  'claimed_until',
] as const;

/** The multi-row insert of `columns` into `table`, written once per row count (see `listStatement`). */
function insertStatement(table: string, columns: readonly string[]): ListStatement {
  return listStatement((rows) => `insert into ${table} (${columns.join(', ')}) values ${rows}`, {
    kind: 'values',
    item: `(${columns.map(() => '?').join(', ')})`,
  });
}
const INSERT_EVENTS = insertStatement(OUTBOX_EVENTS_TABLE, EVENT_COLUMNS);
const INSERT_DELIVERIES = insertStatement(OUTBOX_DELIVERIES_TABLE, DELIVERY_COLUMNS);

/** Most events, and deliveries, that PostgreSQL inserts in one statement (beyond them: a statement per table). */
const MAX_EVENTS_TOGETHER = 4;
const MAX_DELIVERIES_TOGETHER = 16;
const insertTogether = new Map<number, string>();

/**
 * PostgreSQL: the insert of `events` events and `deliveries` deliveries as
 * one statement (a data-modifying `with`: one round trip where two tables
 * took two), written once per pair of counts; `undefined` past
 * {@link MAX_EVENTS_TOGETHER} or {@link MAX_DELIVERIES_TOGETHER}, or
 * without deliveries. Bindings: every event's columns, then every
 * delivery's. The foreign key of the deliveries is checked at the end of the
 * statement, when the events are there.
 */
function insertTogetherSql(events: number, deliveries: number): string | undefined {
  if (events < 1 || events > MAX_EVENTS_TOGETHER || deliveries < 1 || deliveries > MAX_DELIVERIES_TOGETHER) return undefined;
  const key = events * (MAX_DELIVERIES_TOGETHER + 1) + deliveries;
  let sql = insertTogether.get(key);
  if (sql === undefined) {
    sql = `with written as (${INSERT_EVENTS.sql(events)}) ${INSERT_DELIVERIES.sql(deliveries)}`;
    insertTogether.set(key, sql);
  }
  return sql;
}

/** Marks claimed deliveries delivered while the claim is still ours (bindings: time, instance, then id and attempts of each). */
const MARK_DELIVERED = listStatement(
  (pairs) =>
    `update ${OUTBOX_DELIVERIES_TABLE} set status = 'delivered', delivered_at = ?, claimed_by = null, claimed_until = null, ` +
    `last_error = null where claimed_by = ? and (id, attempts) in (${pairs}) returning id`,
  { kind: 'in', item: '(?, ?)' },
);

/** The bound values of `rows` for an insert of `columns`: each row's, in column order, one row after the other. */
function rowValues<Column extends string>(
  columns: readonly Column[],
  rows: ReadonlyArray<Record<Column, StatementBinding>>,
): StatementBinding[] {
  return rows.flatMap((row) => columns.map((column) => row[column]));
}

/** Inserts `rows` (`columns` of each, in order) with `statement`, written for them by {@link insertStatement}. */
async function insertRows<Column extends string>(
  trx: Knex.Transaction,
  statement: ListStatement,
  columns: readonly Column[],
  rows: ReadonlyArray<Record<Column, StatementBinding>>,
): Promise<void> {
  await runListStatement(trx, statement, [], rowValues(columns, rows));
}

/** Deliveries marked delivered per statement (two bound values each): as many as one list statement binds. */
const MARK_CHUNK = MAX_LIST_ITEMS;
/** How long a successful delivery waits for others still running by default (`markWaitMs`), in milliseconds. */
const MARK_WAIT_MS = 20;
const MAX_ERROR_LENGTH = 4000;
const MAX_NAME_LENGTH = 200;

function positive(name: string, value: number | undefined, fallback: number, { integer = false } = {}): number {
  const result = value ?? fallback;
  if (!Number.isFinite(result) || result <= 0 || (integer && !Number.isInteger(result))) {
    throw new RangeError(`createEventBus: ${name} must be a positive ${integer ? 'integer' : 'number'}, got ${String(value)}`);
  }
  return result;
}

function describeError(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

function checkName(kind: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    throw new TypeError(
      `${kind} must be a non-empty string of at most ${MAX_NAME_LENGTH} characters, got ${JSON.stringify(value)}`,
    );
  }
}

/**
 * Creates the event bus of one process over the outbox tables.
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

  const events = new Map<string, EventDefinition>();
  const handlers = new Map<string, EventHandlerDefinition>();
  const hooked = new WeakSet<object>();
  /** Deliveries written already claimed by this dispatcher, per outermost transaction, run once it commits. */
  const preclaimed = new WeakMap<object, { deliveries: ClaimedDelivery[]; rows: Map<string, EventRow> }>();
  /** Pre-claimed deliveries running now; `stop()` waits for them. */
  const direct = new Set<Promise<number>>();

  let running = false;
  let halting = false;
  let timer: NodeJS.Timeout | undefined;
  let active: Promise<number> | undefined;
  let followUp: Promise<number> | undefined;

  function register<T extends Payload>(event: EventDefinition<T>): void {
    checkName('An event type', event.type);
    const known = events.get(event.type);
    if (known === undefined) {
      events.set(event.type, event as unknown as EventDefinition);
    } else if (known !== (event as unknown as EventDefinition)) {
      throw new Error(`Event type ${event.type} is already registered by another definition (module ${known.module})`);
    }
  }

  function subscribe<T extends Payload>(handler: EventHandlerDefinition<T>): void {
    checkName('An event handler name', handler.name);
    if (handlers.has(handler.name)) throw new Error(`An event handler named ${handler.name} is already subscribed`);
    if (typeof handler.handle !== 'function') throw new TypeError(`Event handler ${handler.name} has no handle function`);
    register(handler.event);
    handlers.set(handler.name, handler as unknown as EventHandlerDefinition);
  }

  function subscribersOf(type: string): string[] {
    const names: string[] = [];
    for (const handler of handlers.values()) if (handler.event.type === type) names.push(handler.name);
    return names;
  }

  /** The outermost transaction of `trx`, and the promise that settles when it commits or rolls back (when knex has one). */
  function outermostOf(trx: Knex.Transaction): { outermost: Knex.Transaction; settled: Promise<unknown> | undefined } {
    let outermost = trx;
    while (outermost.parentTransaction) outermost = outermost.parentTransaction;
    const settled = (outermost as { executionPromise?: Promise<unknown> }).executionPromise;
    return { outermost, settled: settled && typeof settled.then === 'function' ? settled : undefined };
  }

  /** Runs a dispatch once the outermost transaction settles (committed or not: a dispatch only sees committed rows). */
  function dispatchAfterCommit(trx: Knex.Transaction): void {
    const { outermost, settled } = outermostOf(trx);
    if (hooked.has(outermost)) return;
    hooked.add(outermost);
    if (!settled) return; // the poller picks the events up
    const kick = () => {
      if (!running) return;
      dispatchDue().catch((error: unknown) => logger.error('event dispatch after commit failed', { error }));
    };
    settled.then(kick, kick);
  }

  async function write(trx: Knex.Transaction, pending: ReadonlyArray<PendingEvent>): Promise<void> {
    if (trx?.isTransaction !== true) {
      throw new TypeError('EventOutbox.write needs the knex transaction of the change that caused the events');
    }
    if (trx.isCompleted()) throw new Error('EventOutbox.write was given a transaction that already completed');
    if (pending.length === 0) return;
    const now = clock.now();
    const occurredAt = now.toISOString();
    // A running dispatcher claims the deliveries as it writes them (its lease starts now) and runs them once
    // the transaction commits: no claim statement and no read of the events afterwards. Should the process
    // die first, any dispatcher takes them over when the lease runs out, as after a crash mid-delivery.
    const claimNow = running && !halting;
    const claimedUntil = claimNow ? new Date(now.getTime() + leaseMs).toISOString() : null;
    const eventRows: Array<EventRow & { occurred_at: string }> = [];
    const deliveryRows: Array<Record<(typeof DELIVERY_COLUMNS)[number], StatementBinding>> = [];
    for (const { event, payload } of pending) {
      register(event);
      const parsed = event.schema.safeParse(payload);
      if (!parsed.success) throw new EventPayloadError(event.type, parsed.error);
      const id = newId();
      eventRows.push({ id, type: event.type, payload: JSON.stringify(parsed.data), occurred_at: occurredAt });
      for (const handler of subscribersOf(event.type)) {
        deliveryRows.push({
          id: newId(),
          event_id: id,
          handler,
          status: 'pending',
          attempts: claimNow ? 1 : 0,
          next_attempt_at: occurredAt,
          claimed_by: claimNow ? instanceId : null,
          claimed_until: claimedUntil,
        });
      }
    }
    const together = postgres ? insertTogetherSql(eventRows.length, deliveryRows.length) : undefined;
    if (together) {
      await runStatement(trx, together, [...rowValues(EVENT_COLUMNS, eventRows), ...rowValues(DELIVERY_COLUMNS, deliveryRows)]);
    } else {
      await insertRows(trx, INSERT_EVENTS, EVENT_COLUMNS, eventRows);
      await insertRows(trx, INSERT_DELIVERIES, DELIVERY_COLUMNS, deliveryRows);
    }
    if (deliveryRows.length === 0) return;
    if (!claimNow) {
      dispatchAfterCommit(trx);
      return;
    }
    const batch = claimedAfterCommit(trx);
    if (!batch) return; // no commit to wait for: the lease runs out and the poller takes them over
    for (const row of eventRows) batch.rows.set(row.id, row);
    for (const row of deliveryRows) {
      batch.deliveries.push({ id: String(row.id), event_id: String(row.event_id), handler: String(row.handler), attempts: 1 });
    }
  }

  /**
   * The batch of pre-claimed deliveries of `trx`'s outermost transaction,
   * run once it commits (and dropped if it rolls back: the rows are gone).
   */
  function claimedAfterCommit(trx: Knex.Transaction) {
    const { outermost, settled } = outermostOf(trx);
    const known = preclaimed.get(outermost);
    if (known) return known;
    if (!settled) return undefined;
    const batch = { deliveries: [] as ClaimedDelivery[], rows: new Map<string, EventRow>() };
    preclaimed.set(outermost, batch);
    settled.then(
      () => {
        // A dispatcher stopped meanwhile leaves them to whichever takes them over when the lease runs out.
        if (!running) return;
        const run = runClaimed(batch.deliveries, batch.rows);
        direct.add(run);
        void run.finally(() => direct.delete(run));
      },
      () => undefined,
    );
    return batch;
  }

  /** Runs claimed deliveries; resolves once their successes are recorded and never rejects. Returns how many it ran. */
  async function runClaimed(claimed: ReadonlyArray<ClaimedDelivery>, rows: ReadonlyMap<string, EventRow>): Promise<number> {
    const recorded: Array<Promise<void>> = [];
    await Promise.all(
      claimed.map(async (delivery) => {
        successes.started();
        let delivered: ClaimedDelivery | undefined;
        try {
          delivered = await deliver(delivery, rows.get(delivery.event_id));
        } finally {
          successes.ended();
        }
        if (delivered) recorded.push(successes.record(delivered));
      }),
    );
    await Promise.all(recorded);
    return claimed.length;
  }

  /** Atomically claims up to `batchSize` due deliveries of the handlers this bus has. */
  async function claim(): Promise<ClaimedDelivery[]> {
    const names = [...handlers.keys()];
    if (names.length === 0) return [];
    const now = clock.now();
    const nowIso = now.toISOString();
    const due = db(OUTBOX_DELIVERIES_TABLE)
      .select('id')
      .where('status', 'pending')
      .where('next_attempt_at', '<=', nowIso)
      .where((q) => q.whereNull('claimed_until').orWhere('claimed_until', '<=', nowIso))
      .whereIn('handler', names)
      .orderBy([{ column: 'next_attempt_at' }, { column: 'id' }])
      .limit(batchSize);
    // Postgres: rows another dispatcher is claiming right now are skipped, and
    // a row claimed meanwhile fails the re-checked predicate. SQLite runs the
    // single statement under its write lock.
    if (postgres) due.forUpdate().skipLocked();
    const rows: Array<Record<string, unknown>> = await db(OUTBOX_DELIVERIES_TABLE)
      .whereIn('id', due)
      .update({
        claimed_by: instanceId,
        claimed_until: new Date(now.getTime() + leaseMs).toISOString(),
        attempts: db.raw('?? + 1', ['attempts']),
      })
      .returning(['id', 'event_id', 'handler', 'attempts']);
    return rows.map((row) => ({
      id: String(row.id),
      event_id: String(row.event_id),
      handler: String(row.handler),
      attempts: Number(row.attempts),
    }));
  }

  function withTimeout(work: Promise<void>, handler: string): Promise<void> {
    let timeout: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timeout = setTimeout(() => reject(new HandlerTimeoutError(handler, handlerTimeoutMs)), handlerTimeoutMs);
      timeout.unref();
    });
    return Promise.race([work, expired]).finally(() => clearTimeout(timeout));
  }

  /**
   * Runs one claimed delivery; never rejects. A failure is recorded here (a
   * retry or dead); a success is returned, for {@link successRecorder} to
   * record together with the others that finished meanwhile.
   */
  async function deliver(delivery: ClaimedDelivery, row: EventRow | undefined): Promise<ClaimedDelivery | undefined> {
    const fields = { deliveryId: delivery.id, eventId: delivery.event_id, handler: delivery.handler, attempt: delivery.attempts };
    let failure: { error: unknown } | undefined;
    try {
      const handler = handlers.get(delivery.handler);
      if (!handler) throw new Error(`No handler named ${delivery.handler} is subscribed`);
      if (!row) throw new Error(`Event ${delivery.event_id} is missing from ${OUTBOX_EVENTS_TABLE}`);
      const envelope: EventEnvelope = {
        id: row.id,
        type: row.type,
        payload: JSON.parse(row.payload) as Payload,
        occurredAt: toIso(row.occurred_at),
        attempt: delivery.attempts,
      };
      await withTimeout(
        Promise.resolve().then(() => handler.handle(envelope)),
        delivery.handler,
      );
    } catch (error) {
      failure = { error };
    }
    if (!failure) return delivery;
    try {
      const now = clock.now();
      // The claim is ours while claimed_by and attempts are unchanged; a
      // dispatcher that took over after our lease expired bumped attempts.
      const owned = db(OUTBOX_DELIVERIES_TABLE).where({ id: delivery.id, claimed_by: instanceId, attempts: delivery.attempts });
      let updated: number;
      if (delivery.attempts >= maxAttempts) {
        updated = await owned.update({
          status: 'dead',
          claimed_by: null,
          claimed_until: null,
          last_error: describeError(failure.error),
        });
        logger.error('event delivery failed for the last time; it is now dead', { ...fields, error: failure.error });
      } else {
        const delay = Math.min(retryBaseMs * 2 ** (delivery.attempts - 1), retryMaxMs);
        const nextAttemptAt = new Date(now.getTime() + delay).toISOString();
        updated = await owned.update({
          next_attempt_at: nextAttemptAt,
          claimed_by: null,
          claimed_until: null,
          last_error: describeError(failure.error),
        });
        logger.warn('event handler failed; will retry', { ...fields, nextAttemptAt, error: failure.error });
      }
      if (updated === 0) {
        logger.warn('event delivery outlived its lease and was claimed again; its outcome was not recorded', fields);
      }
    } catch (error) {
      logger.error('could not record the outcome of an event delivery; it is retried once its lease expires', {
        ...fields,
        error,
      });
    }
    return undefined;
  }

  /** Marks one chunk of claimed deliveries delivered, each only while the claim is still ours; answers the ids it marked. */
  async function markChunkDelivered(chunk: ReadonlyArray<ClaimedDelivery>): Promise<string[]> {
    const pairs = chunk.flatMap((delivery) => [delivery.id, delivery.attempts]);
    const rows = await selectListRows(db, MARK_DELIVERED, [clock.now().toISOString(), instanceId], pairs);
    return rows.map((row) => String(row[0]));
  }

  /**
   * Records the successful deliveries of a batch in one statement per
   * {@link MARK_CHUNK}: each row only while the claim is still ours (same
   * `claimed_by` and `attempts`; a dispatcher that took a delivery over after
   * our lease expired bumped its attempts). Never rejects.
   */
  async function markDelivered(done: ReadonlyArray<ClaimedDelivery>): Promise<void> {
    for (let i = 0; i < done.length; i += MARK_CHUNK) {
      const chunk = done.slice(i, i + MARK_CHUNK);
      try {
        const updated = await markChunkDelivered(chunk);
        if (updated.length === chunk.length) continue;
        const recorded = new Set(updated);
        for (const delivery of chunk) {
          if (recorded.has(delivery.id)) continue;
          logger.warn('event delivery outlived its lease and was claimed again; its outcome was not recorded', {
            deliveryId: delivery.id,
            eventId: delivery.event_id,
            handler: delivery.handler,
            attempt: delivery.attempts,
          });
        }
      } catch (error) {
        logger.error('could not record the outcome of event deliveries; they are retried once their lease expires', {
          deliveryIds: chunk.map((delivery) => delivery.id),
          error,
        });
      }
    }
  }

  /**
   * Records the successful deliveries of every batch of this bus, in as few
   * statements as they allow: a success waits for the other deliveries
   * running in this process to finish too, at most `markWaitMs`
   * (one turn of the event loop when none is running), and those finishing
   * while a statement runs go together in the next. The deliveries one
   * event causes (a handler that writes events of its own) and those of
   * concurrent requests are marked together, and a slow handler delays the
   * marks of the others by that wait at most, well within their lease.
   */
  function successRecorder() {
    let queued: ClaimedDelivery[] = [];
    /** Settles once the queued successes are recorded. */
    let queuedRecorded: { promise: Promise<void>; resolve(): void } | undefined;
    let flushing = false;
    let timer: NodeJS.Timeout | undefined;
    let immediate: NodeJS.Immediate | undefined;
    /** Deliveries of this bus running now. */
    let running = 0;

    function flush(): void {
      clearTimeout(timer);
      clearImmediate(immediate);
      timer = undefined;
      immediate = undefined;
      const batch = queued;
      const recorded = queuedRecorded;
      queued = [];
      queuedRecorded = undefined;
      flushing = true;
      void markDelivered(batch).finally(() => {
        flushing = false;
        recorded?.resolve();
        flushSoon();
      });
    }

    /** Flushes once nothing else is running (next turn of the loop), or after `markWaitMs`. */
    function flushSoon(): void {
      if (flushing || queued.length === 0) return;
      if (running > 0) {
        timer ??= setTimeout(flush, markWaitMs);
        return;
      }
      // Deliveries that start within this turn (those of events a handler just committed) are waited for too.
      immediate ??= setImmediate(() => {
        immediate = undefined;
        if (running > 0) flushSoon();
        else flush();
      });
    }

    return {
      started(): void {
        running++;
      },
      ended(): void {
        running--;
        flushSoon();
      },
      /** Queues a success; resolves once it is recorded (or its recording failed and was logged). */
      record(delivery: ClaimedDelivery): Promise<void> {
        queued.push(delivery);
        if (!queuedRecorded) {
          let resolve!: () => void;
          const promise = new Promise<void>((done) => {
            resolve = done;
          });
          queuedRecorded = { promise, resolve };
        }
        const { promise } = queuedRecorded;
        flushSoon();
        return promise;
      },
    };
  }
  const successes = successRecorder();

  async function drain(): Promise<number> {
    let processed = 0;
    for (;;) {
      const claimed = await claim();
      if (claimed.length === 0) break;
      const eventIds = [...new Set(claimed.map((delivery) => delivery.event_id))];
      const rows: EventRow[] = await db(OUTBOX_EVENTS_TABLE)
        .whereIn('id', eventIds)
        .select('id', 'type', 'payload', 'occurred_at');
      await runClaimed(claimed, new Map(rows.map((row) => [row.id, row])));
      processed += claimed.length;
      if (claimed.length < batchSize || halting) break;
    }
    return processed;
  }

  /**
   * Waits for the deliveries this bus claimed at write time and is running
   * (those of transactions committed before the call), then claims and runs
   * what is due; resolves to how many deliveries both processed.
   */
  function dispatchPending(): Promise<number> {
    if (direct.size === 0) return dispatchDue();
    return Promise.all([...direct]).then(async (counts) => counts.reduce((sum, count) => sum + count, 0) + (await dispatchDue()));
  }

  function dispatchDue(): Promise<number> {
    if (!active) {
      const run = drain().finally(() => {
        if (active === run) active = undefined;
      });
      active = run;
      return run;
    }
    followUp ??= active.then(
      () => {
        followUp = undefined;
        return dispatchDue();
      },
      () => {
        followUp = undefined;
        return dispatchDue();
      },
    );
    return followUp;
  }

  function schedule(delay: number): void {
    if (!running) return;
    timer = setTimeout(poll, delay);
    timer.unref();
  }

  async function poll(): Promise<void> {
    timer = undefined;
    if (!running) return;
    try {
      await dispatchDue();
    } catch (error) {
      logger.error('event dispatch failed; retrying at the next poll', { error });
    }
    schedule(pollIntervalMs);
  }

  return {
    instanceId,
    register,
    subscribe,
    write,
    dispatchPending,
    start() {
      if (running) return;
      running = true;
      schedule(0);
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      halting = true;
      try {
        while (active || followUp || direct.size > 0) {
          if (active || followUp) await (followUp ?? active)?.catch(() => undefined);
          else await Promise.all(direct);
        }
      } finally {
        halting = false;
      }
    },
    catalog() {
      return {
        events: [...events.values()],
        handlers: [...handlers.values()].map((handler) => ({
          name: handler.name,
          module: handler.module,
          event: handler.event.type,
          ...(handler.description !== undefined ? { description: handler.description } : {}),
        })),
      };
    },
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
