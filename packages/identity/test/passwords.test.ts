import { availableParallelism } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { createArgon2Hasher, defaultArgon2Concurrency } from '../src/index.js';

// Small parameters keep the suite quick; the limit does not depend on them.
const quick = { memoryCost: 1024, timeCost: 1 } as const;

describe('argon2id hasher', () => {
  const poolSize = process.env.UV_THREADPOOL_SIZE;
  afterEach(() => {
    if (poolSize === undefined) delete process.env.UV_THREADPOOL_SIZE;
    else process.env.UV_THREADPOOL_SIZE = poolSize;
  });

  it('verifies what it hashed and refuses other passwords and malformed hashes', async () => {
    const hasher = createArgon2Hasher(quick);
    const encoded = await hasher.hash('correct horse battery staple');
    expect(encoded).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    expect(await hasher.verify(encoded, 'correct horse battery staple')).toBe(true);
    expect(await hasher.verify(encoded, 'correct horse battery stapler')).toBe(false);
    expect(await hasher.verify('not a hash', 'correct horse battery staple')).toBe(false);
  });

  it('with a concurrency of one, runs calls one at a time in the order they came', async () => {
    const hasher = createArgon2Hasher({ ...quick, concurrency: 1 });
    const encoded = await hasher.hash('correct horse battery staple');
    const finished: number[] = [];
    const calls = Array.from({ length: 8 }, (_, index) =>
      hasher.verify(encoded, index % 2 === 0 ? 'correct horse battery staple' : 'wrong password!!').then((ok) => {
        finished.push(index);
        return ok;
      }),
    );
    expect(await Promise.all(calls)).toEqual([true, false, true, false, true, false, true, false]);
    expect(finished).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('runs every queued call when more arrive than it runs at once', async () => {
    const hasher = createArgon2Hasher({ ...quick, concurrency: 2 });
    const encoded = await hasher.hash('correct horse battery staple');
    const results = await Promise.all(Array.from({ length: 20 }, () => hasher.verify(encoded, 'correct horse battery staple')));
    expect(results.every(Boolean)).toBe(true);
  });

  it('frees its slot when a hash fails, so the calls queued behind it still run', async () => {
    // A memory cost under argon2's minimum makes hashing fail.
    const broken = createArgon2Hasher({ memoryCost: 1, timeCost: 1, concurrency: 1 });
    const failures = await Promise.allSettled([broken.hash('first password!'), broken.hash('second password')]);
    expect(failures.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    const encoded = await createArgon2Hasher(quick).hash('correct horse battery staple');
    // verify reads the parameters from the hash, so the same limiter now succeeds.
    expect(await broken.verify(encoded, 'correct horse battery staple')).toBe(true);
  });

  it('refuses a concurrency that is not a positive integer', () => {
    for (const concurrency of [0, -1, 1.5, Number.NaN]) {
      expect(() => createArgon2Hasher({ concurrency })).toThrow(RangeError);
    }
  });

  it('defaults to one computation per available core, leaving a thread-pool thread free', () => {
    delete process.env.UV_THREADPOOL_SIZE;
    const cores = availableParallelism();
    expect(defaultArgon2Concurrency()).toBe(Math.max(1, Math.min(cores, 3)));
    process.env.UV_THREADPOOL_SIZE = '2';
    expect(defaultArgon2Concurrency()).toBe(1);
    process.env.UV_THREADPOOL_SIZE = '64';
    expect(defaultArgon2Concurrency()).toBe(Math.min(cores, 63));
  });
});
