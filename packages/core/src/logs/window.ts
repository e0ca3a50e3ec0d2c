import type { Clock } from '../clock.js';

/** The decision of {@link FixedWindowLimiter.hit}. */
export interface FixedWindowDecision {
  readonly allowed: boolean;
  /** Seconds until the key's window ends (at least 1). */
  readonly retryAfterSeconds: number;
}

/** Counts hits per key in fixed windows, in this process. */
export interface FixedWindowLimiter {
  /** Counts one hit of `key` and decides it; refused hits count too. */
  hit(key: string): FixedWindowDecision;
  /** How many keys have a window (the shared overflow window excluded). */
  readonly size: number;
}

/** Options of {@link createFixedWindowLimiter}. */
export interface FixedWindowLimiterOptions {
  /** Hits allowed per window. */
  readonly permitLimit: number;
  /** Window length in milliseconds; a window starts at a key's first hit after the previous one ended. */
  readonly windowMs: number;
  readonly clock: Clock;
  /** Most keys tracked; default 10,000. */
  readonly maxKeys?: number;
}

/**
 * An in-memory fixed-window limiter with a bounded key count. When the map is
 * full and no window has ended, new keys share one overflow window (same
 * limit) instead of evicting tracked ones: rotating addresses cannot reset
 * anyone's window, at worst new callers are limited together until windows
 * end.
 *
 * The database-backed `createWindowCounter` shares windows across instances;
 * this one is for cheap per-process guards where a write per request is not
 * worth it.
 */
export function createFixedWindowLimiter(options: FixedWindowLimiterOptions): FixedWindowLimiter {
  const { permitLimit, windowMs, clock } = options;
  if (!Number.isInteger(permitLimit) || permitLimit < 0) throw new RangeError(`permitLimit must be a whole number ≥ 0`);
  if (!Number.isFinite(windowMs) || windowMs <= 0) throw new RangeError('windowMs must be > 0');
  const maxKeys = options.maxKeys ?? 10_000;
  const windows = new Map<string, { count: number; endsAt: number }>();
  const overflow = { count: 0, endsAt: 0 };
  // When a sweep may free a slot: the earliest window end it left behind (a full map is swept at most that often).
  let nextSweepAt = 0;

  const windowOf = (key: string, now: number) => {
    const current = windows.get(key);
    if (current) return current;
    if (windows.size >= maxKeys) {
      if (now < nextSweepAt) return overflow;
      nextSweepAt = Number.POSITIVE_INFINITY;
      for (const [tracked, window] of windows) {
        if (window.endsAt <= now) windows.delete(tracked);
        else nextSweepAt = Math.min(nextSweepAt, window.endsAt);
      }
      if (windows.size >= maxKeys) return overflow;
    }
    const created = { count: 0, endsAt: 0 };
    windows.set(key, created);
    return created;
  };

  return {
    hit(key) {
      const now = clock.now().getTime();
      const window = windowOf(key, now);
      if (window.endsAt <= now) {
        window.count = 0;
        window.endsAt = now + windowMs;
      }
      window.count += 1;
      return {
        allowed: window.count <= permitLimit,
        retryAfterSeconds: Math.max(1, Math.ceil((window.endsAt - now) / 1000)),
      };
    },
    get size() {
      return windows.size;
    },
  };
}
