import { type Clock, createTtlCache, type Logger, silentLogger, systemClock } from '@idt/core';
import type { WindowCounter } from '@idt/core/knex';

/**
 * The invalid-client lockout (SPEC 8.2): 5 failures within 5 minutes lock
 * the client id for a fixed 5 minutes.
 */
export const CLIENT_LOCKOUT = { maxFailures: 5, windowMs: 300_000, lockoutMs: 300_000 } as const;

/** Default bound of the in-memory failure counts of client ids that do not exist. */
export const UNKNOWN_CLIENT_LIMIT = 1_000;

/** Unknown client ids are kept in memory and logged cut to this many characters. */
export const UNKNOWN_CLIENT_ID_LENGTH = 64;

/** Counts invalid-client answers and locks client ids out (SPEC 8.2). */
export interface ClientLockout {
  /** Whether the client id is locked out now (local, no I/O). */
  isLocked(clientId: string): boolean;
  /**
   * Records an invalid-client answer for a client id: always audited; counted
   * toward the lockout only for registered clients, so ids that do not exist
   * leave no state beyond a bounded in-memory count.
   */
  recordFailure(clientId: string, details: { ip: string | undefined; route: string; reason: string | undefined }): Promise<void>;
  /**
   * Records a successful client authentication: the client's failures are
   * forgotten. Costs no I/O unless the client failed recently.
   */
  recordSuccess(clientId: string): void | Promise<void>;
}

/** A change of the lockout state, seen by every instance. */
export type ClientLockoutChange =
  /** A client's lock was written (or lifted): read it again. */
  | { readonly kind: 'locked'; readonly clientId: string }
  /** A client's failure was recorded: its next success must reset the count. */
  | { readonly kind: 'failed'; readonly clientId: string }
  /** Anything may have changed (changes were missed): read everything again. */
  | { readonly kind: 'unknown' };

/** The lockout state of a client as persisted. */
export interface ClientLockoutRow {
  readonly clientId: string;
  readonly lockedUntil: Date | undefined;
  readonly lastFailureAt: Date | undefined;
}

/** What the lockout persists: atomic primitives, no decisions (knex: `createKnexClientLockoutStore`). */
export interface ClientLockoutStore {
  /** Whether a client with this id is registered (whatever its status). */
  isRegistered(clientId: string): Promise<boolean>;
  /** Adds one failure to a registered client's total, records when, and tells every instance. */
  addFailure(clientId: string, at: Date): Promise<void>;
  /** Locks a client until `until` and tells every instance, in one transaction. */
  lock(clientId: string, until: Date): Promise<void>;
  /** The client's persisted state, `undefined` when it never failed. */
  find(clientId: string): Promise<ClientLockoutRow | undefined>;
  /** The clients locked after `now` or that failed after `failedSince`. */
  recent(now: Date, failedSince: Date): Promise<ClientLockoutRow[]>;
  /** Calls `listener` for every change, this instance's included; returns an unsubscribe function. */
  subscribe(listener: (change: ClientLockoutChange) => void): () => void;
}

/** Options of {@link createClientLockout}. */
export interface ClientLockoutPolicyOptions {
  readonly store: ClientLockoutStore;
  /** The shared failure windows (the database's), so every instance counts one window per client. */
  readonly counter: Pick<WindowCounter, 'hit' | 'reset'>;
  /** Failures that trip the lockout ({@link CLIENT_LOCKOUT}: 5). */
  readonly maxFailures?: number;
  /** The window failures are counted in, in milliseconds (5 minutes). */
  readonly windowMs?: number;
  /** How long the lockout lasts, in milliseconds (5 minutes). */
  readonly lockoutMs?: number;
  /**
   * Most client ids that do not exist whose failures are counted in memory
   * ({@link UNKNOWN_CLIENT_LIMIT}); the least recently failing is forgotten first.
   */
  readonly unknownClientLimit?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The invalid-client lockout, with what it keeps in memory. */
export interface ClientLockoutPolicy extends ClientLockout {
  /** Loads the lockouts in force and the recent failures; call once at start. */
  load(): Promise<void>;
  /** How many unknown client ids are counted in memory now (at most `unknownClientLimit`). */
  unknownClientsTracked(): number;
}

/** Whether a lock that ends at `lockedUntil` (epoch milliseconds) still holds at `now`. */
export function lockHolds(lockedUntil: number | undefined, now: number): boolean {
  return lockedUntil !== undefined && lockedUntil > now;
}

/** The window-counter key of a client's failures. */
export function clientFailuresKey(clientId: string): string {
  return `invalid-client:${clientId}`;
}

/**
 * The invalid-client lockout (SPEC 8.2): 5 failures within 5 minutes lock
 * the client id for a fixed 5 minutes, with the same generic
 * `invalid_client` even for the right secret; a successful client
 * authentication forgets the client's failures. Failures are counted in
 * shared windows (every instance sees one count); the lock is known locally
 * and spread through the store, so checking it on the token endpoint costs
 * no I/O. Which clients failed recently is spread the same way, so a success
 * costs no I/O either unless there is a count to reset.
 *
 * Every invalid-client answer is logged as an audit line. Only registered
 * clients are counted in the store and the windows, so unauthenticated
 * callers cannot grow any table. Failures of client ids that do not exist are
 * counted in memory only, per instance, for at most `unknownClientLimit` ids
 * (1,000 by default, the least recently failing forgotten first, each id cut
 * to 64 characters) until the id has been quiet for the failure window; their
 * audit line names the cut id with its recent count. No lockout applies to
 * them: they cannot authenticate anyway.
 */
export function createClientLockout(options: ClientLockoutPolicyOptions): ClientLockoutPolicy {
  const { store, counter } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const maxFailures = options.maxFailures ?? CLIENT_LOCKOUT.maxFailures;
  const windowMs = options.windowMs ?? CLIENT_LOCKOUT.windowMs;
  const lockoutMs = options.lockoutMs ?? CLIENT_LOCKOUT.lockoutMs;
  const locks = new Map<string, number>();
  // Registered clients with failures in the current window: their next success resets the count.
  const failing = createTtlCache<true>({ ttlMs: windowMs, max: 10_000, clock });
  const unknownFailures = createTtlCache<number>({
    ttlMs: windowMs,
    max: options.unknownClientLimit ?? UNKNOWN_CLIENT_LIMIT,
    clock,
  });

  const remember = (row: ClientLockoutRow, now: number) => {
    const until = row.lockedUntil?.getTime();
    if (lockHolds(until, now)) locks.set(row.clientId, until as number);
    else locks.delete(row.clientId);
    const failedAt = row.lastFailureAt?.getTime();
    if (failedAt !== undefined && failedAt + windowMs > now) failing.set(row.clientId, true, failedAt + windowMs - now);
  };

  async function refresh(clientId: string) {
    const row = await store.find(clientId);
    if (row) remember(row, clock.now().getTime());
    else locks.delete(clientId);
  }

  async function loadAll() {
    const now = clock.now();
    const rows = await store.recent(now, new Date(now.getTime() - windowMs));
    locks.clear();
    for (const row of rows) remember(row, now.getTime());
  }

  store.subscribe((change) => {
    if (change.kind === 'failed') failing.set(change.clientId, true);
    else if (change.kind === 'locked') {
      void refresh(change.clientId).catch((error: unknown) => logger.warn('refreshing a client lockout failed', { error }));
    } else void loadAll().catch(() => undefined);
  });

  function isLocked(clientId: string): boolean {
    const until = locks.get(clientId);
    if (until === undefined) return false;
    if (!lockHolds(until, clock.now().getTime())) {
      locks.delete(clientId);
      return false;
    }
    return true;
  }

  return {
    load: loadAll,
    isLocked,
    unknownClientsTracked: () => unknownFailures.size,
    async recordFailure(clientId, details) {
      const { ip, route, reason } = details;
      if (!(await store.isRegistered(clientId))) {
        const key = clientId.slice(0, UNKNOWN_CLIENT_ID_LENGTH);
        const failures = (unknownFailures.get(key) ?? 0) + 1;
        unknownFailures.set(key, failures);
        logger.warn('audit: invalid_client', { clientId: key, unknownClient: true, failures, ip, route, reason });
        return;
      }
      const now = clock.now();
      const locked = isLocked(clientId);
      logger.warn('audit: invalid_client', { clientId, ip, route, reason, locked });
      await store.addFailure(clientId, now);
      // A locked client's failures do not extend or renew its fixed lock.
      if (locked) return;
      failing.set(clientId, true);
      // Counted outside any transaction: SQLite has one connection, and the counter uses it too.
      const decision = await counter.hit(clientFailuresKey(clientId), maxFailures - 1, windowMs);
      if (decision.allowed) return;
      const until = new Date(now.getTime() + lockoutMs);
      await store.lock(clientId, until);
      locks.set(clientId, until.getTime());
      failing.delete(clientId);
      await counter.reset(clientFailuresKey(clientId));
      logger.warn('audit: client locked out', { clientId, until: until.toISOString() });
    },
    recordSuccess(clientId) {
      if (failing.get(clientId) === undefined) return;
      failing.delete(clientId);
      return counter.reset(clientFailuresKey(clientId));
    },
  };
}
