import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { dialectOf } from '../db/database.js';
import { type Logger, silentLogger } from '../logger.js';

/** Wildcard key: every entry of the namespace (sent after a reconnect, when messages may have been missed). */
export const ALL_KEYS = '*';

/**
 * Spreads cache invalidations to every instance sharing the database:
 * Postgres `LISTEN/NOTIFY` (delivered at commit); on SQLite, in-process at
 * once and to other processes on the same file (the `idt` CLI, a second
 * server) through the `core_cache_invalidations` table, polled every second.
 */
export interface CacheInvalidator {
  /**
   * Evicts `key` of `namespace` everywhere. Inside a transaction the
   * eviction happens when it commits, never before.
   */
  invalidate(namespace: string, key: string, trx?: Knex.Transaction): Promise<void>;
  /** Calls `listener` for every eviction of `namespace`; returns an unsubscribe function. */
  subscribe(namespace: string, listener: (key: string) => void): () => void;
  /** Starts listening (Postgres) or polling (SQLite); resolves once ready. */
  start(): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'idt_cache_invalidation';

/** Options of {@link createCacheInvalidator}. */
export interface CacheInvalidatorOptions {
  readonly db: Knex;
  readonly logger?: Logger;
  /** How often SQLite instances look for other processes' evictions, in milliseconds (default 1000). */
  readonly pollIntervalMs?: number;
}

const TABLE = 'core_cache_invalidations';

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
  const isPostgres = dialectOf(db) === 'postgres';
  const listeners = new Map<string, Set<(key: string) => void>>();
  const origin = randomUUID();
  let lastSeen = 0;
  let poller: NodeJS.Timeout | undefined;
  let polling = false;
  let client: PgClient | undefined;
  let closed = false;
  let reconnectTimer: NodeJS.Timeout | undefined;

  const emit = (namespace: string, key: string) => {
    for (const listener of listeners.get(namespace) ?? []) {
      try {
        listener(key);
      } catch (error) {
        logger.error('cache invalidation listener failed', { namespace, error });
      }
    }
  };
  const emitAll = () => {
    for (const namespace of listeners.keys()) emit(namespace, ALL_KEYS);
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
    const onLost = (error?: Error) => {
      if (closed || client !== raw) return;
      client = undefined;
      logger.warn('cache invalidation listener lost its connection; reconnecting', { error });
      raw.removeAllListeners();
      raw.end().catch(() => undefined);
      emitAll();
      reconnectTimer = setTimeout(() => void connect().catch(() => onLost()), 1000);
      reconnectTimer.unref();
    };
    raw.on('error', onLost);
    raw.on('end', onLost);
    await raw.query(`LISTEN ${CHANNEL}`);
    client = raw;
  }

  async function poll(): Promise<void> {
    if (polling) return;
    polling = true;
    try {
      const rows = (await db(TABLE)
        .where('id', '>', lastSeen)
        .orderBy('id')
        .limit(1000)
        .select('id', 'origin', 'namespace', 'key')) as Array<{
        id: number;
        origin: string;
        namespace: string;
        key: string;
      }>;
      for (const row of rows) {
        lastSeen = Math.max(lastSeen, Number(row.id));
        if (row.origin !== origin) emit(row.namespace, row.key);
      }
      if (Math.random() < 0.02) {
        await db(TABLE)
          .where('created_at', '<', new Date(Date.now() - 600_000).toISOString())
          .delete();
      }
    } catch (error) {
      logger.warn('polling cache invalidations failed', { error });
    } finally {
      polling = false;
    }
  }

  return {
    async invalidate(namespace, key, trx) {
      if (isPostgres) {
        // Delivered to every listening instance, this one included, when the transaction commits.
        await (trx ?? db).raw('select pg_notify(?, ?)', [CHANNEL, JSON.stringify({ ns: namespace, key })]);
      } else {
        // Other processes on the same SQLite file pick this row up when they poll.
        await (trx ?? db)(TABLE).insert({ origin, namespace, key: key.slice(0, 400), created_at: new Date().toISOString() });
      }
      if (trx) {
        const execution = (trx as unknown as { executionPromise?: Promise<unknown> }).executionPromise;
        if (execution) {
          execution.then(
            () => emit(namespace, key),
            () => undefined,
          );
          return;
        }
      }
      emit(namespace, key);
    },
    subscribe(namespace, listener) {
      const set = listeners.get(namespace) ?? new Set();
      set.add(listener);
      listeners.set(namespace, set);
      return () => set.delete(listener);
    },
    async start() {
      if (closed) return;
      if (isPostgres) {
        if (!client) await connect();
        return;
      }
      if (poller) return;
      const latest = (await db(TABLE).max({ id: 'id' }).first()) as { id: number | null } | undefined;
      lastSeen = Number(latest?.id ?? 0);
      poller = setInterval(() => void poll(), options.pollIntervalMs ?? 1000);
      poller.unref();
    },
    async close() {
      closed = true;
      if (poller) clearInterval(poller);
      poller = undefined;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      const current = client;
      client = undefined;
      if (current) {
        current.removeAllListeners();
        await current.end().catch(() => undefined);
      }
    },
  };
}
