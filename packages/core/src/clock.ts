/** A source of the current time; inject one so tests are exact. */
export interface Clock {
  /** The current instant. */
  now(): Date;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until moved; for tests. */
export interface ManualClock extends Clock {
  /** Moves the clock forward by `ms` milliseconds. */
  advance(ms: number): void;
  /** Sets the clock to an instant. */
  set(instant: Date | string | number): void;
}

/**
 * A clock that only moves when told to.
 *
 * @example
 * const clock = createManualClock('2026-01-01T00:00:00Z');
 * clock.advance(61_000);
 */
export function createManualClock(start: Date | string | number = Date.now()): ManualClock {
  let current = new Date(start).getTime();
  return {
    now: () => new Date(current),
    advance: (ms) => {
      current += ms;
    },
    set: (instant) => {
      current = new Date(instant).getTime();
    },
  };
}
