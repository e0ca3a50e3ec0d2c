import type { CacheInvalidator } from '@idt/core/knex';

/** core's `ALL_KEYS`: every entry of the namespace (kept literal so the root entry does not load `@idt/core/knex`). */
export const ALL_KEYS = '*';

/** A small per-key cache evicted by the cache invalidator of every instance. */
export interface KeyedCache<T> {
  /** The cached value, or `load()`'s (kept only while the invalidator is live and nothing evicted meanwhile). */
  get(key: string, load: () => Promise<T>): Promise<T>;
  /** Evicts one key here (other instances are told by the store's `invalidate`). */
  evict(key: string): void;
}

/**
 * Creates a cache on `namespace`. Without an invalidator, or while it is not
 * live, nothing is cached: a value another instance changed is never served.
 */
export function createKeyedCache<T>(namespace: string, invalidator: CacheInvalidator | undefined): KeyedCache<T> {
  const entries = new Map<string, T>();
  // Bumped on every eviction, so a load that raced an eviction is not kept.
  let generation = 0;
  const evict = (key: string) => {
    generation += 1;
    if (key === ALL_KEYS) entries.clear();
    else entries.delete(key);
  };
  invalidator?.subscribe(namespace, evict);
  return {
    async get(key, load) {
      const live = invalidator?.isLive() ?? false;
      if (live && entries.has(key)) return entries.get(key) as T;
      const before = generation;
      const value = await load();
      if (live && before === generation) entries.set(key, value);
      return value;
    },
    evict,
  };
}
