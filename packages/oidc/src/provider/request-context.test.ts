import { AsyncLocalStorage } from 'node:async_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { scopeToRequests } from './request-context.js';

/** Whether this Node.js runs AsyncLocalStorage on async hooks (20 and 22 by default; 24 runs it on context frames). */
const hooked = typeof (new AsyncLocalStorage() as unknown as { enabled?: unknown }).enabled === 'boolean';

const enabled = (storage: AsyncLocalStorage<unknown>) => (storage as unknown as { enabled: boolean }).enabled;

/** A promise and its resolve and reject, to hold a run open. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

describe.skipIf(!hooked)('scopeToRequests (async hooks)', () => {
  it('keeps the storage on while a run has not settled, and turns it off after', async () => {
    const storage = new AsyncLocalStorage<string>();
    expect(scopeToRequests(storage)).toBe(true);
    const gate = deferred();
    const seen: Array<string | undefined> = [];
    const run = storage.run('request-1', async () => {
      seen.push(storage.getStore());
      await gate.promise;
      await nextTurn();
      seen.push(storage.getStore());
      return 'answer';
    });
    await nextTurn();
    expect(enabled(storage)).toBe(true);
    gate.resolve();
    expect(await run).toBe('answer');
    expect(seen).toEqual(['request-1', 'request-1']);
    expect(enabled(storage)).toBe(false);
    expect(storage.getStore()).toBeUndefined();
  });

  it('stays on until the last of overlapping runs settles, each seeing its own store to the end', async () => {
    const storage = new AsyncLocalStorage<string>();
    scopeToRequests(storage);
    const first = deferred();
    const second = deferred();
    const seen: string[] = [];
    const body = (gate: Promise<void>) => async () => {
      await gate;
      await nextTurn();
      seen.push(String(storage.getStore()));
    };
    const one = storage.run('one', body(first.promise));
    const two = storage.run('two', body(second.promise));
    first.resolve();
    await one;
    expect(enabled(storage)).toBe(true);
    second.resolve();
    await two;
    expect(seen).toEqual(['one', 'two']);
    expect(enabled(storage)).toBe(false);
    // The next run turns it on again.
    await storage.run('three', async () => {
      await nextTurn();
      expect(storage.getStore()).toBe('three');
      expect(enabled(storage)).toBe(true);
    });
    expect(enabled(storage)).toBe(false);
  });

  it('turns off after a run that returns at once, throws or rejects, and passes the outcome on', async () => {
    const storage = new AsyncLocalStorage<string>();
    scopeToRequests(storage);
    expect(storage.run('sync', () => storage.getStore())).toBe('sync');
    expect(enabled(storage)).toBe(false);
    expect(() =>
      storage.run('throws', () => {
        throw new Error('thrown');
      }),
    ).toThrow('thrown');
    expect(enabled(storage)).toBe(false);
    await expect(
      storage.run('rejects', async () => {
        await nextTurn();
        throw new Error('rejected');
      }),
    ).rejects.toThrow('rejected');
    expect(enabled(storage)).toBe(false);
  });

  it('counts a run nested in one of the same store, and wraps a storage once', async () => {
    const storage = new AsyncLocalStorage<string>();
    expect(scopeToRequests(storage)).toBe(true);
    const run = storage.run;
    expect(scopeToRequests(storage)).toBe(true);
    expect(storage.run).toBe(run);
    const outer = deferred();
    const done = storage.run('same', async () => {
      await storage.run('same', async () => nextTurn());
      expect(enabled(storage)).toBe(true);
      await outer.promise;
      return storage.getStore();
    });
    await nextTurn();
    outer.resolve();
    expect(await done).toBe('same');
    expect(enabled(storage)).toBe(false);
  });

  it('leaves other storages of the process on', async () => {
    const provider = new AsyncLocalStorage<string>();
    const host = new AsyncLocalStorage<string>();
    scopeToRequests(provider);
    await host.run('host', async () => {
      await provider.run('provider', async () => nextTurn());
      await nextTurn();
      expect(host.getStore()).toBe('host');
    });
    expect(enabled(provider)).toBe(false);
    expect(enabled(host)).toBe(true);
    host.disable();
  });
});

describe('scopeToRequests (any Node.js)', () => {
  it('changes nothing of a storage that does not run on async hooks', () => {
    const storage = new AsyncLocalStorage<string>();
    const framed = hooked
      ? // What Node.js 24's storage looks like to it: no `enabled` flag, no `_enable`.
        ({ run: storage.run.bind(storage), disable: () => {}, getStore: () => undefined } as unknown as AsyncLocalStorage<string>)
      : storage;
    const run = framed.run;
    expect(scopeToRequests(framed)).toBe(false);
    expect(framed.run).toBe(run);
  });
});
