import { createManualClock } from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKnexReplayCache, createKnexRequestCache, pruneSamlCaches, ssoMigrations } from '../src/knex.js';

describe.each(testDialects())('the knex SAML caches on %s', (dialect) => {
  let database: TestDatabase;
  const clock = createManualClock(Date.parse('2030-01-01T00:00:00.000Z'));
  const at = (ms: number) => new Date(clock.now().getTime() + ms);

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, ssoMigrations]);
  });

  afterAll(async () => {
    await database?.destroy();
  });

  it('remembers a key once: of concurrent callers exactly one wins; an expired key can be remembered again', async () => {
    const cache = createKnexReplayCache({ db: database.db, clock });
    const key = 'sp\nidp\n_assertion-1';
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => cache.remember(key, at(60_000))));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await cache.remember(key, at(60_000))).toBe(false);
    expect(await cache.remember('sp\nidp\n_assertion-2', at(60_000))).toBe(true);
    clock.advance(60_000);
    expect(await cache.remember(key, at(60_000))).toBe(true);
    expect(await cache.remember(key, at(60_000))).toBe(false);
  });

  it('hands a pending request to exactly one taker, and never once expired', async () => {
    const cache = createKnexRequestCache({ db: database.db, clock });
    await cache.save('sp\nidp\n_request-1', { relayState: '/account', expiresAt: at(600_000) });
    const taken = await Promise.all(Array.from({ length: 8 }, () => cache.take('sp\nidp\n_request-1')));
    const winners = taken.filter((entry) => entry !== undefined);
    expect(winners).toEqual([{ relayState: '/account', expiresAt: at(600_000) }]);
    expect(await cache.take('sp\nidp\n_request-1')).toBeUndefined();

    await cache.save('sp\nidp\n_request-2', { expiresAt: at(1_000) });
    clock.advance(1_000);
    expect(await cache.take('sp\nidp\n_request-2')).toBeUndefined();
  });

  it('prunes expired rows of both caches', async () => {
    const replay = createKnexReplayCache({ db: database.db, clock });
    const requests = createKnexRequestCache({ db: database.db, clock });
    await replay.remember('old', at(1_000));
    await requests.save('old', { expiresAt: at(1_000) });
    await replay.remember('fresh', at(3_600_000));
    clock.advance(2_000);
    expect(await pruneSamlCaches(database.db, clock.now())).toBeGreaterThanOrEqual(2);
    expect(
      Number(
        (
          await database
            .db('sso_saml_requests')
            .where({ expires_at: at(-1_000).toISOString() })
            .count({ n: '*' })
            .first()
        )?.n,
      ),
    ).toBe(0);
    expect(await replay.remember('fresh', at(3_600_000))).toBe(false);
  });
});
