import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createManualClock, createTtlCache, sweepTtlCaches } from '../src/index.js';
import { ALL_KEYS, coreMigrations, createCacheInvalidator, createDatabase } from '../src/knex.js';

/** Polls until `check` passes: evictions reach listeners over Postgres NOTIFY or SQLite polling (real I/O). */
async function eventually(check: () => void, timeoutMs = 3000) {
  const started = Date.now();
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() - started > timeoutMs) throw error;
      // Real I/O: the next look at an eviction delivered by the database connection.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

describe('TTL cache', () => {
  it('loads once under concurrency and never keeps a load that an invalidation overtook', async () => {
    const cache = createTtlCache<number>({ ttlMs: 60_000 });
    let loads = 0;
    let release: (value: number) => void = () => undefined;
    const slow = () =>
      new Promise<number>((resolve) => {
        loads += 1;
        release = resolve;
      });
    const a = cache.getOrLoad('k', slow);
    const b = cache.getOrLoad('k', slow);
    cache.delete('k');
    release(1);
    expect(await a).toBe(1);
    expect(await b).toBe(1);
    expect(loads).toBe(1);
    expect(cache.get('k')).toBeUndefined();
    expect(await cache.getOrLoad('k', async () => 2)).toBe(2);
    expect(cache.get('k')).toBe(2);
  });

  it('keeps the load that began after a delete, not the one that began before it, when both run at once', async () => {
    const cache = createTtlCache<string>({ ttlMs: 60_000 });
    const releases: Array<(value: string) => void> = [];
    const slow = () => new Promise<string>((resolve) => releases.push(resolve));
    const before = cache.getOrLoad('k', slow);
    cache.delete('k'); // also forgets the load in flight, so the next caller starts its own
    const after = cache.getOrLoad('k', slow);
    releases[1]?.('new');
    expect(await after).toBe('new');
    expect(cache.get('k')).toBe('new');
    releases[0]?.('old');
    expect(await before).toBe('old');
    expect(cache.get('k')).toBe('new');

    // A loader that throws at once or rejects leaves nothing behind: a later load is kept as usual.
    await expect(
      cache.getOrLoad('t', () => {
        throw new Error('at once');
      }),
    ).rejects.toThrow('at once');
    await expect(cache.getOrLoad('t', async () => Promise.reject(new Error('later')))).rejects.toThrow('later');
    await expect(cache.getOrLoadMany(['t'], async () => Promise.reject(new Error('batch')))).rejects.toThrow('batch');
    cache.delete('t');
    expect(await cache.getOrLoad('t', async () => 'T')).toBe('T');
    expect(cache.get('t')).toBe('T');
  });

  it('loads every miss of a batch in one call, keeps what it loaded, and not what an invalidation overtook', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const cache = createTtlCache<string>({ ttlMs: 1000, clock });
    cache.set('a', 'A');
    const calls: string[][] = [];
    let release: () => void = () => undefined;
    const loadMany = async (missing: string[]) => {
      calls.push(missing);
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      // `z` does not exist: it is answered as undefined and not kept.
      return new Map(missing.filter((key) => key !== 'z').map((key) => [key, key.toUpperCase()]));
    };
    const batch = cache.getOrLoadMany(['a', 'b', 'c', 'b', 'z'], loadMany);
    // A write of `c` while its load is in flight: the loaded copy may be older than the write.
    cache.delete('c');
    release();
    expect(await batch).toEqual(['A', 'B', 'C', 'B', undefined]);
    expect(calls).toEqual([['b', 'c', 'z']]);
    expect(cache.get('b')).toBe('B');
    expect(cache.get('c')).toBeUndefined();
    expect(cache.get('z')).toBeUndefined();

    // All cached: no load at all.
    expect(await cache.getOrLoadMany(['b', 'a'], loadMany)).toEqual(['B', 'A']);
    expect(calls).toHaveLength(1);

    // A clear during the load keeps nothing of it; expired entries are loaded again.
    clock.advance(1000);
    const cleared = cache.getOrLoadMany(['a', 'b'], loadMany);
    cache.clear();
    release();
    expect(await cleared).toEqual(['A', 'B']);
    expect(calls.at(-1)).toEqual(['a', 'b']);
    expect(cache.size).toBe(0);
  });

  it('expires entries and bounds its size', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const cache = createTtlCache<string>({ ttlMs: 5, max: 2, clock });
    cache.set('a', 'A');
    cache.set('b', 'B');
    cache.set('c', 'C');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(2);
    clock.advance(4);
    expect(cache.get('b')).toBe('B');
    clock.advance(1);
    expect(cache.get('b')).toBeUndefined();
    cache.set('d', 'D', 60_000);
    clock.advance(59_999);
    expect(cache.get('d')).toBe('D');
  });

  it('with idleMs keeps entries in use up to ttlMs and lets unused ones go early', () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const cache = createTtlCache<string>({ ttlMs: 600_000, idleMs: 60_000, clock });
    cache.set('busy', 'B');
    cache.set('quiet', 'Q');
    for (let minute = 0; minute < 10; minute++) {
      clock.advance(59_999);
      expect(cache.get('busy')).toBe('B');
      if (minute === 0) expect(cache.get('quiet')).toBe('Q');
    }
    expect(cache.get('quiet')).toBeUndefined();
    // Read every minute, it still leaves at its greatest age (10 ms after its last read here).
    clock.advance(10);
    expect(cache.get('busy')).toBeUndefined();
    // A load counts as a use: a fresh entry has its whole idle time.
    cache.set('fresh', 'F');
    clock.advance(60_000);
    expect(cache.get('fresh')).toBeUndefined();
  });

  it('drops expired entries nobody reads again on a sweep, keeping those still in use', () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const cache = createTtlCache<string>({ ttlMs: 1000, idleMs: 100, clock });
    cache.set('read', 'R');
    cache.set('unread', 'U');
    clock.advance(99);
    expect(cache.get('read')).toBe('R');
    clock.advance(1);
    // Other caches of the process may drop expired entries of their own on the same sweep.
    expect(sweepTtlCaches()).toBeGreaterThanOrEqual(1);
    expect(cache.size).toBe(1);
    expect(cache.get('read')).toBe('R');
    clock.advance(1000);
    sweepTtlCaches();
    expect(cache.size).toBe(0);
  });

  it("sweeps every cache of the process on a timer, by each cache's own clock", async () => {
    vi.useFakeTimers();
    try {
      // A fresh copy of the module: its sweeper timer starts under the fake timers.
      vi.resetModules();
      const fresh = await import('../src/cache/ttl-cache.js');
      const clock = createManualClock('2030-01-01T00:00:00Z');
      const cache = fresh.createTtlCache<string>({ ttlMs: 1000, clock });
      cache.set('a', 'A');
      clock.advance(1000);
      vi.advanceTimersByTime(fresh.TTL_CACHE_SWEEP_INTERVAL_MS - 1);
      expect(cache.size).toBe(1);
      vi.advanceTimersByTime(1);
      expect(cache.size).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('with jitter spreads greatest ages over the last share of ttlMs', () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const cache = createTtlCache<number>({ ttlMs: 1000, jitter: 0.2, clock, max: 1000 });
    for (let i = 0; i < 500; i++) cache.set(`k${i}`, i);
    clock.advance(799);
    expect(cache.size).toBe(500);
    const alive = () => Array.from({ length: 500 }, (_, i) => cache.get(`k${i}`)).filter((value) => value !== undefined).length;
    expect(alive()).toBe(500);
    clock.advance(100);
    const half = alive();
    // About half expire in the first half of the spread; not all at once, not none.
    expect(half).toBeGreaterThan(100);
    expect(half).toBeLessThan(400);
    clock.advance(101);
    expect(alive()).toBe(0);
  });
});

describe.each(testDialects())('cache invalidation on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
    await database.db.schema.createTable('things', (t) => t.string('id'));
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('evicts after commit, never before, and not at all on rollback', async () => {
    const invalidator = createCacheInvalidator({ db: database.db });
    await invalidator.start();
    const seen: string[] = [];
    invalidator.subscribe('users', (key) => seen.push(key));
    try {
      await database.db.transaction(async (trx) => {
        await trx('things').insert({ id: '1' });
        await invalidator.invalidate('users', 'u1', trx);
        // Real I/O: gives a premature eviction (a NOTIFY or an in-process emit before the commit) time to arrive.
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(seen).toEqual([]);
      });
      await eventually(() => expect(seen).toContain('u1'));
      await database.db
        .transaction(async (trx) => {
          await invalidator.invalidate('users', 'u2', trx);
          throw new Error('rollback');
        })
        .catch(() => undefined);
      // A later committed eviction arrives; none of the rolled-back transaction came before it.
      await invalidator.invalidate('users', 'u3');
      await eventually(() => expect(seen).toContain('u3'));
      expect(seen).not.toContain('u2');
    } finally {
      await invalidator.close();
    }
  });

  it('reaches another process on the same database', async () => {
    const otherDb = createDatabase(database.url);
    const mine = createCacheInvalidator({ db: database.db, pollIntervalMs: 100 });
    const theirs = createCacheInvalidator({ db: otherDb, pollIntervalMs: 100 });
    await mine.start();
    await theirs.start();
    const seen: string[] = [];
    theirs.subscribe('clients', (key) => seen.push(key));
    try {
      await mine.invalidate('clients', 'c1');
      await eventually(() => expect(seen).toEqual(['c1']));
      expect(ALL_KEYS).toBe('*');
    } finally {
      await mine.close();
      await theirs.close();
      await otherDb.destroy();
    }
  });
});
