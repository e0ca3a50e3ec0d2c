import type { Clock } from '@idt/core';
import type { BroadcastBody } from './fan-out.js';

/** How an identity session ended, as the envelope's `type` tells the client. */
export type SessionEndType = 'SessionEnded' | 'SessionEvicted';

/**
 * The session-end closer's memory: an eviction or revocation reaches the
 * hub twice (the identity event, then the provider's `OidcSessionEndedEvent`)
 * and is told to the session's connections once.
 */
export interface SessionEnds {
  /**
   * Broadcasts the end of a session, unless an end of it was broadcast (by
   * any instance) within the memory; a second call while the first is on its
   * way waits for it.
   */
  endSession(sessionId: string, type: SessionEndType): Promise<void>;
  /** Remembers an end that was broadcast (by this instance or another). */
  remember(sessionId: string): void;
  /** Forgets the ends remembered until before `at`. */
  sweep(at: number): void;
}

/** Creates the {@link SessionEnds} of one hub. */
export function createSessionEnds(options: {
  /** How long an end is remembered. */
  readonly rememberMs: number;
  readonly clock: Clock;
  broadcast(body: BroadcastBody): Promise<void>;
}): SessionEnds {
  const { clock } = options;
  const now = () => clock.now().getTime();
  // Sessions whose end was broadcast (by any instance) in the last minute, and the broadcasts on their way.
  const ended = new Map<string, number>();
  const ending = new Map<string, Promise<void>>();

  const remember = (sessionId: string) => void ended.set(sessionId, now() + options.rememberMs);

  return {
    endSession(sessionId, type) {
      if ((ended.get(sessionId) ?? 0) > now()) return Promise.resolve();
      // The two events of one end are often handled together: the second waits for the first's broadcast.
      const inFlight = ending.get(sessionId);
      if (inFlight) return inFlight;
      const sent = options
        .broadcast({ op: 'end', s: sessionId, t: type, at: clock.now().toISOString() })
        // Marked once sent (a failed broadcast rejects both callers, and the event bus retries them).
        .then(() => remember(sessionId))
        .finally(() => ending.delete(sessionId));
      ending.set(sessionId, sent);
      return sent;
    },
    remember,
    sweep(at) {
      for (const [id, until] of ended) if (until <= at) ended.delete(id);
    },
  };
}
