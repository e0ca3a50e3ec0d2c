/** Runs functions one at a time per key, within this process. */
export interface KeyedMutex {
  /** Runs `fn` after every earlier call for `key` has settled. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T>;
}

/** A {@link KeyedMutex}: a promise chain per key, dropped once idle. */
export function createKeyedMutex(): KeyedMutex {
  const tails = new Map<string, Promise<void>>();
  return {
    async run(key, fn) {
      const previous = tails.get(key) ?? Promise.resolve();
      let release: () => void = () => undefined;
      const turn = new Promise<void>((resolve) => {
        release = resolve;
      });
      const tail = previous.then(() => turn);
      tails.set(key, tail);
      await previous;
      try {
        return await fn();
      } finally {
        release();
        if (tails.get(key) === tail) tails.delete(key);
      }
    },
  };
}

/**
 * Thrown by a store's `withRefreshLock` when another instance held the
 * session's refresh lock for longer than the store waits: the caller answers
 * 503 and keeps the session (the holder is refreshing it, or its lease
 * will lapse).
 */
export class RefreshLockTimeoutError extends Error {
  constructor(waitedMs: number) {
    super(`The session's refresh lock stayed held for ${waitedMs} ms`);
    this.name = 'RefreshLockTimeoutError';
  }
}
