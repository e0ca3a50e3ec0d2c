import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, defaultRateLimits } from '../src/index.js';
import { batchSize, coreMigrations, createDatabase, createRateLimiter, createWindowCounter } from '../src/knex.js';

const MINUTE = 60_000;

describe.each(testDialects())('rate limiting on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('creates the counters table with its expiry index', async () => {
    expect(await database.db.schema.hasTable('core_rate_limit_counters')).toBe(true);
    for (const column of ['key', 'count', 'window_started_at', 'expires_at']) {
      expect(await database.db.schema.hasColumn('core_rate_limit_counters', column)).toBe(true);
    }
  });

  it('counts attempts and refuses past the limit, counting refusals too', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const counter = createWindowCounter({ db: database.db, clock });
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await counter.hit('count:a', 3, MINUTE));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect(decisions.every((d) => d.limit === 3)).toBe(true);
    const row = await database.db('core_rate_limit_counters').where('key', 'count:a').first();
    expect(Number(row.count)).toBe(5);
    // Other keys have their own windows.
    expect((await counter.hit('count:b', 3, MINUTE)).allowed).toBe(true);
  });

  it('anchors the window at the first attempt and starts a new one after it expires', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const counter = createWindowCounter({ db: database.db, clock });
    clock.advance(17_000); // the window does not align to the minute: it starts here
    expect((await counter.hit('anchor', 2, MINUTE)).retryAfterSeconds).toBe(60);
    clock.advance(30_000);
    expect(await counter.hit('anchor', 2, MINUTE)).toEqual({ allowed: true, limit: 2, remaining: 0, retryAfterSeconds: 30 });
    clock.advance(29_500);
    expect(await counter.hit('anchor', 2, MINUTE)).toEqual({ allowed: false, limit: 2, remaining: 0, retryAfterSeconds: 1 });
    clock.advance(499); // 1 ms before expiry: still the old window
    expect((await counter.hit('anchor', 2, MINUTE)).allowed).toBe(false);
    clock.advance(1); // exactly at expiry: a new window anchored now
    expect(await counter.hit('anchor', 2, MINUTE)).toEqual({ allowed: true, limit: 2, remaining: 1, retryAfterSeconds: 60 });
    const row = await database.db('core_rate_limit_counters').where('key', 'anchor').first();
    expect(Number(row.count)).toBe(1);
    expect(Number(row.window_started_at)).toBe(clock.now().getTime());
    expect(Number(row.expires_at)).toBe(clock.now().getTime() + MINUTE);
  });

  it('rounds Retry-After up to whole seconds, at least one', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const counter = createWindowCounter({ db: database.db, clock });
    await counter.hit('retry', 1, 90_500);
    clock.advance(1);
    expect((await counter.hit('retry', 1, 90_500)).retryAfterSeconds).toBe(91);
    clock.advance(90_000);
    expect((await counter.hit('retry', 1, 90_500)).retryAfterSeconds).toBe(1);
  });

  it('refuses everything with a limit of 0 but still records the attempts', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const counter = createWindowCounter({ db: database.db, clock });
    for (let i = 0; i < 3; i++) {
      expect(await counter.hit('zero', 0, MINUTE)).toEqual({ allowed: false, limit: 0, remaining: 0, retryAfterSeconds: 60 });
    }
    const row = await database.db('core_rate_limit_counters').where('key', 'zero').first();
    expect(Number(row.count)).toBe(3);
  });

  it('refuses invalid limits and windows', async () => {
    const counter = createWindowCounter({ db: database.db });
    await expect(counter.hit('bad', -1, MINUTE)).rejects.toThrow(RangeError);
    await expect(counter.hit('bad', 1.5, MINUTE)).rejects.toThrow(RangeError);
    await expect(counter.hit('bad', 1, 0)).rejects.toThrow(RangeError);
  });

  it('resets one key and prunes expired counters only', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const counter = createWindowCounter({ db: database.db, clock });
    await counter.hit('reset', 1, MINUTE);
    expect((await counter.hit('reset', 1, MINUTE)).allowed).toBe(false);
    await counter.reset('reset');
    expect((await counter.hit('reset', 1, MINUTE)).allowed).toBe(true);

    await counter.hit('prune:short', 5, MINUTE);
    await counter.hit('prune:long', 5, 10 * MINUTE);
    clock.advance(2 * MINUTE);
    // Everything the earlier tests wrote (2026) has expired too.
    expect(await counter.prune()).toBeGreaterThanOrEqual(3);
    const keys = (await database.db('core_rate_limit_counters').select('key')).map((row) => row.key);
    expect(keys).toEqual(['prune:long']);
    expect(await counter.prune()).toBe(0);
  });

  it('peeks at the open window without counting, and sees nothing once it expired', async () => {
    const clock = createManualClock('2031-01-01T00:00:00Z');
    const counter = createWindowCounter({ db: database.db, clock });
    expect(await counter.peek('peek')).toBeUndefined();
    await counter.hit('peek', 5, MINUTE);
    clock.advance(10_000);
    await counter.hit('peek', 5, MINUTE);
    const start = clock.now().getTime() - 10_000;
    expect(await counter.peek('peek')).toEqual({ total: 2, expiresAt: start + MINUTE });
    expect(await counter.peek('peek')).toEqual({ total: 2, expiresAt: start + MINUTE });
    const row = await database.db('core_rate_limit_counters').where('key', 'peek').first();
    expect(Number(row.count)).toBe(2);
    clock.advance(MINUTE - 10_001);
    expect((await counter.peek('peek'))?.total).toBe(2);
    clock.advance(1); // exactly at expiry: the window is over
    expect(await counter.peek('peek')).toBeUndefined();
    // Over-long keys are peeked at by their digest too.
    const long = 'p'.repeat(300);
    await counter.hit(long, 1, MINUTE);
    expect((await counter.peek(long))?.total).toBe(1);
    await counter.reset(long);
    expect(await counter.peek(long)).toBeUndefined();
  });
  it('stores over-long keys by digest', async () => {
    const counter = createWindowCounter({ db: database.db });
    const key = `email:${'x'.repeat(600)}@example.com`;
    await counter.hit(key, 1, MINUTE);
    expect((await counter.hit(key, 1, MINUTE)).allowed).toBe(false);
    expect((await counter.hit(`${key}.org`, 1, MINUTE)).allowed).toBe(true);
    await counter.reset(key);
    expect((await counter.hit(key, 1, MINUTE)).allowed).toBe(true);
  });

  it('allows exactly the limit out of 50 concurrent hits', async () => {
    const counter = createWindowCounter({ db: database.db });
    const decisions = await Promise.all(Array.from({ length: 50 }, () => counter.hit('concurrent:one-pool', 10, MINUTE)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.map((d) => d.remaining).sort((a, b) => a - b)).toEqual([
      ...Array(41).fill(0),
      ...Array.from({ length: 9 }, (_, i) => i + 1),
    ]);
  });

  it('allows exactly the limit out of 60 concurrent hits over two connection pools', async () => {
    const other = createDatabase(database.url);
    try {
      const counters = [createWindowCounter({ db: database.db }), createWindowCounter({ db: other })];
      const decisions = await Promise.all(
        Array.from({ length: 60 }, (_, i) => counters[i % 2]?.hit('concurrent:two-pools', 10, MINUTE)),
      );
      expect(decisions.filter((d) => d?.allowed)).toHaveLength(10);
      const row = await other('core_rate_limit_counters').where('key', 'concurrent:two-pools').first();
      expect(Number(row.count)).toBe(60);
    } finally {
      await other.destroy();
    }
  });

  it('limits requests per policy and partition with the configured settings', async () => {
    const clock = createManualClock('2026-06-01T00:00:00Z');
    const limiter = createRateLimiter({
      db: database.db,
      clock,
      settings: {
        ...defaultRateLimits,
        auth: { permitLimit: 2, windowSeconds: 60 },
        upload: { permitLimit: 0, windowSeconds: 10 },
      },
    });
    expect((await limiter.hit('auth', 'ip:10.0.0.1')).allowed).toBe(true);
    expect((await limiter.hit('auth', 'ip:10.0.0.1')).allowed).toBe(true);
    expect(await limiter.hit('auth', 'ip:10.0.0.1')).toEqual({ allowed: false, limit: 2, remaining: 0, retryAfterSeconds: 60 });
    // Another partition, and another policy for the same partition, count apart.
    expect((await limiter.hit('auth', 'ip:10.0.0.2')).allowed).toBe(true);
    expect(await limiter.hit('global', 'ip:10.0.0.1')).toMatchObject({ allowed: true, limit: 1000, remaining: 999 });
    expect(await limiter.hit('upload', 'user:u1')).toEqual({ allowed: false, limit: 0, remaining: 0, retryAfterSeconds: 10 });
    expect(await database.db('core_rate_limit_counters').where('key', 'auth:ip:10.0.0.1').first()).toMatchObject({
      key: 'auth:ip:10.0.0.1',
    });
    await limiter.reset('auth', 'ip:10.0.0.1');
    expect((await limiter.hit('auth', 'ip:10.0.0.1')).allowed).toBe(true);
    clock.advance(61_000);
    // The auth and upload windows expired; the hour-long global one did not.
    expect(await limiter.prune()).toBeGreaterThanOrEqual(3);
    expect(
      await database.db('core_rate_limit_counters').where('key', 'like', 'auth:%').orWhere('key', 'like', 'upload:%'),
    ).toEqual([]);
    expect(await database.db('core_rate_limit_counters').where('key', 'global:ip:10.0.0.1').first()).toBeDefined();
  });
});

describe.each(testDialects())('batched permits on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('reserves large limits in batches without ever admitting more than the limit across instances', async () => {
    expect(batchSize(30)).toBe(1);
    expect(batchSize(1000)).toBe(25);
    expect(batchSize(40_000)).toBe(1000);
    expect(batchSize(1_000_000)).toBe(1000);
    const settings = {
      auth: { permitLimit: 30, windowSeconds: 60 },
      upload: { permitLimit: 10, windowSeconds: 60 },
      registration: { permitLimit: 5, windowSeconds: 60 },
      global: { permitLimit: 400, windowSeconds: 60 },
    };
    const other = createDatabase(database.url);
    try {
      const a = createRateLimiter({ db: database.db, settings });
      const b = createRateLimiter({ db: dialect === 'postgres' ? other : database.db, settings });
      const decisions = await Promise.all(
        Array.from({ length: 500 }, (_, index) => (index % 2 === 0 ? a : b).hit('global', 'org:batched')),
      );
      const allowed = decisions.filter((decision) => decision.allowed).length;
      expect(allowed).toBeLessThanOrEqual(400);
      expect(allowed).toBeGreaterThanOrEqual(400 - 2 * batchSize(400));
      const row = await database.db('core_rate_limit_counters').where('key', 'global:org:batched').first();
      // One statement per batch, not per request.
      expect(Number(row.count)).toBeGreaterThanOrEqual(400);
      const refused = decisions.find((decision) => !decision.allowed);
      expect(refused?.retryAfterSeconds).toBeGreaterThan(0);
    } finally {
      await other.destroy();
    }
  });
});
