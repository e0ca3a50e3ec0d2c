import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { listStatement, runListStatement, selectRowsIfIdle } from '../db/statements.js';
import type { Logger } from '../logger.js';
import { type EmitEviction, type EvictionSink, INVALIDATIONS_TABLE, type InvalidationDriver } from './invalidation-driver.js';
import { createInvalidationPruner } from './sqlite-pruner.js';

/** The eviction rows every SQLite write that changes a cached record adds (fixed, past knex's builder). */
const INSERT = listStatement((rows) => `insert into ${INVALIDATIONS_TABLE} (origin, namespace, key, created_at) values ${rows}`, {
  kind: 'values',
  item: '(?, ?, ?, ?)',
});
/** The longest key an SQLite eviction row keeps. */
const MAX_KEY_LENGTH = 400;

/**
 * SQLite: how long one look at the file's data version serves: a change
 * another process committed earlier than this is seen by the next request.
 */
export const FRESHEN_INTERVAL_MS = 2;

/** Rows of evictions read at once. */
const READ_BATCH = 1000;

/** A row of the evictions table. */
interface InvalidationRow {
  id: number;
  origin: string;
  namespace: string;
  key: string;
}

/** Options of {@link createSqliteDriver}. */
export interface SqliteDriverOptions {
  readonly db: Knex;
  readonly logger: Logger;
  /** What the pruning of eviction rows is measured by. */
  readonly clock: Clock;
  readonly sink: EvictionSink;
  /** How often it looks for other processes' evictions without a request asking, in milliseconds. */
  readonly pollIntervalMs: number;
}

/**
 * SQLite: evictions reach every invalidator on the same knex instance at
 * commit, and other processes on the same file (the `idt` CLI, a second
 * server) through the `core_cache_invalidations` table, read whenever
 * `PRAGMA data_version` says another process committed (looked at on every
 * `freshen`, at most every {@link FRESHEN_INTERVAL_MS}), and every
 * `pollIntervalMs` past this process's own rows. Rows every process has read
 * are pruned (`sqlite-pruner.ts`).
 */
export function createSqliteDriver(options: SqliteDriverOptions): InvalidationDriver {
  const { db, logger, sink } = options;
  // The instances on this knex pool (this one included) and the origin they write their rows as.
  const peers = peersOn(db);
  const { origin } = peers;
  peers.emits.add(sink.emit);
  const pruner = createInvalidationPruner(options);
  // The last row read, the file's data_version at the last look, reads in order.
  let lastSeen = 0;
  let dataVersion: number | undefined;
  let reads: Promise<void> = Promise.resolve();
  let reading = false;
  let lastLook = Number.NEGATIVE_INFINITY;
  let watcher: SqliteWatcher | undefined;
  /** The watcher's prepared read of new evictions (SQLite with a file). */
  let readSince: { all(lastSeen: number): unknown[] } | undefined;
  /** The watcher's `PRAGMA data_version`, prepared once (better-sqlite3's `pragma()` prepares it on every call). */
  let dataVersionOf: { get(): unknown } | undefined;
  /** Per connection of knex's pool (one, as idt opens SQLite): its data version at the last look. */
  const poolVersions = new WeakMap<object, number>();
  let poller: NodeJS.Timeout | undefined;
  let watching = false;

  /** Emits the evictions of other processes among `rows`; whether a full batch was read (more may follow). */
  function applyRows(rows: InvalidationRow[]): boolean {
    for (const row of rows) {
      lastSeen = Math.max(lastSeen, Number(row.id));
      if (row.origin !== origin) sink.emit(row.namespace, row.key);
    }
    return rows.length >= READ_BATCH;
  }

  /**
   * Reads the new evictions on the watcher connection, synchronously (a prepared
   * statement on WAL's latest commit: microseconds, no pool round trip); `false`
   * when there is no watcher or the read failed (the pool reads then).
   */
  function readNewSync(): boolean {
    if (!readSince) return false;
    try {
      while (applyRows(readSince.all(lastSeen) as InvalidationRow[]));
      return true;
    } catch (error) {
      logger.warn('reading cache invalidations on the watcher failed; reading through the pool', { error });
      return false;
    }
  }

  /** Reads the evictions other processes wrote since the last read. */
  async function readNew(): Promise<void> {
    try {
      for (;;) {
        const rows = (await db(INVALIDATIONS_TABLE)
          .where('id', '>', lastSeen)
          .orderBy('id')
          .limit(READ_BATCH)
          .select('id', 'origin', 'namespace', 'key')) as InvalidationRow[];
        if (!applyRows(rows)) break;
      }
      if (pruner.due()) await pruner.prune(lastSeen);
    } catch (error) {
      // Look again next time, whatever data_version says.
      dataVersion = undefined;
      logger.warn('reading cache invalidations failed', { error });
    }
  }

  /**
   * The file's data version, read synchronously on a connection of its own
   * (about a microsecond, no pool round trip); through the pool when there is
   * none (an in-memory database, which no other process can change).
   */
  function currentDataVersion(): number | Promise<number> {
    if (dataVersionOf) return Number(dataVersionOf.get());
    return (db.raw('PRAGMA data_version') as Promise<Array<{ data_version: number }>>).then((rows) =>
      Number(rows[0]?.data_version),
    );
  }

  /**
   * Whether another process committed since the last look, read on the
   * pool's idle connection: a connection's data version moves with the
   * commits of every other connection, never with its own, so this
   * process's writes through the pool leave it as it was. `undefined` when
   * that cannot tell: the connection is busy, or is looked at for the first
   * time.
   */
  function otherProcessCommitted(): boolean | undefined {
    let read: ReturnType<typeof selectRowsIfIdle>;
    try {
      read = selectRowsIfIdle(db, 'PRAGMA data_version');
    } catch {
      return undefined;
    }
    if (!read) return undefined;
    const version = Number(read.rows[0]?.[0]);
    const previous = poolVersions.get(read.connection);
    poolVersions.set(read.connection, version);
    return previous === undefined ? undefined : previous !== version;
  }

  /**
   * One pragma; when another process committed since the last look, reads
   * the evictions it wrote. `undefined` (no promise) when nothing changed
   * and no read is under way: the hot path. `ownCommitsToo` (the poll)
   * looks on the watcher, whose version moves with this process's commits
   * as well, so the rows this process wrote are read past at least once a
   * poll interval and never pile up for the next read.
   */
  function freshen(ownCommitsToo = false): Promise<void> | undefined {
    // A commit is seen by every request that starts more than FRESHEN_INTERVAL_MS after it; the pragma
    // costs tens of microseconds under load, so it runs at most once per interval, not on every request.
    // The poll always looks: requests arriving every 2 ms or less would otherwise keep it from ever reading.
    const now = performance.now();
    if (!ownCommitsToo && now - lastLook < FRESHEN_INTERVAL_MS) return reading ? reads : undefined;
    lastLook = now;
    // This process's own commits need no read: their evictions were applied when they committed.
    if (!ownCommitsToo && !reading && otherProcessCommitted() === false) return undefined;
    let version: number | Promise<number>;
    try {
      version = currentDataVersion();
    } catch (error) {
      logger.warn('reading the data version failed', { error });
      return undefined;
    }
    if (typeof version !== 'number')
      return version.then(afterVersion, (error: unknown) => logger.warn('reading the data version failed', { error }));
    if (version === dataVersion && !reading) return undefined;
    return afterVersion(version);
  }

  function afterVersion(version: number): Promise<void> | undefined {
    if (version !== dataVersion) {
      dataVersion = version;
      // The watcher's version moves with this process's commits too (the poll, a busy pool connection):
      // read on the watcher, without a pool query.
      if (!reading && readSince && readNewSync()) {
        if (pruner.due()) reads = reads.then(() => pruner.prune(lastSeen));
        return undefined;
      }
      reading = true;
      const read = reads.then(readNew);
      reads = read;
      void read.finally(() => {
        if (reads === read) reading = false;
      });
    }
    // A read another request started (after the same commit) may still be running: wait for it too.
    return reads;
  }

  return {
    async send(evictions, trx) {
      // Other processes on the same SQLite file read these rows on their next request.
      const at = options.clock.now().toISOString();
      await runListStatement(
        trx ?? db,
        INSERT,
        [],
        evictions.flatMap(({ namespace, key }) => [origin, namespace, key.slice(0, MAX_KEY_LENGTH), at]),
      );
    },
    // Every instance on this pool hears it at commit, since none reads rows of its own origin back.
    inProcess: () => peers.emits,
    isConnected: () => true,
    freshen: () => freshen(),
    async start() {
      watcher = await openWatcher(db, logger);
      readSince = prepareReadSince(watcher, logger);
      dataVersionOf = watcher?.prepare('PRAGMA data_version').pluck();
      dataVersion = await currentDataVersion();
      // Before the newest id: a commit in between is then both read and seen as another process's.
      otherProcessCommitted();
      const latest = (await db(INVALIDATIONS_TABLE).max({ id: 'id' }).first()) as { id: number | null } | undefined;
      lastSeen = Number(latest?.id ?? 0);
      poller = setInterval(() => {
        if (watching) return;
        watching = true;
        void Promise.resolve(freshen(true)).finally(() => {
          watching = false;
        });
      }, options.pollIntervalMs);
      poller.unref();
    },
    async close() {
      peers.emits.delete(sink.emit);
      watcher?.close();
      watcher = undefined;
      readSince = undefined;
      dataVersionOf = undefined;
      if (poller) clearInterval(poller);
      poller = undefined;
    },
  };
}

/** The invalidators sharing one knex pool, and the origin their eviction rows carry. */
interface Peers {
  readonly origin: string;
  readonly emits: Set<EmitEviction>;
}

/** By knex client: one per knex instance, holding its pool. */
const peersByClient = new WeakMap<object, Peers>();

/**
 * The peers of invalidators on `db`'s pool. Instances in one process on one
 * pool (two compositions over one knex instance) share a connection, whose
 * data version never moves with their commits: they are one origin, and each
 * one's evictions are emitted to all of them at commit.
 */
function peersOn(db: Knex): Peers {
  const client = db.client as object;
  let peers = peersByClient.get(client);
  if (!peers) {
    peers = { origin: randomUUID(), emits: new Set() };
    peersByClient.set(client, peers);
  }
  return peers;
}

/** The parts of a better-sqlite3 connection the SQLite watcher uses. */
interface SqliteWatcher {
  prepare(source: string): { all(...parameters: unknown[]): unknown[]; pluck(): { get(): unknown } };
  close(): unknown;
}

/** The watcher's read of evictions after an id, prepared once; `undefined` when it cannot be prepared (e.g. before migrations). */
function prepareReadSince(watcher: SqliteWatcher | undefined, logger: Logger): { all(lastSeen: number): unknown[] } | undefined {
  if (!watcher) return undefined;
  try {
    const statement = watcher.prepare(
      `select id, origin, namespace, key from ${INVALIDATIONS_TABLE} where id > ? order by id limit ${READ_BATCH}`,
    );
    return { all: (lastSeen) => statement.all(lastSeen) };
  } catch (error) {
    logger.warn('preparing the read of cache invalidations on the watcher failed; reading through the pool', { error });
    return undefined;
  }
}

/** The optional peer dependency, named through a constant: its types are not a dependency of core. */
const SQLITE_DRIVER = 'better-sqlite3';

/**
 * A read-only better-sqlite3 connection to the database file, used only to
 * read `PRAGMA data_version` synchronously: its value changes whenever any
 * other connection (this process's pool included) commits. `undefined` for an
 * in-memory database or when it cannot be opened (the pool is used then).
 */
async function openWatcher(db: Knex, logger: Logger): Promise<SqliteWatcher | undefined> {
  const filename = (db.client as { config?: { connection?: { filename?: string } } }).config?.connection?.filename;
  if (!filename || filename === ':memory:') return undefined;
  try {
    const { default: Database } = (await import(SQLITE_DRIVER)) as {
      default: new (file: string, options: { readonly: boolean; fileMustExist: boolean }) => SqliteWatcher;
    };
    return new Database(filename, { readonly: true, fileMustExist: true });
  } catch (error) {
    logger.warn("watching the SQLite file for other processes' changes falls back to the pool", { error });
    return undefined;
  }
}
