import { createRequire } from 'node:module';
import { connectTestDatabase, createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { INVALIDATION_RETENTION_MS, PRUNE_INTERVAL_MS, reconnectDelayMs } from '../src/cache/invalidator.js';
import { createManualClock } from '../src/index.js';
import {
  ALL_KEYS,
  coreMigrations,
  createCacheInvalidator,
  createDatabase,
  type MigrationSet,
  runMigrations,
} from '../src/knex.js';

/** Polls until `check` passes (real I/O: a connection ending, a reconnect, a NOTIFY arriving). */
async function eventually(check: () => void | Promise<void>, timeoutMs = 5000) {
  const started = Date.now();
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() - started > timeoutMs) throw error;
      // Real I/O: the next look at what the database connection delivered.
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

/** Timers the test fires by hand: the reconnect schedule is a time rule, so no test waits for it. */
function manualTimers() {
  const pending: Array<{ ms: number; run: () => void; cancelled: boolean }> = [];
  const delays: number[] = [];
  return {
    delays,
    setTimer(run: () => void, ms: number) {
      const timer = { ms, run, cancelled: false };
      pending.push(timer);
      delays.push(ms);
      return () => {
        timer.cancelled = true;
      };
    },
    /** Fires the one scheduled reconnect attempt. */
    fire() {
      const live = pending.splice(0).filter((timer) => !timer.cancelled);
      expect(live).toHaveLength(1);
      live[0]?.run();
    },
    get scheduled() {
      return pending.filter((timer) => !timer.cancelled).length;
    },
  };
}

describe('reconnectDelayMs', () => {
  it('doubles from 100 ms up to 5 s, jittered between half and all of it', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 30].map((attempt) => reconnectDelayMs(attempt, () => 1))).toEqual([
      100, 200, 400, 800, 1600, 2000, 2000, 2000,
    ]);
    expect(reconnectDelayMs(0, () => 0)).toBe(50);
    expect(reconnectDelayMs(30, () => 0)).toBe(1000);
  });
});

describe('SQLite freshen', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite', [coreMigrations]);
  });
  afterAll(async () => {
    await database.destroy();
  });

  /** This process's invalidator and another connection's, and what this one hears; no background poll of its own unless asked (only freshen() reads). */
  async function twoInvalidators(pollIntervalMs = 3_600_000) {
    const other = connectTestDatabase(database);
    const mine = createCacheInvalidator({ db: database.db, pollIntervalMs });
    const theirs = createCacheInvalidator({ db: other.db, pollIntervalMs: 3_600_000 });
    await mine.start();
    await theirs.start();
    const seen: string[] = [];
    mine.subscribe('clients', (key) => seen.push(key));
    const close = async () => {
      await mine.close();
      await theirs.close();
      await other.destroy();
    };
    return { mine, theirs, seen, close };
  }

  it("applies another connection's evictions before it resolves, without polling", async () => {
    const { mine, theirs, seen, close } = await twoInvalidators();
    try {
      expect(mine.isLive()).toBe(true);
      await theirs.invalidate('clients', 'c1');
      await theirs.invalidate('clients', 'c2');
      expect(seen).toEqual([]);
      await mine.freshen();
      expect(seen).toEqual(['c1', 'c2']);
      // Nothing committed elsewhere since: nothing read again; its own evictions arrive at once, once.
      await mine.invalidate('clients', 'c3');
      await mine.freshen();
      expect(seen).toEqual(['c1', 'c2', 'c3']);
    } finally {
      await close();
    }
    expect(mine.isLive()).toBe(false);
  });

  it("reads new evictions on its watcher connection: no pool query after its own or another connection's commit", async () => {
    const { mine, theirs, seen, close } = await twoInvalidators();
    const poolReads: string[] = [];
    const onQuery = (query: { sql: string }) => {
      if (/select/i.test(query.sql) && query.sql.includes('core_cache_invalidations')) poolReads.push(query.sql);
    };
    database.db.on('query', onQuery);
    try {
      // Its own commit moves the file's data version; the look that follows reads nothing through the pool.
      await mine.invalidate('clients', 'own');
      await eventually(() => {
        expect(mine.freshen()).toBeUndefined();
      });
      // Another connection's eviction is applied by freshen() itself, synchronously.
      await theirs.invalidate('clients', 'theirs');
      await eventually(() => {
        expect(mine.freshen()).toBeUndefined();
        expect(seen).toEqual(['own', 'theirs']);
      });
      expect(poolReads).toEqual([]);
    } finally {
      database.db.off('query', onQuery);
      await close();
    }
  });

  it("reads nothing after this process's commits, reads past them once a second, and still hears another process at once", async () => {
    // The once-a-second poll is fired by hand; the 2 ms between two looks is real time (performance.now).
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { mine, theirs, seen, close } = await twoInvalidators(1000);
    const { reads, restore } = countEvictionReads();
    try {
      await mine.invalidate('clients', 'own-1');
      await mine.invalidate('clients', 'own-2');
      expect(seen).toEqual(['own-1', 'own-2']);
      // Looks 2 ms apart or more: the pool's connection saw no other process commit, so nothing is read.
      let looks = 0;
      await eventually(() => {
        expect(mine.freshen()).toBeUndefined();
        expect(++looks).toBeGreaterThanOrEqual(3);
      });
      expect(reads).toEqual([]);
      // The poll reads past this process's two rows, and applies none of them again.
      await eventually(() => {
        vi.advanceTimersByTime(1000);
        expect(reads).toEqual([2]);
      });
      expect(seen).toEqual(['own-1', 'own-2']);
      // Another process's eviction is read by the next look, alone: the own rows were read past already.
      await theirs.invalidate('clients', 'theirs');
      await eventually(() => {
        expect(mine.freshen()).toBeUndefined();
        expect(seen).toEqual(['own-1', 'own-2', 'theirs']);
      });
      expect(reads).toEqual([2, 1]);
    } finally {
      restore();
      await close();
      vi.useRealTimers();
    }
  });

  it('polls even when requests look every 2 ms or less, so its own rows are read past under steady load', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { mine, close } = await twoInvalidators(1000);
    const { reads, restore } = countEvictionReads();
    try {
      await mine.invalidate('clients', 'own-1');
      await mine.invalidate('clients', 'own-2');
      // A request's look right before each poll: well within 2 ms of it.
      await eventually(() => {
        mine.freshen();
        vi.advanceTimersByTime(1000);
        expect(reads).toEqual([2]);
      });
    } finally {
      restore();
      await close();
      vi.useRealTimers();
    }
  });

  it('hears at commit the evictions of another invalidator on the same knex instance, and reads none of them back', async () => {
    // Two compositions over one knex instance share its connection, whose data version never moves with their commits.
    const first = createCacheInvalidator({ db: database.db, pollIntervalMs: 3_600_000 });
    const second = createCacheInvalidator({ db: database.db, pollIntervalMs: 3_600_000 });
    const { reads, restore } = countEvictionReads();
    try {
      await first.start();
      await second.start();
      const heard: Record<string, string[]> = { first: [], second: [] };
      first.subscribe('clients', (key) => heard.first?.push(key));
      second.subscribe('clients', (key) => heard.second?.push(key));
      await database.db.transaction(async (trx) => {
        await first.invalidateMany(
          [
            { namespace: 'clients', key: 'c1' },
            { namespace: 'clients', key: 'c2' },
          ],
          trx,
        );
        expect(heard).toEqual({ first: [], second: [] });
      });
      expect(heard).toEqual({ first: ['c1', 'c2'], second: ['c1', 'c2'] });
      await expect(
        database.db.transaction(async (trx) => {
          await second.invalidate('clients', 'rolled-back', trx);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await second.invalidate('clients', 'c3');
      expect(heard).toEqual({ first: ['c1', 'c2', 'c3'], second: ['c1', 'c2', 'c3'] });
      // Their rows are this process's own for both: a look reads nothing, and nothing is heard twice.
      await eventually(() => {
        expect(first.freshen()).toBeUndefined();
        expect(second.freshen()).toBeUndefined();
      });
      expect(reads).toEqual([]);
      expect(heard.first).toEqual(['c1', 'c2', 'c3']);
      // One closed: the other still hears its own.
      await first.close();
      await second.invalidate('clients', 'c4');
      expect(heard).toEqual({ first: ['c1', 'c2', 'c3'], second: ['c1', 'c2', 'c3', 'c4'] });
    } finally {
      restore();
      await first.close();
      await second.close();
    }
  });
});

/**
 * Counts every read of the evictions table on any better-sqlite3 connection
 * (the watcher's included), by rows read, until `restore`.
 */
function countEvictionReads(): { reads: number[]; restore: () => void } {
  const reads: number[] = [];
  const statementPrototype = Object.getPrototypeOf(watcherProbe()) as { all(...values: unknown[]): unknown[] };
  const all = statementPrototype.all;
  statementPrototype.all = function (this: { source: string }, ...values: unknown[]) {
    const rows = all.apply(this, values);
    if (this.source.includes('from core_cache_invalidations')) reads.push(rows.length);
    return rows;
  };
  return {
    reads,
    restore: () => {
      statementPrototype.all = all;
    },
  };
}

/** A statement of better-sqlite3, for its prototype. */
function watcherProbe(): object {
  const Database = createRequire(import.meta.url)('better-sqlite3') as new (
    file: string,
  ) => { prepare(sql: string): object; close(): void };
  const probe = new Database(':memory:');
  const statement = probe.prepare('select 1');
  probe.close();
  return statement;
}

describe('SQLite pruning', () => {
  it('deletes evictions ten minutes after the pruning instance read them, by id, and never the newest row', async () => {
    const database = await createTestDatabase('sqlite', [coreMigrations]);
    const other = connectTestDatabase(database);
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const mine = createCacheInvalidator({ db: database.db, pollIntervalMs: 3_600_000, clock });
    const theirs = createCacheInvalidator({ db: other.db, pollIntervalMs: 3_600_000 });
    const ids = async () => (await database.db('core_cache_invalidations').orderBy('id').pluck('id')).map(Number);
    const seen: string[] = [];
    /**
     * Another connection commits an eviction, and this instance looks until
     * it has read it: a look that reads is where a due prune starts.
     */
    const commitElsewhereAndRead = async (key: string) => {
      await theirs.invalidate('clients', key);
      await eventually(() => {
        mine.freshen();
        expect(seen.at(-1)).toBe(key);
      });
    };
    try {
      await mine.start();
      await theirs.start();
      mine.subscribe('clients', (key) => seen.push(key));
      await theirs.invalidate('clients', 'a');
      await theirs.invalidate('clients', 'b');
      await commitElsewhereAndRead('c');
      // The first prune notes the newest id read (3) and deletes nothing: nothing was read ten minutes ago.
      expect(await ids()).toEqual([1, 2, 3]);
      // At most one prune per interval: the next one notes the newest id read by then (5), still deleting nothing.
      clock.advance(PRUNE_INTERVAL_MS - 1);
      await commitElsewhereAndRead('d');
      clock.advance(1);
      await commitElsewhereAndRead('e');
      expect(await ids()).toEqual([1, 2, 3, 4, 5]);
      // Ten minutes after the first: the rows below the id it had read then go; that row and later ones stay.
      clock.advance(INVALIDATION_RETENTION_MS - PRUNE_INTERVAL_MS);
      await commitElsewhereAndRead('f');
      await eventually(async () => {
        expect(await ids()).toEqual([3, 4, 5, 6]);
      });

      // Whoever deletes, the newest row stays, so ids never go back and no reader misses the next eviction.
      await database.db('core_cache_invalidations').delete();
      expect(await ids()).toEqual([6]);
      await commitElsewhereAndRead('g');
      expect(await ids()).toEqual([6, 7]);
      expect(seen).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
    } finally {
      await mine.close();
      await theirs.close();
      await other.destroy();
      await database.destroy();
    }
  });
});

describe.each(testDialects())('migration 0005 on %s', (dialect) => {
  const upTo0004: MigrationSet = { ...coreMigrations, migrations: coreMigrations.migrations.slice(0, 4) };
  const migration0005 = coreMigrations.migrations.find((migration) => migration.name === '0005_cache_invalidations_rowid');

  it('keeps the rows and the ids handed out, drops the time index, and goes back down', async () => {
    const database = await createTestDatabase(dialect);
    const { db } = database;
    try {
      await runMigrations(db, [upTo0004]);
      const row = (key: string) => ({ origin: 'o', namespace: 'clients', key, created_at: new Date().toISOString() });
      const maxId = async () => Number((await db('core_cache_invalidations').max('id as id').first())?.id);
      await db('core_cache_invalidations').insert([row('a'), row('b'), row('c'), row('d')]);
      // The newest two are gone, as an older version's prune or a hand could leave it: 4 was still handed out.
      await db('core_cache_invalidations').where('id', '>', 2).delete();
      await runMigrations(db, [coreMigrations]);

      const rows = await db('core_cache_invalidations').orderBy('id').select('id', 'namespace', 'key');
      if (dialect === 'sqlite') {
        expect(rows.map((r) => [Number(r.id), r.namespace, r.key])).toEqual([
          [1, 'clients', 'a'],
          [2, 'clients', 'b'],
          [4, '', ''],
        ]);
      } else {
        expect(rows.map((r) => Number(r.id))).toEqual([1, 2]);
      }
      await db('core_cache_invalidations').insert(row('e'));
      expect(await maxId()).toBe(5);
      const indexes =
        dialect === 'sqlite'
          ? await db.raw("select name from sqlite_schema where type = 'index' and tbl_name = 'core_cache_invalidations'")
          : (await db.raw("select indexname as name from pg_indexes where tablename = 'core_cache_invalidations'")).rows;
      expect((indexes as Array<{ name: string }>).map((index) => index.name)).not.toContain(
        'core_cache_invalidations_created_at_index',
      );

      // Down: the table as 0004 made it, rows and index included.
      await db.transaction((trx) => migration0005?.down?.(trx));
      await db('core_cache_invalidations').insert(row('f'));
      expect(await maxId()).toBe(6);
      if (dialect === 'sqlite') {
        const [schema] = await db.raw("select sql from sqlite_schema where name = 'core_cache_invalidations'");
        expect(String(schema.sql)).toMatch(/autoincrement/i);
      }
    } finally {
      await database.destroy();
    }
  });
});

describe.each(testDialects())('invalidateMany on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('evicts every key of several namespaces in this instance and another, in one statement, at commit and never on rollback', async () => {
    const other = connectTestDatabase(database);
    const mine = createCacheInvalidator({ db: database.db, pollIntervalMs: 3_600_000 });
    const theirs = createCacheInvalidator({ db: other.db, pollIntervalMs: 3_600_000 });
    const statements: string[] = [];
    const capture = (query: { sql: string }) => {
      if (/pg_notify|insert into core_cache_invalidations/.test(query.sql)) statements.push(query.sql);
    };
    try {
      await mine.start();
      await theirs.start();
      const heard = { mine: [] as string[], theirs: [] as string[] };
      for (const namespace of ['sessions', 'revocations']) {
        mine.subscribe(namespace, (key) => heard.mine.push(`${namespace}/${key}`));
        theirs.subscribe(namespace, (key) => heard.theirs.push(`${namespace}/${key}`));
      }
      const evictions = [
        { namespace: 'revocations', key: 'session:s1' },
        { namespace: 'sessions', key: 's1' },
        { namespace: 'revocations', key: 'session:s2' },
      ];
      database.db.on('query', capture);
      await expect(
        database.db.transaction(async (trx) => {
          await mine.invalidateMany(evictions, trx);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await database.db.transaction(async (trx) => {
        await mine.invalidateMany(evictions, trx);
        expect(heard.mine).toEqual([]);
      });
      database.db.off('query', capture);
      const expected = ['revocations/session:s1', 'sessions/s1', 'revocations/session:s2'];
      await eventually(async () => {
        await theirs.freshen();
        expect(heard.theirs.sort()).toEqual([...expected].sort());
      });
      // Postgres hears its own notifications too; SQLite applies its own at commit.
      await eventually(() => expect(new Set(heard.mine)).toEqual(new Set(expected)));
      // Three evictions: one statement on Postgres (a padded list); on SQLite, rows in power-of-two statements.
      expect(statements).toHaveLength(dialect === 'postgres' ? 2 : 4);
      await mine.invalidateMany([]);
    } finally {
      database.db.off('query', capture);
      await mine.close();
      await theirs.close();
      await other.destroy();
    }
  });
});

describe.runIf(testDialects().includes('postgres'))('Postgres listener reconnect', () => {
  let database: TestDatabase;
  let admin: Knex;
  let name: string;
  beforeAll(async () => {
    database = await createTestDatabase('postgres', [coreMigrations]);
    admin = createDatabase(inject('postgresAdminUrl') as string);
    name = new URL(database.url).pathname.slice(1);
  });
  afterAll(async () => {
    await admin.raw(`alter database "${name}" allow_connections true`);
    await admin.destroy();
    await database.destroy();
  });

  /** Kills the listening connection of this test's database from the server side; resolves with how many. */
  const killListener = async () => {
    const result = await admin.raw(
      "select pg_terminate_backend(pid) from pg_stat_activity where datname = ? and query like 'LISTEN%'",
      [name],
    );
    return (result.rows as unknown[]).length;
  };

  it('reconnects with backoff through repeated failures, evicts everything, and hears NOTIFY again', async () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const timers = manualTimers();
    const invalidator = createCacheInvalidator({
      db: database.db,
      clock,
      setTimer: timers.setTimer,
      reconnectDelayMs: (attempt) => 100 * 2 ** attempt,
    });
    const other = connectTestDatabase(database);
    // Not started: it only sends (pg_notify on its own pool), so the only LISTEN on this database is the one under test.
    const notifier = createCacheInvalidator({ db: other.db });
    await invalidator.start();
    const seen: string[] = [];
    invalidator.subscribe('users', (key) => seen.push(key));
    try {
      expect(invalidator.isLive()).toBe(true);

      // First outage: the server kills the listener and refuses new connections for a while.
      await admin.raw(`alter database "${name}" allow_connections false`);
      expect(await killListener()).toBe(1);
      await eventually(() => expect(invalidator.isLive()).toBe(false));
      expect(seen).toEqual([ALL_KEYS]);

      // Every failed attempt schedules the next, doubling: the old code stopped after the first.
      for (let failed = 0; failed < 4; failed++) {
        await eventually(() => expect(timers.scheduled).toBe(1));
        timers.fire();
        await eventually(() => expect(timers.delays).toHaveLength(failed + 2));
      }
      expect(timers.delays).toEqual([100, 200, 400, 800, 1600]);
      expect(invalidator.isLive()).toBe(false);

      // While down, caches are emptied at most once a second, on freshen().
      seen.length = 0;
      expect(invalidator.freshen()).toBeUndefined();
      expect(seen).toEqual([]);
      clock.advance(1000);
      invalidator.freshen();
      expect(seen).toEqual([ALL_KEYS]);

      // The database comes back: the next attempt reconnects and evicts everything (notifications were missed).
      await admin.raw(`alter database "${name}" allow_connections true`);
      seen.length = 0;
      timers.fire();
      await eventually(() => expect(invalidator.isLive()).toBe(true));
      expect(seen).toEqual([ALL_KEYS]);
      expect(timers.scheduled).toBe(0);

      // A second kill right after: it reconnects again, the backoff starting over.
      seen.length = 0;
      expect(await killListener()).toBe(1);
      await eventually(() => expect(timers.scheduled).toBe(1));
      expect(timers.delays.at(-1)).toBe(100);
      timers.fire();
      await eventually(() => expect(invalidator.isLive()).toBe(true));
      expect(seen).toEqual([ALL_KEYS, ALL_KEYS]);

      // NOTIFY from another connection reaches the listener again.
      await notifier.invalidate('users', 'u1');
      await eventually(() => expect(seen).toContain('u1'));
    } finally {
      await invalidator.close();
      await notifier.close();
      await other.destroy();
    }
    expect(timers.scheduled).toBe(0);
  });

  it('stops retrying once closed', async () => {
    const timers = manualTimers();
    const invalidator = createCacheInvalidator({ db: database.db, setTimer: timers.setTimer });
    await invalidator.start();
    expect(await killListener()).toBe(1);
    await eventually(() => expect(timers.scheduled).toBe(1));
    await invalidator.close();
    expect(timers.scheduled).toBe(0);
    expect(invalidator.isLive()).toBe(false);
  });
});
