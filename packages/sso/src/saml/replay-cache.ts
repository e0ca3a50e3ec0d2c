import type { Clock } from '@idt/core';

/**
 * Remembers the ids of assertions already accepted, until they expire, so
 * a captured response cannot be posted again. The in-memory one serves a
 * single process and tests; a shared store (knex, Redis) serves several.
 */
export interface ReplayCache {
  /**
   * Records `key` until `expiresAt`. Answers `true` when the key was not
   * known (or had expired) and `false` when it was: exactly one concurrent
   * caller with the same key gets `true`.
   */
  remember(key: string, expiresAt: Date): Promise<boolean>;
}

/**
 * A {@link ReplayCache} in a `Map`, pruned of expired keys as it is used.
 *
 * @example
 * const replayCache = createMemoryReplayCache({ clock: systemClock });
 */
export function createMemoryReplayCache(options: { clock: Clock }): ReplayCache {
  const entries = new Map<string, number>();
  return {
    async remember(key, expiresAt) {
      const now = options.clock.now().getTime();
      for (const [known, until] of entries) if (until <= now) entries.delete(known);
      if (entries.has(key)) return false;
      entries.set(key, expiresAt.getTime());
      return true;
    },
  };
}
