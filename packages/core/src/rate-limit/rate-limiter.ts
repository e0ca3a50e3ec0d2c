import type { Knex } from 'knex';
import type { RateLimitDecision } from '../auth/principal.js';
import { type Clock, systemClock } from '../clock.js';
import type { RateLimitSetting, RatePolicyName } from '../config/config.js';
import type { RequestRateLimiter } from './partition.js';
import { createWindowCounter } from './window-counter.js';

/** Options of {@link createRateLimiter}. */
export interface RateLimiterOptions {
  /** A database migrated with `coreMigrations`. */
  readonly db: Knex;
  /** Permit limit and window of every policy, usually `config.rateLimits`. */
  readonly settings: Readonly<Record<RatePolicyName, RateLimitSetting>>;
  /** The time source; the wall clock by default. */
  readonly clock?: Clock;
}

/** The request rate limiter of the HTTP pipeline, with maintenance operations. */
export interface RateLimiter extends RequestRateLimiter {
  /**
   * Counts one request of `partitionKey` under `policy` (key `${policy}:${partitionKey}`).
   * Answers synchronously while this instance holds reserved permits, else
   * with a promise (one database statement reserves the next batch).
   */
  hit(policy: RatePolicyName, partitionKey: string): Promise<RateLimitDecision> | RateLimitDecision;
  /** Forgets the current window of one partition under one policy. */
  reset(policy: RatePolicyName, partitionKey: string): Promise<void>;
  /** Deletes expired counters (of every key, not only request policies); returns how many. */
  prune(): Promise<number>;
}

/**
 * The rate limiter of SPEC 8.1: fixed windows per policy and partition, kept
 * in the database so every instance shares them. Pass it to `createHttpApp`
 * outside Development; the pipeline counts every request of a route, whatever
 * its outcome, and answers 429 `RateLimit.Exceeded` with `Retry-After`.
 *
 * @example
 * const rateLimiter = createRateLimiter({ db, settings: config.rateLimits });
 * const app = createHttpApp({ ...options, rateLimiter });
 * setInterval(() => void rateLimiter.prune(), 10 * 60_000).unref();
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const counter = createWindowCounter({ db: options.db, clock: options.clock });
  const clock = options.clock ?? systemClock;
  const leases = new Map<string, Lease>();
  const reserving = new Map<string, Promise<Lease>>();
  const settingOf = (policy: RatePolicyName): RateLimitSetting => {
    const setting = options.settings[policy];
    if (!setting) throw new RangeError(`No rate-limit setting for policy "${policy}"`);
    return setting;
  };

  async function reserve(key: string, setting: RateLimitSetting): Promise<Lease> {
    const batch = batchSize(setting.permitLimit);
    const { total, expiresAt } = await counter.add(key, batch, setting.windowSeconds * 1000);
    const granted = Math.max(0, Math.min(batch, setting.permitLimit - (total - batch)));
    const lease: Lease = { expiresAt, available: granted, exhausted: granted < batch, total };
    if (leases.size >= MAX_LEASES) leases.clear();
    leases.set(key, lease);
    return lease;
  }

  function take(lease: Lease, limit: number, now: number): RateLimitDecision | undefined {
    if (lease.expiresAt <= now) return undefined;
    const retryAfterSeconds = Math.max(1, Math.ceil((lease.expiresAt - now) / 1000));
    if (lease.available > 0) {
      lease.available -= 1;
      // What the shared window has not handed out yet, plus what this instance holds unused.
      return { allowed: true, limit, remaining: Math.max(0, limit - lease.total) + lease.available, retryAfterSeconds };
    }
    if (lease.exhausted) return { allowed: false, limit, remaining: 0, retryAfterSeconds };
    return undefined;
  }

  async function hitSlowly(key: string, setting: RateLimitSetting): Promise<RateLimitDecision> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = clock.now().getTime();
      const lease = leases.get(key);
      const decision = lease ? take(lease, setting.permitLimit, now) : undefined;
      if (decision) return decision;
      let pending = reserving.get(key);
      if (!pending) {
        pending = reserve(key, setting).finally(() => reserving.delete(key));
        reserving.set(key, pending);
      }
      await pending;
    }
    // Every reservation was taken by concurrent requests: count this one on its own.
    return counter.hit(key, setting.permitLimit, setting.windowSeconds * 1000);
  }

  return {
    hit(policy, partitionKey) {
      const setting = settingOf(policy);
      const key = `${policy}:${partitionKey}`;
      const lease = leases.get(key);
      const decision = lease ? take(lease, setting.permitLimit, clock.now().getTime()) : undefined;
      return decision ?? hitSlowly(key, setting);
    },
    async reset(policy, partitionKey) {
      leases.delete(`${policy}:${partitionKey}`);
      await counter.reset(`${policy}:${partitionKey}`);
    },
    prune: () => counter.prune(),
  };
}

/** Permits one instance reserves from the shared window at once. */
interface Lease {
  /** When the shared window ends (epoch milliseconds). */
  readonly expiresAt: number;
  /** Permits reserved and not used yet. */
  available: number;
  /** The window had fewer permits left than were asked for: refuse locally until it ends. */
  readonly exhausted: boolean;
  /** The shared window's count right after this reservation. */
  readonly total: number;
}

const MAX_LEASES = 50_000;

/**
 * How many permits an instance reserves at once: one (exact counting) for
 * limits under 40, else 1/40 of the limit up to 1,000. A reservation is one
 * database statement, so a busy partition costs one write per batch; the
 * total admitted never exceeds the limit, and at most a batch per instance
 * (2.5% of the limit) can be left unused when a window ends.
 */
export function batchSize(limit: number): number {
  return Math.max(1, Math.min(1000, Math.floor(limit / 40)));
}
