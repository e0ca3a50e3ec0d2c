import type { Knex } from 'knex';
import type { RateLimitDecision } from '../auth/principal.js';
import { type Clock, systemClock } from '../clock.js';
import { RATE_LIMIT_COUNTERS_TABLE } from '../db/migrations/0002-rate-limits.js';
import { runStatement, selectRows } from '../db/statements.js';
import { sha256Hex } from '../ids.js';

/** Options of {@link createWindowCounter}. */
export interface WindowCounterOptions {
  /** A database migrated with `coreMigrations` (table `core_rate_limit_counters`). */
  readonly db: Knex;
  /** The time source; the wall clock by default. */
  readonly clock?: Clock;
}

/**
 * Fixed-window counters kept in the database, so every instance sharing the
 * database shares the windows.
 */
export interface WindowCounter {
  /**
   * Counts one attempt under `key` and decides it. A window starts at the
   * first attempt after the previous one expired and lasts `windowMs`; the
   * attempt is allowed while the window holds at most `limit` attempts.
   * Refused attempts count too, and a `limit` of 0 refuses every attempt.
   * Keys longer than 255 characters are stored as their SHA-256 digest.
   *
   * @throws RangeError when `limit` is not a whole number ≥ 0 or `windowMs` is not > 0.
   */
  hit(key: string, limit: number, windowMs: number): Promise<RateLimitDecision>;
  /**
   * Adds `count` attempts to the window of `key` in one statement (a new
   * window starts with them) and returns the window's total afterwards and
   * its end (epoch milliseconds). The request rate limiter reserves permits
   * in batches with it.
   */
  add(key: string, count: number, windowMs: number): Promise<{ total: number; expiresAt: number }>;
  /**
   * The open window of `key` without counting anything: its total and its end
   * (epoch milliseconds), or `undefined` when no window is open (none yet, or
   * the last one expired). A lockout asks it before deciding whether to check
   * a credential at all.
   */
  peek(key: string): Promise<{ total: number; expiresAt: number } | undefined>;
  /** Forgets the window of `key`, e.g. after a successful sign-in. */
  reset(key: string): Promise<void>;
  /** Deletes every expired counter; returns how many were deleted. */
  prune(): Promise<number>;
}

/** Keys longer than this are stored as their SHA-256 digest (the column holds 512 characters). */
const MAX_KEY_LENGTH = 255;

function storedKey(key: string): string {
  return key.length > MAX_KEY_LENGTH ? `sha256:${sha256Hex(key)}` : key;
}

// One statement per hit: the upsert is atomic on both engines (a row lock on
// Postgres, the write lock on SQLite). Every SET expression reads the row as
// it was before the update, so an expired window restarts at this attempt.
const HIT_SQL = `
insert into ${RATE_LIMIT_COUNTERS_TABLE} ("key", "count", "window_started_at", "expires_at")
values (?, ?, ?, ?)
on conflict ("key") do update set
  "count" = case when ${RATE_LIMIT_COUNTERS_TABLE}."expires_at" <= excluded."window_started_at"
    then excluded."count" else ${RATE_LIMIT_COUNTERS_TABLE}."count" + excluded."count" end,
  "window_started_at" = case when ${RATE_LIMIT_COUNTERS_TABLE}."expires_at" <= excluded."window_started_at"
    then excluded."window_started_at" else ${RATE_LIMIT_COUNTERS_TABLE}."window_started_at" end,
  "expires_at" = case when ${RATE_LIMIT_COUNTERS_TABLE}."expires_at" <= excluded."window_started_at"
    then excluded."expires_at" else ${RATE_LIMIT_COUNTERS_TABLE}."expires_at" end
returning "count", "expires_at"`;
const PEEK_SQL = `select "count", "expires_at" from ${RATE_LIMIT_COUNTERS_TABLE} where "key" = ? and "expires_at" > ? limit 1`;
const RESET_SQL = `delete from ${RATE_LIMIT_COUNTERS_TABLE} where "key" = ?`;

/**
 * Fixed-window counters in `core_rate_limit_counters`, correct under
 * concurrency across connections and processes. Used by the request rate
 * limiter and by per-subject limits such as "3 e-mail changes per user per
 * hour".
 *
 * @example
 * const counter = createWindowCounter({ db });
 * const decision = await counter.hit(`email-change:${userId}`, 3, 60 * 60_000);
 * if (!decision.allowed) throw new ProblemError('RateLimit.Exceeded');
 */
export function createWindowCounter(options: WindowCounterOptions): WindowCounter {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  async function add(key: string, increment: number, windowMs: number, now: number) {
    const [row] = await selectRows(db, HIT_SQL, [storedKey(key), increment, now, now + Math.ceil(windowMs)]);
    if (!row) throw new Error('The rate-limit upsert returned no row');
    // pg returns bigint columns as strings.
    return { total: Number(row[0]), expiresAt: Number(row[1]) };
  }
  return {
    async add(key, count, windowMs) {
      if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be a whole number ≥ 1, got ${count}`);
      if (!Number.isFinite(windowMs) || windowMs <= 0) throw new RangeError(`windowMs must be > 0, got ${windowMs}`);
      return add(key, count, windowMs, clock.now().getTime());
    },
    async hit(key, limit, windowMs) {
      if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`limit must be a whole number ≥ 0, got ${limit}`);
      if (!Number.isFinite(windowMs) || windowMs <= 0) throw new RangeError(`windowMs must be > 0, got ${windowMs}`);
      const now = clock.now().getTime();
      const { total: count, expiresAt } = await add(key, 1, windowMs, now);
      return {
        allowed: count <= limit,
        limit,
        remaining: Math.max(0, limit - count),
        retryAfterSeconds: Math.max(1, Math.ceil((expiresAt - now) / 1000)),
      };
    },
    async peek(key) {
      const [row] = await selectRows(db, PEEK_SQL, [storedKey(key), clock.now().getTime()]);
      return row ? { total: Number(row[0]), expiresAt: Number(row[1]) } : undefined;
    },
    async reset(key) {
      await runStatement(db, RESET_SQL, [storedKey(key)]);
    },
    async prune() {
      return db(RATE_LIMIT_COUNTERS_TABLE).where('expires_at', '<=', clock.now().getTime()).delete();
    },
  };
}
