import type { Clock } from './clock.js';

/** Decides whether a per-key action is due again (in this process). */
export interface Throttle {
  /** Whether the action for `key` may run now; records the run when it may. */
  take(key: string): boolean;
  /** Records that the action for `key` last happened at `atMs` (e.g. as the database reports it). */
  note(key: string, atMs: number): void;
}

/**
 * An in-memory throttle: `take(key)` answers `true` at most once per
 * `intervalMs` for a key (session activity, API key and client last use). It only spares the database redundant writes; the
 * store's conditional update is what bounds writes across processes. The map
 * forgets stale keys once it grows past `maxKeys`.
 */
export function createThrottle(intervalMs: number, clock: Clock, maxKeys = 10_000): Throttle {
  const last = new Map<string, number>();
  const remember = (key: string, at: number) => {
    if (!last.has(key) && last.size >= maxKeys) {
      const now = clock.now().getTime();
      for (const [entry, when] of last) if (now - when >= intervalMs) last.delete(entry);
      if (last.size >= maxKeys) last.clear();
    }
    last.set(key, at);
  };
  return {
    take(key) {
      const now = clock.now().getTime();
      const previous = last.get(key);
      if (previous !== undefined && now - previous < intervalMs) return false;
      remember(key, now);
      return true;
    },
    note(key, atMs) {
      remember(key, atMs);
    },
  };
}
