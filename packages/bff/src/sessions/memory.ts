import { createKeyedMutex } from './mutex.js';
import type { BffSession, BffSessionStore } from './store.js';

/**
 * A {@link BffSessionStore} in this process's memory: for tests and a single
 * instance in development. Sessions end with the process and are not shared
 * between instances; the refresh lock is a promise chain per session.
 *
 * @example
 * const bff = await createBff({ env: process.env, store: createMemoryBffSessionStore() });
 */
export function createMemoryBffSessionStore(): BffSessionStore {
  const sessions = new Map<string, BffSession>();
  const mutex = createKeyedMutex();
  const removeWhere = (match: (session: BffSession) => boolean): number => {
    let removed = 0;
    for (const [id, session] of sessions) {
      if (match(session)) {
        sessions.delete(id);
        removed += 1;
      }
    }
    return removed;
  };
  return {
    async create(session) {
      if (sessions.has(session.id)) throw new Error('A BFF session with this id exists already');
      sessions.set(session.id, session);
    },
    async read(id, now) {
      const session = sessions.get(id);
      return session && session.expiresAt > now ? session : undefined;
    },
    async update(session) {
      if (!sessions.has(session.id)) return false;
      sessions.set(session.id, session);
      return true;
    },
    async destroy(id) {
      return sessions.delete(id);
    },
    async revokeBySid(sid) {
      return removeWhere((session) => session.sid === sid);
    },
    async revokeBySubject(sub) {
      return removeWhere((session) => session.user.sub === sub);
    },
    withRefreshLock: (id, fn) => mutex.run(id, fn),
    async prune(now) {
      return removeWhere((session) => session.expiresAt <= now);
    },
  };
}
