import type { Knex } from 'knex';
import { dialectOf } from '../db/database.js';
import { type Logger, silentLogger } from '../logger.js';

/** Wildcard key: every entry of the namespace (sent after a reconnect, when messages may have been missed). */
export const ALL_KEYS = '*';

/**
 * Spreads cache invalidations to every instance sharing the database:
 * Postgres `LISTEN/NOTIFY` (delivered at commit), in-process on SQLite.
 */
export interface CacheInvalidator {
  /**
   * Evicts `key` of `namespace` everywhere. Inside a transaction the
   * eviction happens when it commits, never before.
   */
  invalidate(namespace: string, key: string, trx?: Knex.Transaction): Promise<void>;
  /** Calls `listener` for every eviction of `namespace`; returns an unsubscribe function. */
  subscribe(namespace: string, listener: (key: string) => void): () => void;
  /** Starts listening (Postgres); resolves once the listener is ready. */
  start(): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'idt_cache_invalidation';

/** Options of {@link createCacheInvalidator}. */
export interface CacheInvalidatorOptions {
  readonly db: Knex;
  readonly logger?: Logger;
}

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

  return {
    async invalidate(namespace, key, trx) {
      if (isPostgres) {
        // Delivered to every listening instance, this one included, when the transaction commits.
        await (trx ?? db).raw('select pg_notify(?, ?)', [CHANNEL, JSON.stringify({ ns: namespace, key })]);
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
      if (isPostgres && !client && !closed) await connect();
    },
    async close() {
      closed = true;
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
