import type { Clock } from '../clock.js';

/** A small in-memory cache with a time-to-live and a size bound. */
export interface TtlCache<V> {
  get(key: string): V | undefined;
  set(key: string, value: V, ttlMs?: number): void;
  delete(key: string): void;
  clear(): void;
  /** The cached value, or the loader's (loaded once even under concurrent calls; an `undefined` result is not kept). */
  getOrLoad(key: string, load: () => Promise<V>): Promise<V>;
  /**
   * The cached values of `keys`, in their order, with every miss loaded by
   * one call of `loadMany` (given each missing key once). What it loads is
   * kept under the same rule as {@link getOrLoad}: not when the key was
   * deleted (or the cache cleared) while it loaded, never an `undefined`.
   * A key neither cached nor loaded answers `undefined`.
   */
  getOrLoadMany(
    keys: readonly string[],
    loadMany: (missing: string[]) => Promise<ReadonlyMap<string, V>>,
  ): Promise<Array<V | undefined>>;
  readonly size: number;
}

/** Options of {@link createTtlCache}. */
export interface TtlCacheOptions {
  /** Default time-to-live of an entry, in milliseconds: its greatest age. */
  readonly ttlMs: number;
  /**
   * When set, an entry also expires this many milliseconds after it was last
   * read or stored: entries in use stay (up to `ttlMs`), entries nobody asks
   * for any more leave early.
   */
  readonly idleMs?: number;
  /**
   * Spreads each entry's greatest age at random over `ttlMs × (1 − jitter)`
   * to `ttlMs`, so entries loaded together (a burst of first requests) are
   * not all loaded again at the same moment. 0 by default.
   */
  readonly jitter?: number;
  /** Most entries kept; the oldest is dropped first. Default 10,000. */
  readonly max?: number;
  /** What entries expire by; the system clock by default. */
  readonly clock?: Clock;
}

/** How often the process drops the expired entries of every TTL cache, in milliseconds. */
export const TTL_CACHE_SWEEP_INTERVAL_MS = 15_000;

/** The caches the sweeper looks at, held weakly: a cache nobody holds any more is collected, and leaves the set. */
const sweepable = new Set<WeakRef<{ sweep(): number }>>();
let sweeper: NodeJS.Timeout | undefined;

/**
 * Drops the expired entries of every TTL cache of the process (each by its
 * own clock) and answers how many. A timer that does not keep the process
 * alive runs it every {@link TTL_CACHE_SWEEP_INTERVAL_MS}: without it, an
 * entry nobody asks for again would stay in memory until the size bound
 * pushed it out, so a server that saw a burst of users or clients would keep
 * them all while idle.
 */
export function sweepTtlCaches(): number {
  let dropped = 0;
  for (const ref of sweepable) {
    const cache = ref.deref();
    if (cache) dropped += cache.sweep();
    else sweepable.delete(ref);
  }
  if (sweepable.size === 0 && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
  return dropped;
}

function registerForSweeps(cache: { sweep(): number }): void {
  sweepable.add(new WeakRef(cache));
  if (sweeper) return;
  sweeper = setInterval(sweepTtlCaches, TTL_CACHE_SWEEP_INTERVAL_MS);
  sweeper.unref();
}

/**
 * A TTL cache whose loads are de-duplicated: while one load of a key is in
 * flight, other callers wait for it. A load that started before a `delete`
 * of its key is not stored, so an invalidation is never undone by a stale load.
 * Expired entries are dropped when read, and by {@link sweepTtlCaches}.
 *
 * @example
 * const users = createTtlCache<User>({ ttlMs: 30_000 });
 * const user = await users.getOrLoad(id, () => store.find(id));
 */
export function createTtlCache<V>(options: TtlCacheOptions): TtlCache<V> {
  const max = options.max ?? 10_000;
  const clock = options.clock;
  // Date.now() itself when no clock is given: get() is on every request's path.
  const nowMs = clock ? () => clock.now().getTime() : Date.now;
  const { idleMs, jitter = 0 } = options;
  const entries = new Map<string, { value: V; expiresAt: number; idleUntil: number }>();
  /** Whether an entry is past its greatest age or its idle time at `now`. */
  const expired = (entry: { expiresAt: number; idleUntil: number }, now: number) =>
    entry.expiresAt <= now || entry.idleUntil <= now;
  const inflight = new Map<string, Promise<V>>();
  /**
   * The keys with loads in flight: how many, and how many deletes since the
   * first of them began. Nothing is kept for a key once its loads are done, so
   * the bookkeeping stays as small as the loads in flight, however many keys
   * are evicted over the process's life.
   */
  const loading = new Map<string, { loads: number; deletes: number }>();
  /** Notes a load of `key` beginning; returns the deletes counted so far, for {@link endLoad}. */
  const beginLoad = (key: string): number => {
    let state = loading.get(key);
    if (!state) {
      state = { loads: 0, deletes: 0 };
      loading.set(key, state);
    }
    state.loads += 1;
    return state.deletes;
  };
  /** Notes a load of `key` ending; whether no delete of the key happened since it began. */
  const endLoad = (key: string, deletesAtStart: number): boolean => {
    const state = loading.get(key);
    if (!state) return false;
    state.loads -= 1;
    if (state.loads === 0) loading.delete(key);
    return state.deletes === deletesAtStart;
  };
  let epoch = 0;
  /**
   * Ends a load of `key` and keeps what it found, unless the key was deleted
   * or the cache cleared since it began. `undefined` is what `get` answers
   * for a miss: a load that found nothing is not kept.
   */
  const endLoadAndKeep = (key: string, deletesAtStart: number, startedEpoch: number, value: V | undefined) => {
    const fresh = endLoad(key, deletesAtStart);
    if (value !== undefined && fresh && epoch === startedEpoch) set(key, value);
  };

  const set = (key: string, value: V, ttlMs = options.ttlMs) => {
    if (entries.size >= max && !entries.has(key)) {
      const oldest = entries.keys().next().value;
      if (oldest !== undefined) entries.delete(oldest);
    }
    entries.delete(key);
    const now = nowMs();
    const age = jitter > 0 ? ttlMs * (1 - jitter * Math.random()) : ttlMs;
    entries.set(key, { value, expiresAt: now + age, idleUntil: idleMs === undefined ? Number.POSITIVE_INFINITY : now + idleMs });
  };

  const get = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return undefined;
    const now = nowMs();
    if (expired(entry, now)) {
      entries.delete(key);
      return undefined;
    }
    if (idleMs !== undefined) entry.idleUntil = now + idleMs;
    return entry.value;
  };

  /** Drops the expired entries; answers how many. */
  const sweep = () => {
    const now = nowMs();
    let dropped = 0;
    for (const [key, entry] of entries) {
      if (expired(entry, now)) {
        entries.delete(key);
        dropped += 1;
      }
    }
    return dropped;
  };

  const cache: TtlCache<V> & { sweep(): number } = {
    sweep,
    get,
    set,
    delete(key) {
      entries.delete(key);
      inflight.delete(key);
      const state = loading.get(key);
      if (state) state.deletes += 1;
    },
    clear() {
      entries.clear();
      inflight.clear();
      // Loads in flight keep their bookkeeping (they end it themselves); the epoch tells them not to store.
      epoch += 1;
    },
    async getOrLoad(key, load) {
      const hit = get(key);
      if (hit !== undefined) return hit;
      const pending = inflight.get(key);
      if (pending) return pending;
      const deletes = beginLoad(key);
      const startedEpoch = epoch;
      let loaded: Promise<V>;
      try {
        loaded = load();
      } catch (error) {
        endLoad(key, deletes);
        throw error;
      }
      const promise = loaded.then(
        (value) => {
          if (inflight.get(key) === promise) inflight.delete(key);
          endLoadAndKeep(key, deletes, startedEpoch, value);
          return value;
        },
        (error: unknown) => {
          if (inflight.get(key) === promise) inflight.delete(key);
          endLoad(key, deletes);
          throw error;
        },
      );
      inflight.set(key, promise);
      return promise;
    },
    async getOrLoadMany(keys, loadMany) {
      const values = keys.map(get);
      const missing = [...new Set(keys.filter((_, index) => values[index] === undefined))];
      if (missing.length === 0) return values;
      const deletes = missing.map(beginLoad);
      const startedEpoch = epoch;
      let loaded: ReadonlyMap<string, V> = new Map();
      try {
        loaded = await loadMany(missing);
      } finally {
        missing.forEach((key, index) => {
          endLoadAndKeep(key, deletes[index] ?? 0, startedEpoch, loaded.get(key));
        });
      }
      return keys.map((key, index) => values[index] ?? loaded.get(key));
    },
    get size() {
      return entries.size;
    },
  };
  registerForSweeps(cache);
  return cache;
}
