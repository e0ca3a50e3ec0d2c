import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { listStatement, runListStatement } from '../db/statements.js';
import type { Logger } from '../logger.js';
import type { EvictionSink, InvalidationDriver } from './invalidation-driver.js';

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

interface PgClient {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): void;
  on(event: 'error' | 'end', listener: (error?: Error) => void): void;
  removeAllListeners(): void;
  end(): Promise<void>;
}

/** Options of {@link createPostgresDriver}. */
export interface PostgresDriverOptions {
  readonly db: Knex;
  readonly logger: Logger;
  /** What the once-a-second eviction while the listener is down is measured by. */
  readonly clock: Clock;
  readonly sink: EvictionSink;
  /** The wait before each reconnect attempt; {@link reconnectDelayMs} by default. */
  readonly reconnectDelayMs?: (attempt: number) => number;
  /** Schedules reconnect attempts; `setTimeout` (unref'd) by default. */
  readonly setTimer?: SetTimer;
}

/**
 * Postgres: evictions travel by `NOTIFY` (delivered at commit to every
 * listener, this instance included) and arrive on a connection of its own
 * that `LISTEN`s. When that connection is lost it reconnects with
 * exponential backoff until it succeeds or the driver is closed; meanwhile
 * every subscriber is sent `ALL_KEYS` at once and then at most every
 * {@link DISTRUST_INTERVAL_MS} (on `freshen`), and once more after it
 * reconnects, because notifications were missed.
 */
export function createPostgresDriver(options: PostgresDriverOptions): InvalidationDriver {
  const { db, logger, clock, sink } = options;
  const delayOf = options.reconnectDelayMs ?? ((attempt: number) => reconnectDelayMs(attempt));
  const setTimer = options.setTimer ?? unrefTimer;
  let closed = false;
  // The listening connection while it is up, the pending reconnect, when caches were last emptied.
  let client: PgClient | undefined;
  let attempt = 0;
  let cancelReconnect: (() => void) | undefined;
  let distrustedAt = 0;

  const distrust = () => {
    distrustedAt = clock.now().getTime();
    sink.emitAll();
  };

  async function connect(): Promise<void> {
    const raw = (await (db.client as { acquireRawConnection(): Promise<PgClient> }).acquireRawConnection()) as PgClient;
    raw.on('notification', (message) => {
      if (message.channel !== CHANNEL || !message.payload) return;
      try {
        const { ns, key } = JSON.parse(message.payload) as { ns: string; key: string };
        sink.emit(ns, key);
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

  return {
    async send(evictions, trx) {
      // Delivered to every listening instance, this one included, when the transaction commits.
      await runListStatement(
        trx ?? db,
        NOTIFY,
        [],
        evictions.flatMap(({ namespace, key }) => [CHANNEL, JSON.stringify({ ns: namespace, key })]),
      );
    },
    inProcess: () => [sink.emit],
    isConnected: () => client !== undefined,
    freshen() {
      if (!client && clock.now().getTime() - distrustedAt >= DISTRUST_INTERVAL_MS) distrust();
      return undefined;
    },
    start: connect,
    async close() {
      closed = true;
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
