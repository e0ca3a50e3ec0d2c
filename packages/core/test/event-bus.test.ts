import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createManualClock, type ManualClock } from '../src/clock.js';
import { defineEvent, defineEventHandler, type EventEnvelope } from '../src/events/types.js';
import { createLogger } from '../src/index.js';
import { coreMigrations, createDatabase, createEventBus, type EventBus, EventPayloadError, toIso } from '../src/knex.js';
import { ThingHappened } from './fixtures/outbox-events.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const hangingDispatcher = fileURLToPath(new URL('./fixtures/hanging-dispatcher.ts', import.meta.url));

const OtherHappened = defineEvent({
  type: 'OtherHappenedEvent',
  module: 'others',
  description: 'Something else happened.',
  schema: z.object({ id: z.string() }),
});

/**
 * A real pause, only for concurrency and real I/O (background delivery, interleaving of two
 * dispatchers); time rules (retries, leases) move the manual clock instead.
 */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A promise and the function that settles it, to hold a handler until the test lets it go. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

interface DeliveryRow {
  id: string;
  event_id: string;
  handler: string;
  status: string;
  attempts: number;
  next_attempt_at: unknown;
  claimed_by: string | null;
  claimed_until: unknown;
  delivered_at: unknown;
  last_error: string | null;
}

async function deliveries(db: Knex, handler?: string): Promise<DeliveryRow[]> {
  const query = db<DeliveryRow>('core_outbox_deliveries').orderBy('id');
  if (handler) query.where({ handler });
  const rows = (await query) as DeliveryRow[];
  return rows.map((row) => ({ ...row, attempts: Number(row.attempts) }));
}

/** A handler that records its envelopes and fails while `failures` is positive. */
function recorder(name: string, options: { failures?: number; event?: typeof ThingHappened } = {}) {
  const seen: EventEnvelope[] = [];
  let failures = options.failures ?? 0;
  const handler = defineEventHandler({
    name,
    module: 'tests',
    event: options.event ?? ThingHappened,
    description: `records ${name}`,
    handle: async (envelope) => {
      seen.push(envelope as EventEnvelope);
      if (failures > 0) {
        failures -= 1;
        throw new Error(`${name} failed on attempt ${envelope.attempt}`);
      }
    },
  });
  return { handler, seen };
}

describe.each(testDialects())('event bus on %s', (dialect) => {
  let database: TestDatabase;
  let clock: ManualClock;
  const cleanups: Array<() => Promise<void>> = [];

  beforeEach(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
    clock = createManualClock('2026-03-01T10:00:00.000Z');
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await database.destroy();
  });

  function bus(options: Partial<Parameters<typeof createEventBus>[0]> = {}): EventBus {
    const created = createEventBus({ db: database.db, clock, ...options });
    cleanups.push(() => created.stop());
    return created;
  }

  it('never delivers events of a transaction that rolled back', async () => {
    const events = bus();
    const { handler, seen } = recorder('tests.record');
    events.subscribe(handler);
    await expect(
      database.db.transaction(async (trx) => {
        await events.write(trx, [{ event: ThingHappened, payload: { thingId: 't1', n: 1 } }]);
        throw new Error('abort the change');
      }),
    ).rejects.toThrow('abort the change');
    const trx = await database.db.transaction();
    await events.write(trx, [{ event: ThingHappened, payload: { thingId: 't2', n: 2 } }]);
    await trx.rollback();

    expect(await events.dispatchPending()).toBe(0);
    expect(seen).toEqual([]);
    expect(Number((await database.db('core_outbox_events').count({ n: '*' }))[0]?.n)).toBe(0);
    expect(await deliveries(database.db)).toEqual([]);
  });

  it('writes events nobody handles, a few events, and many at once, each with its deliveries', async () => {
    const events = bus();
    const first = recorder('tests.first');
    const second = recorder('tests.second');
    events.subscribe(first.handler);
    events.subscribe(second.handler);
    // No handler of OtherHappened: the event row and no delivery.
    await database.db.transaction((trx) => events.write(trx, [{ event: OtherHappened, payload: { id: 'o1' } }]));
    // Three events (six deliveries), then twenty (forty): both sides of the fixed-statement threshold.
    for (const count of [3, 20]) {
      await database.db.transaction((trx) =>
        events.write(
          trx,
          Array.from({ length: count }, (_, n) => ({ event: ThingHappened, payload: { thingId: `t${count}-${n}`, n } })),
        ),
      );
    }
    expect(Number((await database.db('core_outbox_events').count({ n: '*' }))[0]?.n)).toBe(24);
    const rows = await deliveries(database.db);
    expect(rows).toHaveLength(46);
    expect(new Set(rows.map((row) => row.status))).toEqual(new Set(['pending']));
    expect(await events.dispatchPending()).toBe(46);
    expect(first.seen.map((envelope) => (envelope.payload as { thingId: string }).thingId).sort()).toEqual(
      [...Array.from({ length: 3 }, (_, n) => `t3-${n}`), ...Array.from({ length: 20 }, (_, n) => `t20-${n}`)].sort(),
    );
    expect(second.seen).toHaveLength(23);
    expect(new Set((await deliveries(database.db)).map((row) => row.status))).toEqual(new Set(['delivered']));
  });

  it('writes events and their deliveries in one statement on PostgreSQL, and two past a few events', async () => {
    const events = bus();
    for (const name of ['tests.one', 'tests.two', 'tests.three']) events.subscribe(recorder(name).handler);
    const statements: string[] = [];
    const capture = (query: { sql: string }) => statements.push(query.sql);
    const writes = () => statements.filter((sql) => /insert into core_outbox_(events|deliveries)/.test(sql));
    database.db.on('query', capture);
    try {
      await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 'a', n: 1 } }]));
      if (dialect === 'postgres') {
        expect(writes()).toHaveLength(1);
        expect(writes()[0]).toMatch(/^with written as \(insert into core_outbox_events .*\) insert into core_outbox_deliveries /);
      } else {
        // SQLite has no data-modifying `with`; its statements cost no round trip.
        expect(writes().filter((sql) => sql.startsWith('with'))).toEqual([]);
      }
      statements.length = 0;
      // Five events (fifteen deliveries): past the events one statement takes, each table has statements of its own.
      await database.db.transaction((trx) =>
        events.write(
          trx,
          Array.from({ length: 5 }, (_, n) => ({ event: ThingHappened, payload: { thingId: `b${n}`, n } })),
        ),
      );
      expect(writes().some((sql) => sql.startsWith('insert into core_outbox_events'))).toBe(true);
      expect(writes().some((sql) => sql.startsWith('insert into core_outbox_deliveries'))).toBe(true);
      expect(writes().filter((sql) => sql.startsWith('with'))).toEqual([]);
    } finally {
      database.db.off('query', capture);
    }
    expect(Number((await database.db('core_outbox_events').count({ n: '*' }))[0]?.n)).toBe(6);
    const rows = await deliveries(database.db);
    expect(rows).toHaveLength(18);
    // Every delivery names an event that exists (the foreign key held inside the one statement).
    const ids = new Set((await database.db('core_outbox_events').pluck('id')).map(String));
    expect(rows.every((row) => ids.has(row.event_id))).toBe(true);
    expect(new Set(rows.map((row) => row.status))).toEqual(new Set(['pending']));
    expect(await events.dispatchPending()).toBe(18);
  });

  it('delivers committed events after the commit, and not while the transaction is open', async () => {
    // A long poll interval: the delivery must come from the after-commit kick.
    const events = bus({ pollIntervalMs: 60_000 });
    const { handler, seen } = recorder('tests.record');
    events.subscribe(handler);
    events.start();
    await events.dispatchPending();

    const trx = await database.db.transaction();
    await events.write(trx, [{ event: ThingHappened, payload: { thingId: 't1', n: 1 } }]);
    // Real I/O: gives a (wrong) delivery before the commit time to reach the background dispatcher's handler.
    await sleep(200);
    expect(seen).toEqual([]);
    await trx.commit();

    await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 5000, interval: 10 });
    const [envelope] = seen;
    expect(envelope).toMatchObject({ type: 'ThingHappenedEvent', payload: { thingId: 't1', n: 1 }, attempt: 1 });
    expect(envelope?.occurredAt).toBe('2026-03-01T10:00:00.000Z');
    await vi.waitFor(async () => expect((await deliveries(database.db))[0]?.status).toBe('delivered'), { timeout: 5000 });
    const [row] = await deliveries(database.db);
    expect(row).toMatchObject({
      event_id: envelope?.id,
      handler: 'tests.record',
      attempts: 1,
      claimed_by: null,
      last_error: null,
    });
    expect(toIso(row?.delivered_at)).toBe('2026-03-01T10:00:00.000Z');
  });

  it('waits for the outermost commit when written in a nested transaction', async () => {
    const events = bus({ pollIntervalMs: 60_000 });
    const { handler, seen } = recorder('tests.record');
    events.subscribe(handler);
    events.start();
    await events.dispatchPending();

    const outer = await database.db.transaction();
    await outer.transaction(async (inner) => {
      await events.write(inner, [{ event: ThingHappened, payload: { thingId: 'nested', n: 1 } }]);
    });
    // Real I/O: gives a (wrong) delivery at the inner commit time to reach the background dispatcher's handler.
    await sleep(200);
    expect(seen).toEqual([]);
    await outer.commit();
    await vi.waitFor(() => expect(seen.map((e) => e.payload.thingId)).toEqual(['nested']), { timeout: 5000, interval: 10 });
  });

  it('a running dispatcher claims what it writes and delivers it after the commit without claiming or reading it again', async () => {
    const events = bus({ pollIntervalMs: 60_000, instanceId: 'writer' });
    const { handler, seen } = recorder('tests.record');
    events.subscribe(handler);
    events.start();
    // The poller's first look (a timer of 0 ms, queued before this one) is over before the statements are counted.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await events.dispatchPending();

    const statements: string[] = [];
    const capture = (query: { sql: string }) => statements.push(query.sql);
    database.db.on('query', capture);
    try {
      const trx = await database.db.transaction();
      await events.write(trx, [{ event: ThingHappened, payload: { thingId: 'direct', n: 1 } }]);
      // Written claimed: no other dispatcher takes it while the lease runs, even before the commit.
      const [claimed] = await trx<DeliveryRow>('core_outbox_deliveries').select('*');
      expect({ ...claimed, attempts: Number(claimed?.attempts) }).toMatchObject({
        status: 'pending',
        attempts: 1,
        claimed_by: 'writer',
      });
      expect(toIso(claimed?.claimed_until)).toBe('2026-03-01T10:00:30.000Z');
      await trx.commit();
      await vi.waitFor(async () => expect((await deliveries(database.db))[0]?.status).toBe('delivered'), { timeout: 5000 });
    } finally {
      database.db.off('query', capture);
    }
    expect(seen.map((envelope) => [envelope.payload.thingId, envelope.attempt])).toEqual([['direct', 1]]);
    expect((await deliveries(database.db))[0]).toMatchObject({ attempts: 1, claimed_by: null, last_error: null });
    // After the commit: the delivery's success, and neither a claim nor a read of the event.
    // (a claim is the update that adds an attempt)
    expect(statements.filter((sql) => /core_outbox_deliveries/.test(sql) && /attempts[`"]?\s*\+\s*1/i.test(sql))).toEqual([]);
    expect(statements.filter((sql) => /^\s*select[\s\S]*core_outbox_events/i.test(sql))).toEqual([]);
  });

  it('leaves what a dispatcher claimed at write time to another once its lease runs out, when it stopped before the commit', async () => {
    const writer = bus({ instanceId: 'writer', leaseMs: 1000, pollIntervalMs: 60_000 });
    const stranded = recorder('tests.record');
    writer.subscribe(stranded.handler);
    writer.start();
    const other = bus({ instanceId: 'other', leaseMs: 1000 });
    const takeover = recorder('tests.record');
    other.subscribe(takeover.handler);

    const trx = await database.db.transaction();
    await writer.write(trx, [{ event: ThingHappened, payload: { thingId: 'stranded', n: 1 } }]);
    await writer.stop(); // as if the process went away between its write and the commit
    await trx.commit();
    expect(await other.dispatchPending()).toBe(0); // still leased to the writer
    clock.advance(1000);
    expect(await other.dispatchPending()).toBe(1);
    expect(stranded.seen).toEqual([]);
    expect(takeover.seen.map((envelope) => [envelope.payload.thingId, envelope.attempt])).toEqual([['stranded', 2]]);
    expect((await deliveries(database.db))[0]).toMatchObject({ status: 'delivered', attempts: 2, claimed_by: null });
  });

  it('a dispatcher that is not running writes deliveries unclaimed, for the poller', async () => {
    const events = bus();
    const { handler, seen } = recorder('tests.record');
    events.subscribe(handler);
    await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 'cli', n: 1 } }]));
    expect((await deliveries(database.db))[0]).toMatchObject({ status: 'pending', attempts: 0, claimed_by: null });
    expect(await events.dispatchPending()).toBe(1);
    expect(seen.map((envelope) => envelope.attempt)).toEqual([1]);
  });

  it('validates payloads at write time and refuses anything but a transaction', async () => {
    const events = bus();
    events.subscribe(recorder('tests.record').handler);
    const invalid = database.db.transaction(async (trx) => {
      await events.write(trx, [
        { event: ThingHappened, payload: { thingId: 'ok', n: 1 } },
        { event: ThingHappened, payload: { thingId: '', n: 1.5 } },
      ]);
    });
    await expect(invalid).rejects.toThrow(EventPayloadError);
    await expect(
      database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: '', n: 1 } }])),
    ).rejects.toThrow(/Invalid payload for event ThingHappenedEvent: thingId/);
    await expect(
      events.write(database.db as unknown as Knex.Transaction, [{ event: ThingHappened, payload: { thingId: 'x', n: 1 } }]),
    ).rejects.toThrow(/needs the knex transaction/);
    expect(Number((await database.db('core_outbox_events').count({ n: '*' }))[0]?.n)).toBe(0);

    // The stored payload is the schema's output (unknown keys stripped).
    await database.db.transaction((trx) =>
      events.write(trx, [
        { event: ThingHappened, payload: { thingId: 'x', n: 1, extra: true } as { thingId: string; n: number } },
      ]),
    );
    const [stored] = await database.db('core_outbox_events').select('payload');
    expect(JSON.parse(stored.payload)).toEqual({ thingId: 'x', n: 1 });
  });

  it('retries a failing handler with exponential backoff until it succeeds', async () => {
    const events = bus({ retryBaseMs: 1000 });
    const { handler, seen } = recorder('tests.flaky', { failures: 2 });
    events.subscribe(handler);
    await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));

    expect(await events.dispatchPending()).toBe(1);
    let [row] = await deliveries(database.db);
    expect(row).toMatchObject({ status: 'pending', attempts: 1, claimed_by: null });
    expect(row?.last_error).toContain('tests.flaky failed on attempt 1');
    expect(toIso(row?.next_attempt_at)).toBe('2026-03-01T10:00:01.000Z');

    expect(await events.dispatchPending()).toBe(0);
    clock.advance(999);
    expect(await events.dispatchPending()).toBe(0);
    clock.advance(1);
    expect(await events.dispatchPending()).toBe(1);
    [row] = await deliveries(database.db);
    expect(row).toMatchObject({ status: 'pending', attempts: 2 });
    expect(toIso(row?.next_attempt_at)).toBe('2026-03-01T10:00:03.000Z');

    clock.advance(1999);
    expect(await events.dispatchPending()).toBe(0);
    clock.advance(1);
    expect(await events.dispatchPending()).toBe(1);
    [row] = await deliveries(database.db);
    expect(row).toMatchObject({ status: 'delivered', attempts: 3, last_error: null, claimed_by: null });
    expect(toIso(row?.delivered_at)).toBe('2026-03-01T10:00:03.000Z');
    expect(seen.map((envelope) => envelope.attempt)).toEqual([1, 2, 3]);
    expect(new Set(seen.map((envelope) => envelope.id)).size).toBe(1);
  });

  it('delivers to each handler independently', async () => {
    const events = bus({ retryBaseMs: 1000 });
    const steady = recorder('tests.steady');
    const flaky = recorder('tests.flaky', { failures: 1 });
    const other = recorder('tests.other', { event: OtherHappened as unknown as typeof ThingHappened });
    events.subscribe(steady.handler);
    events.subscribe(flaky.handler);
    events.subscribe(other.handler);
    await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));

    expect((await deliveries(database.db)).map((row) => row.handler).sort()).toEqual(['tests.flaky', 'tests.steady']);
    expect(await events.dispatchPending()).toBe(2);
    expect(steady.seen).toHaveLength(1);
    expect(flaky.seen).toHaveLength(1);
    clock.advance(1000);
    expect(await events.dispatchPending()).toBe(1);
    expect(steady.seen).toHaveLength(1);
    expect(flaky.seen).toHaveLength(2);
    expect(other.seen).toHaveLength(0);
    const rows = await deliveries(database.db);
    expect(rows.map((row) => [row.handler, row.status, row.attempts]).sort()).toEqual([
      ['tests.flaky', 'delivered', 2],
      ['tests.steady', 'delivered', 1],
    ]);
  });

  it('records each success while a slower handler of the same batch still runs', async () => {
    const events = bus();
    const fast = [recorder('tests.fast-1'), recorder('tests.fast-2'), recorder('tests.fast-3')];
    for (const { handler } of fast) events.subscribe(handler);
    const hold = gate();
    events.subscribe(
      defineEventHandler({ name: 'tests.held', module: 'tests', event: ThingHappened, handle: () => hold.opened }),
    );
    await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));

    const dispatched = events.dispatchPending();
    await vi.waitFor(
      async () => {
        const delivered = (await deliveries(database.db)).filter((row) => row.status === 'delivered');
        expect(delivered.map((row) => row.handler).sort()).toEqual(['tests.fast-1', 'tests.fast-2', 'tests.fast-3']);
      },
      { timeout: 5000, interval: 10 },
    );
    const [held] = await deliveries(database.db, 'tests.held');
    expect(held).toMatchObject({ status: 'pending', attempts: 1, claimed_by: events.instanceId });
    hold.open();
    expect(await dispatched).toBe(4);
    const rows = await deliveries(database.db);
    expect(rows.map((row) => [row.status, row.attempts, row.claimed_by, row.last_error])).toEqual(
      Array.from({ length: 4 }, () => ['delivered', 1, null, null]),
    );
    expect(rows.every((row) => toIso(row.delivered_at) === '2026-03-01T10:00:00.000Z')).toBe(true);
  });

  it('marks the deliveries of an event, and of the events its handlers write, delivered in one statement', async () => {
    // No wait for running deliveries runs out here: only "nothing else is running" starts a mark.
    const events = bus({ pollIntervalMs: 60_000, markWaitMs: 60_000 });
    for (const name of ['tests.fast-1', 'tests.fast-2']) events.subscribe(recorder(name).handler);
    const other: string[] = [];
    events.subscribe(
      defineEventHandler({
        name: 'tests.other',
        module: 'tests',
        event: OtherHappened,
        handle: async (envelope) => {
          other.push(envelope.payload.id);
        },
      }),
    );
    events.subscribe(
      defineEventHandler({
        name: 'tests.chain',
        module: 'tests',
        event: ThingHappened,
        handle: (envelope) =>
          database.db.transaction((trx) => events.write(trx, [{ event: OtherHappened, payload: { id: envelope.id } }])),
      }),
    );
    events.start();
    await new Promise((resolve) => setTimeout(resolve, 0));
    await events.dispatchPending();

    const marks: string[] = [];
    const capture = (query: { sql: string }) => {
      if (/set status = 'delivered'/.test(query.sql)) marks.push(query.sql);
    };
    database.db.on('query', capture);
    try {
      await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));
      await vi.waitFor(
        async () => {
          const rows = await deliveries(database.db);
          expect(rows.map((row) => [row.handler, row.status]).sort()).toEqual([
            ['tests.chain', 'delivered'],
            ['tests.fast-1', 'delivered'],
            ['tests.fast-2', 'delivered'],
            ['tests.other', 'delivered'],
          ]);
        },
        { timeout: 5000, interval: 10 },
      );
    } finally {
      database.db.off('query', capture);
    }
    expect(other).toHaveLength(1);
    expect(marks).toHaveLength(1);
  });

  it('does not record the success of a delivery that another dispatcher took over after its lease ran out', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: 'warn', write: (line) => lines.push(JSON.parse(line)) });
    const first = bus({ instanceId: 'first', leaseMs: 1000, handlerTimeoutMs: 60_000, logger });
    const second = bus({ instanceId: 'second', leaseMs: 1000 });
    const hold = gate();
    let entered = false;
    first.subscribe(
      defineEventHandler({
        name: 'tests.shared',
        module: 'tests',
        event: ThingHappened,
        handle: async () => {
          entered = true;
          await hold.opened;
        },
      }),
    );
    const takeover = recorder('tests.shared');
    second.subscribe(takeover.handler);
    await database.db.transaction((trx) => first.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));

    const dispatched = first.dispatchPending();
    await vi.waitFor(() => expect(entered).toBe(true), { timeout: 5000, interval: 10 });
    clock.advance(1001);
    expect(await second.dispatchPending()).toBe(1);
    expect(takeover.seen).toHaveLength(1);
    clock.advance(1000);
    hold.open();
    expect(await dispatched).toBe(1);

    const [row] = await deliveries(database.db);
    expect(row).toMatchObject({ status: 'delivered', attempts: 2, claimed_by: null });
    expect(toIso(row?.delivered_at)).toBe('2026-03-01T10:00:01.001Z');
    const warnings = lines.filter((line) => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ handler: 'tests.shared', attempt: 1, deliveryId: row?.id });
    expect(String(warnings[0]?.msg)).toMatch(/outlived its lease/);
  });

  it('marks a delivery dead after the last attempt and logs an error; the backoff is capped', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: 'warn', write: (line) => lines.push(JSON.parse(line)) });
    const events = bus({ maxAttempts: 3, retryBaseMs: 1000, retryMaxMs: 1500, logger });
    const { handler, seen } = recorder('tests.broken', { failures: Number.POSITIVE_INFINITY });
    events.subscribe(handler);
    await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));

    expect(await events.dispatchPending()).toBe(1);
    clock.advance(1000);
    expect(await events.dispatchPending()).toBe(1);
    let [row] = await deliveries(database.db);
    expect(toIso(row?.next_attempt_at)).toBe('2026-03-01T10:00:02.500Z'); // min(2000, 1500) after 10:00:01
    clock.advance(1500);
    expect(await events.dispatchPending()).toBe(1);
    [row] = await deliveries(database.db);
    expect(row).toMatchObject({ status: 'dead', attempts: 3, claimed_by: null });
    expect(row?.last_error).toContain('tests.broken failed on attempt 3');
    clock.advance(3_600_000);
    expect(await events.dispatchPending()).toBe(0);
    expect(seen).toHaveLength(3);
    expect(lines.filter((line) => line.level === 'warn')).toHaveLength(2);
    const errors = lines.filter((line) => line.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ handler: 'tests.broken', attempt: 3, component: 'event-bus' });
    expect(String(errors[0]?.msg)).toMatch(/dead/);
  });

  it('counts a handler that runs past its timeout as a failed attempt', async () => {
    const events = bus({ handlerTimeoutMs: 50, retryBaseMs: 1000 });
    events.subscribe(
      // A handler that never finishes: the bus's own timer (handlerTimeoutMs) ends the attempt.
      defineEventHandler({
        name: 'tests.slow',
        module: 'tests',
        event: ThingHappened,
        handle: () => new Promise<void>(() => undefined),
      }),
    );
    await database.db.transaction((trx) => events.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));
    expect(await events.dispatchPending()).toBe(1);
    const [row] = await deliveries(database.db);
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });
    expect(row?.last_error).toMatch(/did not finish within 50 ms/);
  });

  it('only claims deliveries of handlers it has, and stop() waits for running handlers', async () => {
    const publisher = bus({ pollIntervalMs: 60_000 });
    const stranger = bus();
    let finished = false;
    const started = gate();
    const release = gate();
    publisher.subscribe(
      defineEventHandler({
        name: 'tests.slow',
        module: 'tests',
        event: ThingHappened,
        handle: async () => {
          started.open();
          await release.opened;
          finished = true;
        },
      }),
    );
    stranger.subscribe(recorder('tests.unrelated').handler);
    await database.db.transaction((trx) => publisher.write(trx, [{ event: ThingHappened, payload: { thingId: 't', n: 1 } }]));
    // Deliveries are made for the writer's handlers; a bus without tests.slow leaves its delivery alone.
    expect(await stranger.dispatchPending()).toBe(0);
    expect((await deliveries(database.db, 'tests.slow'))[0]?.status).toBe('pending');

    const running = publisher.dispatchPending();
    await started.opened;
    let stopped = false;
    const stopping = publisher.stop().then(() => {
      stopped = true;
    });
    // Every microtask has run: stop() is still waiting for the running handler.
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    release.open();
    await stopping;
    expect(finished).toBe(true);
    expect(await running).toBe(1);
    expect((await deliveries(database.db, 'tests.slow'))[0]?.status).toBe('delivered');
  });

  it('refuses duplicate handler names and conflicting event definitions; lists both in the catalog', () => {
    const events = bus();
    const { handler } = recorder('tests.record');
    events.subscribe(handler);
    expect(() => events.subscribe({ ...handler })).toThrow(/already subscribed/);
    expect(() => events.register({ ...ThingHappened, module: 'elsewhere' })).toThrow(/already registered/);
    events.register(ThingHappened);
    events.register(OtherHappened);
    expect(events.catalog()).toEqual({
      events: [ThingHappened, OtherHappened],
      handlers: [{ name: 'tests.record', module: 'tests', event: 'ThingHappenedEvent', description: 'records tests.record' }],
    });
    expect(() => createEventBus({ db: database.db, leaseMs: 0 })).toThrow(RangeError);
  });

  it('prunes old events once every delivery is delivered or dead', async () => {
    const events = bus({ maxAttempts: 1 });
    events.subscribe(recorder('tests.ok').handler);
    const failing = recorder('tests.failing', { failures: 1, event: OtherHappened as unknown as typeof ThingHappened });
    events.subscribe(failing.handler);
    await database.db.transaction((trx) =>
      events.write(trx, [
        { event: ThingHappened, payload: { thingId: 'delivered', n: 1 } },
        { event: OtherHappened, payload: { id: 'dead' } },
      ]),
    );
    expect(await events.dispatchPending()).toBe(2);
    clock.advance(60_000);
    events.subscribe(recorder('tests.never-run', { event: OtherHappened as unknown as typeof ThingHappened }).handler);
    await database.db.transaction((trx) => events.write(trx, [{ event: OtherHappened, payload: { id: 'pending' } }]));
    clock.advance(60_000);

    expect(await events.prune(3_600_000)).toBe(0);
    expect(await events.prune(30_000)).toBe(2);
    const remaining = await database.db('core_outbox_events').select('payload');
    expect(remaining.map((row) => JSON.parse(row.payload))).toEqual([{ id: 'pending' }]);
    expect((await deliveries(database.db)).map((row) => row.handler).sort()).toEqual(['tests.failing', 'tests.never-run']);
  });

  it('delivers each delivery exactly once across two instances dispatching concurrently', async () => {
    const secondDb = createDatabase(database.url);
    cleanups.push(() => secondDb.destroy());
    const delivered: Array<{ instance: string; eventId: string }> = [];
    const make = (db: Knex, instance: string) => {
      const created = createEventBus({ db, instanceId: instance, batchSize: 7 });
      cleanups.push(() => created.stop());
      created.subscribe(
        defineEventHandler({
          name: 'tests.count',
          module: 'tests',
          event: ThingHappened,
          handle: async (envelope) => {
            delivered.push({ instance, eventId: envelope.id });
            // Concurrency: random handler durations interleave the two dispatchers' claims.
            await sleep(Math.random() * 5);
          },
        }),
      );
      return created;
    };
    const first = make(database.db, 'instance-a');
    const second = make(secondDb, 'instance-b');
    await database.db.transaction((trx) =>
      first.write(
        trx,
        Array.from({ length: 50 }, (_, n) => ({ event: ThingHappened, payload: { thingId: `t${n}`, n } })),
      ),
    );

    const counts = await Promise.all([
      first.dispatchPending(),
      second.dispatchPending(),
      first.dispatchPending(),
      second.dispatchPending(),
      second.dispatchPending(),
    ]);
    expect(counts.reduce((sum, count) => sum + count, 0)).toBe(50);
    expect(delivered).toHaveLength(50);
    expect(new Set(delivered.map((entry) => entry.eventId)).size).toBe(50);
    const rows = await deliveries(database.db);
    expect(rows).toHaveLength(50);
    expect(rows.every((row) => row.status === 'delivered' && row.attempts === 1)).toBe(true);
    expect(await first.dispatchPending()).toBe(0);
    expect(await second.dispatchPending()).toBe(0);
  });

  it('still delivers an event whose dispatcher was killed mid-delivery', { timeout: 60_000 }, async () => {
    const leaseMs = 30_000;
    // The child claims by the wall clock; this instance reads its own clock, moved past the lease below.
    const writerClock = createManualClock();
    const writer = createEventBus({ db: database.db, leaseMs, clock: writerClock });
    cleanups.push(() => writer.stop());
    const delivered: EventEnvelope[] = [];
    writer.subscribe(
      defineEventHandler({
        name: 'tests.survivor',
        module: 'tests',
        event: ThingHappened,
        handle: async (envelope) => void delivered.push(envelope as EventEnvelope),
      }),
    );
    await database.db.transaction((trx) => writer.write(trx, [{ event: ThingHappened, payload: { thingId: 'k', n: 1 } }]));
    const [event] = await database.db('core_outbox_events').select('id');

    const child = spawn(
      process.execPath,
      ['--import', 'tsx', hangingDispatcher, database.url, 'tests.survivor', String(leaseMs)],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    cleanups.push(async () => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
    const started = await waitForLine(child, /^started (\S+) (\d+)$/, 30_000);
    expect(started[1]).toBe(event.id);
    expect(started[2]).toBe('1');

    const [claimed] = await deliveries(database.db);
    expect(claimed).toMatchObject({ status: 'pending', attempts: 1 });
    expect(claimed?.claimed_by).toBe(`hanging-dispatcher/${child.pid}`);
    await killAndWait(child);

    // The dead dispatcher's lease still holds: nothing to claim yet.
    expect(await writer.dispatchPending()).toBe(0);
    expect(delivered).toEqual([]);

    const leaseEnd = new Date(toIso(claimed?.claimed_until)).getTime();
    writerClock.set(leaseEnd - 1);
    expect(await writer.dispatchPending()).toBe(0);
    writerClock.set(leaseEnd);
    expect(await writer.dispatchPending()).toBe(1);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ id: event.id, attempt: 2, payload: { thingId: 'k', n: 1 } });
    const [row] = await deliveries(database.db);
    expect(row?.status).toBe('delivered');
    expect(row?.attempts).toBeGreaterThanOrEqual(2);
    expect(row?.claimed_by).toBeNull();
    expect(await writer.dispatchPending()).toBe(0);
    expect(delivered).toHaveLength(1);
  });
});

/** Resolves with the first stdout line of `child` matching `pattern`; rejects if it exits or takes too long. */
function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    // Real I/O: a guard on the child process's output, not a time rule.
    const timer = setTimeout(() => fail(new Error(`timed out waiting for ${pattern}`)), timeoutMs);
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(new Error(`${error.message}\nstdout: ${stdout}\nstderr: ${stderr}`));
    };
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const line of stdout.split('\n')) {
        const match = line.match(pattern);
        if (match) {
          clearTimeout(timer);
          resolve(match);
          return;
        }
      }
    });
    child.once('exit', (code, signal) => fail(new Error(`the child exited (code ${code}, signal ${signal})`)));
  });
}

async function killAndWait(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}
