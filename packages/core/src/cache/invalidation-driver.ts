import type { Knex } from 'knex';

/** One eviction of `CacheInvalidator.invalidateMany`: `key` of `namespace`, or all of it for `ALL_KEYS`. */
export interface CacheEviction {
  readonly namespace: string;
  readonly key: string;
}

/** Hands one eviction to the subscribers of one invalidator. */
export type EmitEviction = (namespace: string, key: string) => void;

/** The subscribers of the invalidator a driver serves. */
export interface EvictionSink {
  /** Evicts `key` of `namespace` (or all of it for `ALL_KEYS`) in every subscriber of that namespace. */
  readonly emit: EmitEviction;
  /** Evicts everything every subscriber holds. */
  emitAll(): void;
}

/**
 * How evictions travel between the instances sharing one database: one
 * driver per engine behind `createCacheInvalidator`, which owns the
 * subscribers, the started and closed states, and the emission at commit.
 */
export interface InvalidationDriver {
  /** Sends evictions to the other instances; inside `trx` they leave when it commits. */
  send(evictions: ReadonlyArray<CacheEviction>, trx?: Knex.Transaction): Promise<void>;
  /** The invalidators of this process that hear an eviction at commit, without it coming back through the database. */
  inProcess(): Iterable<EmitEviction>;
  /** Whether other instances' evictions are being received (once started). */
  isConnected(): boolean;
  /** See `CacheInvalidator.freshen`; called only between start and close. */
  freshen(): Promise<void> | undefined;
  /** Starts receiving; resolves once ready. */
  start(): Promise<void>;
  /** Stops receiving and releases connections and timers; sending nothing more. */
  close(): Promise<void>;
}

/** SQLite: the table evictions travel through between processes (migrations 0004 and 0005). */
export const INVALIDATIONS_TABLE = 'core_cache_invalidations';
