import type { Clock } from '@idt/core';

/** The wall clock, moved forward by a test without waiting; see {@link createSkippingClock}. */
export interface SkippingClock extends Clock {
  /** Moves this clock `ms` milliseconds ahead of the wall clock (added to earlier skips). */
  advance(ms: number): void;
}

/**
 * A clock that runs with the wall clock but can be moved ahead at once: for
 * suites where time must keep flowing (rows ordered by creation time,
 * oidc-provider's own `Date.now()`) yet a test needs a later instant without
 * sleeping. Use `createManualClock()` from `@idt/core` where time should stand still.
 *
 * @example
 * const clock = createSkippingClock();
 * const server = await startTestServer({ clock });
 * clock.advance(5); // the next write's timestamp is later than the last one's
 */
export function createSkippingClock(): SkippingClock {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance(ms) {
      offset += ms;
    },
  };
}
