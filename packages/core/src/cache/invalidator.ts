import type { Knex } from 'knex';
import { type Clock, systemClock } from '../clock.js';
import { dialectOf } from '../db/database.js';
import { type Logger, silentLogger } from '../logger.js';
import type { CacheEviction, EvictionSink, InvalidationDriver } from './invalidation-driver.js';
import { createPostgresDriver, type SetTimer } from './postgres-driver.js';
import { createSqliteDriver } from './sqlite-driver.js';

export type { CacheEviction } from './invalidation-driver.js';
export type { SetTimer } from './postgres-driver.js';
export { DISTRUST_INTERVAL_MS, RECONNECT_MAX_DELAY_MS, reconnectDelayMs } from './postgres-driver.js';
export { FRESHEN_INTERVAL_MS } from './sqlite-driver.js';
export { INVALIDATION_RETENTION_MS, PRUNE_INTERVAL_MS } from './sqlite-pruner.js';

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

/**
 * Creates the invalidator: the subscribers of each namespace and a driver
 * per engine that carries evictions between instances, Postgres
 * `LISTEN/NOTIFY` (`postgres-driver.ts`) or SQLite's evictions table
 * (`sqlite-driver.ts`, pruned by `sqlite-pruner.ts`). Every eviction is
 * also emitted in this process when its transaction commits.
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
  const listeners = new Map<string, Set<(key: string) => void>>();
  let started = false;
  let closed = false;

  const sink: EvictionSink = {
    emit(namespace, key) {
      for (const listener of listeners.get(namespace) ?? []) {
        try {
          listener(key);
        } catch (error) {
          logger.error('cache invalidation listener failed', { namespace, error });
        }
      }
    },
    emitAll() {
      for (const namespace of listeners.keys()) sink.emit(namespace, ALL_KEYS);
    },
  };
  const driver: InvalidationDriver =
    dialectOf(db) === 'postgres'
      ? createPostgresDriver({ db, logger, clock, sink, reconnectDelayMs: options.reconnectDelayMs, setTimer: options.setTimer })
      : createSqliteDriver({ db, logger, clock, sink, pollIntervalMs: options.pollIntervalMs ?? 1000 });

  async function invalidateMany(evictions: ReadonlyArray<CacheEviction>, trx?: Knex.Transaction): Promise<void> {
    if (evictions.length === 0) return;
    await driver.send(evictions, trx);
    const emitEach = () => {
      for (const emitTo of driver.inProcess()) for (const { namespace, key } of evictions) emitTo(namespace, key);
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
      return started && !closed && driver.isConnected();
    },
    freshen() {
      if (!started || closed) return undefined;
      return driver.freshen();
    },
    async start() {
      if (closed || started) return;
      await driver.start();
      started = true;
    },
    async close() {
      closed = true;
      await driver.close();
    },
  };
}
