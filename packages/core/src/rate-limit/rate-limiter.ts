import type { Knex } from 'knex';
import type { RateLimitDecision } from '../auth/principal.js';
import type { Clock } from '../clock.js';
import type { RateLimitSetting, RatePolicyName } from '../config/config.js';
import type { RequestRateLimiter } from '../http/app.js';
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
  /** Counts one request of `partitionKey` under `policy` (key `${policy}:${partitionKey}`). */
  hit(policy: RatePolicyName, partitionKey: string): Promise<RateLimitDecision>;
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
  const settingOf = (policy: RatePolicyName): RateLimitSetting => {
    const setting = options.settings[policy];
    if (!setting) throw new RangeError(`No rate-limit setting for policy "${policy}"`);
    return setting;
  };
  return {
    hit(policy, partitionKey) {
      const setting = settingOf(policy);
      return counter.hit(`${policy}:${partitionKey}`, setting.permitLimit, setting.windowSeconds * 1000);
    },
    reset(policy, partitionKey) {
      return counter.reset(`${policy}:${partitionKey}`);
    },
    prune: () => counter.prune(),
  };
}
