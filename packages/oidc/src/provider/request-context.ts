import type { AsyncLocalStorage } from 'node:async_hooks';

/**
 * `AsyncLocalStorage` as Node.js 20 and 22 implement it by default: on
 * async hooks, which stay on for every promise and async resource of the
 * process from its first `run()` until `disable()`.
 */
interface HookedStorage {
  enabled: boolean;
  _enable(): void;
}

const SCOPED = Symbol.for('idt.oidc.requestContextScoped');

/** True when `storage` runs on async hooks (Node.js 20 and 22 by default), false on async context frames (Node.js 24). */
function isHooked(storage: AsyncLocalStorage<unknown>): storage is AsyncLocalStorage<unknown> & HookedStorage {
  const candidate = storage as unknown as Partial<HookedStorage>;
  return typeof candidate.enabled === 'boolean' && typeof candidate._enable === 'function';
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Keeps oidc-provider's request context (its `AsyncLocalStorage`, read
 * through `Provider.ctx`) switched on only while the provider is serving a
 * request.
 *
 * oidc-provider enters its storage with `run()` around every route it
 * serves. On Node.js 20 and 22 the storage propagates through async hooks,
 * and once entered it keeps them on for good: every promise the process
 * makes from then on, in every request and every module, pays for an init
 * hook and the bookkeeping of its execution resource. A bearer read that
 * never reaches the provider spent 6 % of its samples in the hooks' own
 * functions (`perf`, the user-token whoami on SQLite), and 13 to 19 % more
 * CPU in all than with the hooks off (docs/benchmarks-history.md, twenty-third
 * pass).
 *
 * With this, each `run()` is counted until what its callback returned has
 * settled (a route's whole middleware chain), and the storage is disabled
 * when none is left: the hooks turn off unless another storage of the
 * process still needs them. The next `run()` turns them on again. Within a
 * run nothing changes: `Provider.ctx` answers the request's context, as
 * before, in everything the route awaits.
 *
 * It does nothing on Node.js 24, whose storage runs on async context frames
 * (no hooks, nothing to turn off), and it is applied once per storage.
 *
 * @returns whether the storage is now scoped to the provider's requests.
 */
export function scopeToRequests(storage: AsyncLocalStorage<unknown>): boolean {
  if (!isHooked(storage)) return false;
  const marked = storage as unknown as { [SCOPED]?: true };
  if (marked[SCOPED]) return true;
  const run = storage.run;
  let serving = 0;
  const settled = () => {
    serving -= 1;
    if (serving === 0) storage.disable();
  };
  const scopedRun = function scopedRun(
    this: unknown,
    store: unknown,
    callback: (...args: unknown[]) => unknown,
    ...args: unknown[]
  ) {
    serving += 1;
    let result: unknown;
    try {
      result = run.call(storage, store, callback, ...args);
    } catch (error) {
      settled();
      throw error;
    }
    if (!isThenable(result)) {
      settled();
      return result;
    }
    return Promise.resolve(result).then(
      (value) => {
        settled();
        return value;
      },
      (error: unknown) => {
        settled();
        throw error;
      },
    );
  };
  Object.defineProperty(storage, 'run', { value: scopedRun, configurable: true, writable: true });
  marked[SCOPED] = true;
  return true;
}

/**
 * Loads oidc-provider's request context (`oidc-provider/lib/helpers/als.js`,
 * the storage behind `Provider.ctx`) and scopes it to the provider's
 * requests ({@link scopeToRequests}). A version of oidc-provider without
 * that module is left as it is: the hooks then stay on, as without idt.
 */
export async function scopeProviderRequestContext(): Promise<boolean> {
  try {
    const module = (await import('oidc-provider/lib/helpers/als.js')) as { default?: AsyncLocalStorage<unknown> };
    return module.default ? scopeToRequests(module.default) : false;
  } catch {
    return false;
  }
}
