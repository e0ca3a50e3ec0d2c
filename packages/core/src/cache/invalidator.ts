import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { type Clock, systemClock } from '../clock.js';
import { dialectOf } from '../db/database.js';
import { listStatement, runListStatement, runStatement, selectRowsIfIdle } from '../db/statements.js';
import { type Logger, silentLogger } from '../logger.js';

/** Wildcard key: every entry of the namespace (sent after a reconnect, when messages may have been missed). */
export const ALL_KEYS = '*';

/**
 * A listener that evicts what it is told from `cache`: the key, or every
 * entry for {@link ALL_KEYS}.
 *
 * @example
 * invalidator.subscribe('clients', evictFrom(clients));
 */
export function evictFrom(cache: { delete(key: string): void; clear(): void }): (key: string) => void {
  return (key) => (key === ALL_KEYS ? cache.clear() : cache.delete(key));
}

/**
 * Spreads cache invalidations to every instance sharing the database:
 * Postgres `LISTEN/NOTIFY` (delivered at commit); on SQLite, in-process at
 * once (to every invalidator on the same knex instance) and to other
 * processes on the same file (the `idt` CLI, a second server) through the
 * `core_cache_invalidations` table, read whenever `PRAGMA data_version` says
 * another process committed (looked at on every
 * {@link CacheInvalidator.freshen}, at most every 2 ms), and every second
 * past this process's own rows.
 *
 * When the Postgres listening connection is lost, it reconnects with
 * exponential backoff until it succeeds or the invalidator is closed. While
 * it is down, every subscriber is sent {@link ALL_KEYS} at once and then at
 * most every second (on `freshen`), so caches keep nothing for longer than a
 * second; after reconnecting, once more, because notifications were missed.
 */
export interface CacheInvalidator {
  /**
   * Evicts `key` of `namespace` everywhere. Inside a transaction the
   * eviction happens when it commits, never before.
   */
  invalidate(namespace: string, key: string, trx?: Knex.Transaction): Promise<void>;
  /**
   * Evicts several keys, of one namespace or several, as {@link invalidate}
   * does for each, in one statement (a round trip on Postgres) where
   * `invalidate` runs one per key.
   *
   * @example
   * await invalidator.invalidateMany([{ namespace: 'sessions', key: id }, { namespace: 'revocations', key: `session:${id}` }], trx);
   */
  invalidateMany(evictions: ReadonlyArray<CacheEviction>, trx?: Knex.Transaction): Promise<void>;
  /** Calls `listener` for every eviction of `namespace`; returns an unsubscribe function. */
  subscribe(namespace: string, listener: (key: string) => void): () => void;
  /**
   * Whether other processes' evictions are being received: false before
   * `start`, after `close`, and while the Postgres listener reconnects.
   * Caches that are not evicted through {@link subscribe} should not trust
   * their entries while it is false.
   */
  isLive(): boolean;
  /**
   * Call before serving a request that consults a cache. On SQLite, when
   * another process committed since the last look (one `PRAGMA data_version`),
   * reads its evictions and resolves once they are applied. On Postgres,
   * where notifications arrive by themselves, it costs nothing and returns
   * `undefined`, except while the listener is down: then every cache is
   * evicted once a second.
   */
  freshen(): Promise<void> | undefined;
  /** Starts listening (Postgres) or watching the file (SQLite); resolves once ready. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** One eviction of {@link CacheInvalidator.invalidateMany}: `key` of `namespace`, or all of it for {@link ALL_KEYS}. */
export interface CacheEviction {
  readonly namespace: string;
  readonly key: string;
}

const CHANNEL = 'idt_cache_invalidation';
/**
 * Postgres: evictions, each sent to every listener when the statement's
 * transaction commits. A list padded with its last item sends nothing twice:
 * Postgres delivers identical notifications of one transaction once.
 */
const NOTIFY = listStatement((notifications) => `select ${notifications}`, { kind: 'in', item: 'pg_notify(?, ?)' });

/** While the listener is down, caches are emptied at most this often, in milliseconds. */
export const DISTRUST_INTERVAL_MS = 1000;

/** The longest wait between two reconnect attempts: the channel is back at most this long after the database. */
export const RECONNECT_MAX_DELAY_MS = 2000;

/**
 * The default wait before reconnect attempt `attempt` (0, 1, …): 100 ms
 * doubling up to {@link RECONNECT_MAX_DELAY_MS}, with jitter (a random half
 * to the whole of it), so instances that lost the database together do not
 * reconnect in lockstep.
 */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(RECONNECT_MAX_DELAY_MS, 100 * 2 ** Math.min(attempt, 16));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

/** Runs `run` after `ms` milliseconds; returns a function that cancels it. */
export type SetTimer = (run: () => void, ms: number) => () => void;

const unrefTimer: SetTimer = (run, ms) => {
  const timer = setTimeout(run, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

/** Options of {@link createCacheInvalidator}. */
export interface CacheInvalidatorOptions {
  readonly db: Knex;
  readonly logger?: Logger;
  /** How often SQLite instances look for other processes' evictions without a request asking, in milliseconds (default 1000). */
  readonly pollIntervalMs?: number;
  /**
   * What the once-a-second eviction while the listener is down and the
   * pruning of SQLite's eviction rows are measured by; the system clock by default.
   */
  readonly clock?: Clock;
  /** The wait before each reconnect attempt of the Postgres listener; {@link reconnectDelayMs} by default. */
  readonly reconnectDelayMs?: (attempt: number) => number;
  /** Schedules reconnect attempts; `setTimeout` (unref'd) by default. Tests pass one they fire by hand. */
  readonly setTimer?: SetTimer;
}

const TABLE = 'core_cache_invalidations';
/** The eviction rows every SQLite write that changes a cached record adds (fixed, past knex's builder). */
const INSERT = listStatement((rows) => `insert into ${TABLE} (origin, namespace, key, created_at) values ${rows}`, {
  kind: 'values',
  item: '(?, ?, ?, ?)',
});
/** The longest key an SQLite eviction row keeps. */
const MAX_KEY_LENGTH = 400;
/** Deletes the evictions below an id; the table's trigger keeps the newest row whatever the id (migration 0005). */
const PRUNE_SQL = `delete from ${TABLE} where id < ?`;

/** How long an SQLite eviction row is kept after the instance that prunes had read it, in milliseconds. */
export const INVALIDATION_RETENTION_MS = 600_000;

/** How often an SQLite instance prunes old eviction rows, at most, in milliseconds. */
export const PRUNE_INTERVAL_MS = 10_000;

interface PgClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): void;
  on(event: 'error' | 'end', listener: (error?: Error) => void): void;
  removeAllListeners(): void;
  end(): Promise<void>;
}

/**
 * Creates the invalidator.
 *
 * @example
 * const invalidator = createCacheInvalidator({ db });
 * await invalidator.start();
 * invalidator.subscribe('users', (id) => users.delete(id));
 * await db.transaction(async (trx) => { …; await invalidator.invalidate('users', id, trx); });
 */
export function createCacheInvalidator(options: CacheInvalidatorOptions): CacheInvalidator {
  const { db } = options;
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const delayOf = options.reconnectDelayMs ?? ((attempt: number) => reconnectDelayMs(attempt));
  const setTimer = options.setTimer ?? unrefTimer;
  const isPostgres = dialectOf(db) === 'postgres';
  const listeners = new Map<string, Set<(key: string) => void>>();
  // SQLite: the instances on this knex pool (this one included) and the origin they write their rows as.
  const peers = isPostgres ? undefined : peersOn(db);
  const origin = peers?.origin ?? randomUUID();
  let started = false;
  let closed = false;
  // SQLite: the last row read, the file's data_version at the last look, reads in order.
  let lastSeen = 0;
  let dataVersion: number | undefined;
  let reads: Promise<void> = Promise.resolve();
  let reading = false;
  let lastLook = Number.NEGATIVE_INFINITY;
  // SQLite: when the next prune is due (clock time), and the newest id read at each prune (oldest first).
  let nextPruneAt = Number.NEGATIVE_INFINITY;
  const pruneMarks: Array<{ at: number; id: number }> = [];
  let watcher: SqliteWatcher | undefined;
  /** The watcher's prepared read of new evictions (SQLite with a file). */
  let readSince: { all(lastSeen: number): unknown[] } | undefined;
  /** The watcher's `PRAGMA data_version`, prepared once (better-sqlite3's `pragma()` prepares it on every call). */
  let dataVersionOf: { get(): unknown } | undefined;
  /** Per connection of knex's pool (one, as idt opens SQLite): its data version at the last look. */
  const poolVersions = new WeakMap<object, number>();
  let poller: NodeJS.Timeout | undefined;
  let watching = false;
  // Postgres: the listening connection while it is up, the pending reconnect, when caches were last emptied.
  let client: PgClient | undefined;
  let attempt = 0;
  let cancelReconnect: (() => void) | undefined;
  let distrustedAt = 0;

  const emit = (namespace: string, key: string) => {
    for (const listener of listeners.get(namespace) ?? []) {
      try {
        listener(key);
      } catch (error) {
        logger.error('cache invalidation listener failed', { namespace, error });
      }
    }
  };
  peers?.emits.add(emit);
  const emitAll = () => {
    for (const namespace of listeners.keys()) emit(namespace, ALL_KEYS);
  };
  const distrust = () => {
    distrustedAt = clock.now().getTime();
    emitAll();
  };

  async function connect(): Promise<void> {
    const raw = (await (db.client as { acquireRawConnection(): Promise<PgClient> }).acquireRawConnection()) as PgClient;
    raw.on('notification', (message) => {
      if (message.channel !== CHANNEL || !message.payload) return;
      try {
        const { ns, key } = JSON.parse(message.payload) as { ns: string; key: string };
        emit(ns, key);
      } catch {
        logger.warn('ignored a malformed cache invalidation', { payload: message.payload });
      }
    });
    const onLost = (error?: Error) => lost(raw, error);
    raw.on('error', onLost);
    raw.on('end', onLost);
    try {
      await raw.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      release(raw);
      throw error;
    }
    if (closed) {
      release(raw);
      return;
    }
    client = raw;
  }

  function release(raw: PgClient) {
    raw.removeAllListeners();
    // A late error of a connection given up must not be an unhandled 'error' event.
    raw.on('error', () => undefined);
    raw.end().catch(() => undefined);
  }

  function lost(raw: PgClient, error?: Error) {
    if (closed || client !== raw) return;
    client = undefined;
    logger.warn('cache invalidation listener lost its connection; reconnecting', { error });
    release(raw);
    distrust();
    scheduleReconnect();
  }

  function scheduleReconnect() {
    if (closed || cancelReconnect) return;
    const delay = delayOf(attempt++);
    cancelReconnect = setTimer(() => {
      cancelReconnect = undefined;
      void reconnect();
    }, delay);
  }

  async function reconnect(): Promise<void> {
    if (closed || client) return;
    try {
      await connect();
    } catch (error) {
      logger.warn('cache invalidation listener could not reconnect; retrying', { error, attempt });
      scheduleReconnect();
      return;
    }
    if (!client) return;
    logger.info('cache invalidation listener reconnected', { attempts: attempt });
    attempt = 0;
    // Notifications sent while it was down are lost: nothing cached can be trusted.
    distrust();
  }

  /** Emits the evictions of other processes among `rows`; whether a full batch was read (more may follow). */
  function applyRows(rows: InvalidationRow[]): boolean {
    for (const row of rows) {
      lastSeen = Math.max(lastSeen, Number(row.id));
      if (row.origin !== origin) emit(row.namespace, row.key);
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

  /** Reads the evictions other processes wrote since the last read (SQLite). */
  async function readNew(): Promise<void> {
    try {
      for (;;) {
        const rows = (await db(TABLE)
          .where('id', '>', lastSeen)
          .orderBy('id')
          .limit(READ_BATCH)
          .select('id', 'origin', 'namespace', 'key')) as InvalidationRow[];
        if (!applyRows(rows)) break;
      }
      if (pruneDue()) await pruneOld();
    } catch (error) {
      // Look again next time, whatever data_version says.
      dataVersion = undefined;
      logger.warn('reading cache invalidations failed', { error });
    }
  }

  /** Whether this instance's next prune is due (at most one every {@link PRUNE_INTERVAL_MS}). */
  function pruneDue(): boolean {
    const now = clock.now().getTime();
    if (now < nextPruneAt) return false;
    nextPruneAt = now + PRUNE_INTERVAL_MS;
    return true;
  }

  /**
   * Notes the newest id read so far, and deletes the evictions below the
   * newest id it had read {@link INVALIDATION_RETENTION_MS} ago or earlier:
   * ids grow with commits, so those rows are older than that, and every
   * process watching the file has read them. A range of the primary key,
   * with no index on the time to keep up at every write.
   */
  async function pruneOld(): Promise<void> {
    const now = clock.now().getTime();
    pruneMarks.push({ at: now, id: lastSeen });
    let below = 0;
    while (pruneMarks.length > 0 && now - (pruneMarks[0]?.at ?? now) >= INVALIDATION_RETENTION_MS) {
      below = pruneMarks.shift()?.id ?? below;
    }
    if (below <= 0) return;
    try {
      await runStatement(db, PRUNE_SQL, [below]);
    } catch (error) {
      logger.warn('pruning cache invalidations failed', { error });
    }
  }

  /**
   * SQLite: the file's data version, read synchronously on a connection of
   * its own (about a microsecond, no pool round trip); through the pool when
   * there is none (an in-memory database, which no other process can change).
   */
  function currentDataVersion(): number | Promise<number> {
    if (dataVersionOf) return Number(dataVersionOf.get());
    return (db.raw('PRAGMA data_version') as Promise<Array<{ data_version: number }>>).then((rows) =>
      Number(rows[0]?.data_version),
    );
  }

  /**
   * SQLite: whether another process committed since the last look, read on
   * the pool's idle connection: a connection's data version moves with the
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
   * SQLite: one pragma; when another process committed since the last look,
   * reads the evictions it wrote. `undefined` (no promise) when nothing
   * changed and no read is under way: the hot path. `ownCommitsToo` (the
   * once-a-second poll) looks on the watcher, whose version moves with this
   * process's commits as well, so the rows this process wrote are read past
   * at least once a second and never pile up for the next read.
   */
  function freshenSqlite(ownCommitsToo = false): Promise<void> | undefined {
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
        if (pruneDue()) reads = reads.then(pruneOld);
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

  async function invalidateMany(evictions: ReadonlyArray<CacheEviction>, trx?: Knex.Transaction): Promise<void> {
    if (evictions.length === 0) return;
    if (isPostgres) {
      // Delivered to every listening instance, this one included, when the transaction commits.
      await runListStatement(
        trx ?? db,
        NOTIFY,
        [],
        evictions.flatMap(({ namespace, key }) => [CHANNEL, JSON.stringify({ ns: namespace, key })]),
      );
    } else {
      // Other processes on the same SQLite file read these rows on their next request.
      const at = clock.now().toISOString();
      await runListStatement(
        trx ?? db,
        INSERT,
        [],
        evictions.flatMap(({ namespace, key }) => [origin, namespace, key.slice(0, MAX_KEY_LENGTH), at]),
      );
    }
    // SQLite: every instance on this pool hears it here, since none reads rows of its own origin back.
    const emitEach = () => {
      for (const emitTo of peers?.emits ?? [emit]) for (const { namespace, key } of evictions) emitTo(namespace, key);
    };
    const execution = trx ? (trx as unknown as { executionPromise?: Promise<unknown> }).executionPromise : undefined;
    if (execution) execution.then(emitEach, () => undefined);
    else emitEach();
  }

  return {
    invalidate(namespace, key, trx) {
      return invalidateMany([{ namespace, key }], trx);
    },
    invalidateMany,
    subscribe(namespace, listener) {
      const set = listeners.get(namespace) ?? new Set();
      set.add(listener);
      listeners.set(namespace, set);
      return () => set.delete(listener);
    },
    isLive() {
      return started && !closed && (!isPostgres || client !== undefined);
    },
    freshen() {
      if (!started || closed) return undefined;
      if (!isPostgres) return freshenSqlite();
      if (!client && clock.now().getTime() - distrustedAt >= DISTRUST_INTERVAL_MS) distrust();
      return undefined;
    },
    async start() {
      if (closed || started) return;
      if (isPostgres) {
        await connect();
        started = true;
        return;
      }
      watcher = await openWatcher(db, logger);
      readSince = prepareReadSince(watcher, logger);
      dataVersionOf = watcher?.prepare('PRAGMA data_version').pluck();
      dataVersion = await currentDataVersion();
      // Before the newest id: a commit in between is then both read and seen as another process's.
      otherProcessCommitted();
      const latest = (await db(TABLE).max({ id: 'id' }).first()) as { id: number | null } | undefined;
      lastSeen = Number(latest?.id ?? 0);
      started = true;
      poller = setInterval(() => {
        if (watching) return;
        watching = true;
        void Promise.resolve(freshenSqlite(true)).finally(() => {
          watching = false;
        });
      }, options.pollIntervalMs ?? 1000);
      poller.unref();
    },
    async close() {
      closed = true;
      peers?.emits.delete(emit);
      watcher?.close();
      watcher = undefined;
      readSince = undefined;
      dataVersionOf = undefined;
      if (poller) clearInterval(poller);
      poller = undefined;
      cancelReconnect?.();
      cancelReconnect = undefined;
      const current = client;
      client = undefined;
      if (current) {
        current.removeAllListeners();
        current.on('error', () => undefined);
        await current.end().catch(() => undefined);
      }
    },
  };
}

/** SQLite: the invalidators sharing one knex pool, and the origin their eviction rows carry. */
interface Peers {
  readonly origin: string;
  readonly emits: Set<(namespace: string, key: string) => void>;
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

/**
 * A read-only better-sqlite3 connection to the database file, used only to
 * read `PRAGMA data_version` synchronously: its value changes whenever any
 * other connection (this process's pool included) commits. `undefined` for an
 * in-memory database or when it cannot be opened (the pool is used then).
 */
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
      `select id, origin, namespace, key from ${TABLE} where id > ? order by id limit ${READ_BATCH}`,
    );
    return { all: (lastSeen) => statement.all(lastSeen) };
  } catch (error) {
    logger.warn('preparing the read of cache invalidations on the watcher failed; reading through the pool', { error });
    return undefined;
  }
}

/** The optional peer dependency, named through a constant: its types are not a dependency of core. */
const SQLITE_DRIVER = 'better-sqlite3';

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
