import type { Eviction } from '../access/cache-namespaces.js';
import { CacheNamespaces } from '../access/cache-namespaces.js';

/**
 * The session cap: which of a user's live sessions (oldest first) a new
 * sign-in ends so that, with the new one, at most `maxActive` stay active.
 * The oldest go first.
 *
 * @example
 * sessionsToEvict(['a', 'b', 'c', 'd', 'e'], 5); // ['a']
 */
export function sessionsToEvict(liveOldestFirst: readonly string[], maxActive: number): string[] {
  return liveOldestFirst.slice(0, Math.max(0, liveOldestFirst.length - (maxActive - 1)));
}

/** What ending a session evicts: its revocation watermark and the cached session. */
export function sessionEvictions(sessionId: string): Eviction[] {
  return [
    { namespace: CacheNamespaces.revocations, key: `session:${sessionId}` },
    { namespace: CacheNamespaces.sessions, key: sessionId },
  ];
}
