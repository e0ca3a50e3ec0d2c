import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createJwtVerifier, signJwt } from '../../src/index.js';
import {
  coreMigrations,
  createDatabase,
  createKnexSigningKeyStore,
  publicJwks,
  type SigningKey,
  type SigningKeyStore,
} from '../../src/knex.js';

const secret = 's'.repeat(40);

/** Whether `keys` are active first, then retired, each group newest first (what `listKeys` promises). */
function inListOrder(keys: readonly SigningKey[]): boolean {
  return keys.every((key, index) => {
    const previous = keys[index - 1];
    if (!previous) return true;
    if (previous.status !== key.status) return previous.status === 'active' && key.status === 'retired';
    return previous.createdAt >= key.createdAt;
  });
}

/**
 * The contract of the {@link SigningKeyStore} (its knex implementation, on
 * SQLite and PostgreSQL): one active key per algorithm however many
 * instances start or rotate at once, private keys only sealed, retired keys
 * listed and verifying until their retention ends, then pruned.
 */
describe.each(testDialects())('the signing key store contract on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('generates one active ES256 and one RS256 key, even when instances start together', async () => {
    const other = createDatabase(database.url);
    try {
      const stores = [database.db, other, database.db, other].map((db) => createKnexSigningKeyStore({ db, secret }));
      const results = await Promise.all(stores.map((store) => store.ensureActiveKeys()));
      const rows = await database.db('core_signing_keys').select('kid', 'alg', 'status');
      expect(
        rows
          .filter((row) => row.status === 'active')
          .map((row) => row.alg)
          .sort(),
      ).toEqual(['ES256', 'RS256']);
      expect(rows).toHaveLength(2);
      for (const keys of results) expect(keys.map((key) => key.kid).sort()).toEqual(rows.map((row) => row.kid).sort());
    } finally {
      await other.destroy();
    }
  });

  it('stores private keys only sealed and refuses another secret', async () => {
    const store = createKnexSigningKeyStore({ db: database.db, secret });
    const [key] = await store.listKeys();
    const row = await database.db('core_signing_keys').where({ kid: key?.kid }).first();
    expect(row.private_jwk_sealed).toMatch(/^v1\./);
    expect(row.private_jwk_sealed).not.toContain(key?.privateJwk.d);
    expect(JSON.parse(row.public_jwk)).not.toHaveProperty('d');
    expect(key?.publicJwk).toMatchObject({ kid: key?.kid, use: 'sig' });
    await expect(createKnexSigningKeyStore({ db: database.db, secret: 'x'.repeat(40) }).listKeys()).rejects.toThrow(
      /IDT_KEY_ENCRYPTION_SECRET/,
    );
  });

  it('rotates with the old key verifying until its retention ends', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const store = createKnexSigningKeyStore({ db: database.db, secret, clock, retentionSeconds: 3600 });
    const before = (await store.listKeys()).find((key) => key.alg === 'ES256' && key.status === 'active');
    if (!before) throw new Error('no active key');
    const issuer = 'https://id.example.com';
    const now = Math.floor(clock.now().getTime() / 1000);
    const oldToken = signJwt(
      { typ: 'at+jwt' },
      { iss: issuer, sub: 'u', aud: 'api', iat: now, exp: now + 900 },
      before.privateJwk,
    );
    const rotated = await store.rotate('ES256');
    expect(rotated.kid).not.toBe(before.kid);
    const keys = await store.listKeys();
    expect(
      keys
        .filter((key) => key.status === 'active')
        .map((key) => key.alg)
        .sort(),
    ).toEqual(['ES256', 'RS256']);
    expect(keys.find((key) => key.kid === before.kid)).toMatchObject({ status: 'retired' });
    const verifier = createJwtVerifier({
      keys: async () => publicJwks(await store.listKeys()).keys,
      issuer,
      audience: 'api',
      clock,
    });
    await expect(verifier.verify(oldToken)).resolves.toMatchObject({ sub: 'u' });
    const newToken = signJwt(
      { typ: 'at+jwt' },
      { iss: issuer, sub: 'v', aud: 'api', iat: now, exp: now + 900 },
      rotated.privateJwk,
    );
    await expect(verifier.verify(newToken)).resolves.toMatchObject({ sub: 'v' });
    clock.advance(3601_000);
    expect((await store.listKeys()).some((key) => key.kid === before.kid)).toBe(false);
    expect(await store.prune()).toBe(1);
  });

  it('lists active keys first, then retired ones that still verify, newest first within each', async () => {
    const clock = createManualClock('2032-01-01T00:00:00Z');
    const store = createKnexSigningKeyStore({ db: database.db, secret, clock, retentionSeconds: 3600 });
    const first = await store.rotate('ES256');
    clock.advance(60_000);
    const second = await store.rotate('ES256');
    clock.advance(60_000);
    const third = await store.rotate('ES256');
    const keys = await store.listKeys();
    expect(inListOrder(keys)).toBe(true);
    // The key active before (retired by the first rotation) follows them.
    expect(
      keys
        .filter((key) => key.alg === 'ES256')
        .slice(0, 3)
        .map((key) => key.kid),
    ).toEqual([third.kid, second.kid, first.kid]);
    expect(keys.find((key) => key.kid === second.kid)).toMatchObject({
      status: 'retired',
      retiredAt: '2032-01-01T00:02:00.000Z',
      expiresAt: '2032-01-01T01:02:00.000Z',
    });
    expect(third).toMatchObject({ status: 'active', retiredAt: null, expiresAt: null, createdAt: '2032-01-01T00:02:00.000Z' });
  });

  it('rotates one algorithm only, keeping the active key of the other', async () => {
    const store = createKnexSigningKeyStore({ db: database.db, secret });
    const activeOf = async (alg: string) =>
      (await store.listKeys()).find((key) => key.alg === alg && key.status === 'active')?.kid;
    const rs256 = await activeOf('RS256');
    const es256 = await activeOf('ES256');
    const rotated = await store.rotate('ES256');
    expect(await activeOf('ES256')).toBe(rotated.kid);
    expect(rotated.kid).not.toBe(es256);
    expect(await activeOf('RS256')).toBe(rs256);
  });

  it('leaves exactly one active key of an algorithm when instances rotate it at once', async () => {
    const other = createDatabase(database.url);
    try {
      const stores = [database.db, other, database.db, other].map((db) => createKnexSigningKeyStore({ db, secret }));
      const results = await Promise.allSettled(stores.map((store) => store.rotate('ES256')));
      expect(results.some((result) => result.status === 'fulfilled')).toBe(true);
      const active = await database.db('core_signing_keys').where({ alg: 'ES256', status: 'active' }).select('kid');
      expect(active).toHaveLength(1);
    } finally {
      await other.destroy();
    }
  });

  it('prunes retired keys exactly when their retention ends, never an active key', async () => {
    const clock = createManualClock('2033-01-01T00:00:00Z');
    const store: SigningKeyStore = createKnexSigningKeyStore({ db: database.db, secret, clock, retentionSeconds: 3600 });
    // Whatever earlier cases retired expired long ago.
    await store.prune();
    const retired = (await store.listKeys()).find((key) => key.alg === 'RS256' && key.status === 'active');
    await store.rotate('RS256');
    clock.advance(3_600_000 - 1);
    expect(await store.prune()).toBe(0);
    expect((await store.listKeys()).some((key) => key.kid === retired?.kid)).toBe(true);
    clock.advance(1);
    expect((await store.listKeys()).some((key) => key.kid === retired?.kid)).toBe(false);
    expect(await store.prune()).toBe(1);
    clock.advance(365 * 86_400_000);
    expect(await store.prune()).toBe(0);
    expect(
      (await store.listKeys())
        .filter((key) => key.status === 'active')
        .map((key) => key.alg)
        .sort(),
    ).toEqual(['ES256', 'RS256']);
  });

  it('generates only what is missing: a subset of algorithms on request, existing active keys kept', async () => {
    await database.db('core_signing_keys').delete();
    const store = createKnexSigningKeyStore({ db: database.db, secret });
    const [rs256] = await store.ensureActiveKeys(['RS256']);
    expect((await store.listKeys()).map((key) => [key.alg, key.status])).toEqual([['RS256', 'active']]);
    const keys = await store.ensureActiveKeys();
    expect(keys.map((key) => key.alg).sort()).toEqual(['ES256', 'RS256']);
    expect(keys.find((key) => key.alg === 'RS256')?.kid).toBe(rs256?.kid);
    expect((await store.ensureActiveKeys()).map((key) => key.kid)).toEqual(keys.map((key) => key.kid));
  });
});
