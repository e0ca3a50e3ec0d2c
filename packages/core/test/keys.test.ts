import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../src/clock.js';
import { createJwtVerifier, signJwt } from '../src/index.js';
import { coreMigrations, createDatabase, createKnexSigningKeyStore, publicJwks } from '../src/knex.js';

const secret = 's'.repeat(40);

describe.each(testDialects())('signing keys on %s', (dialect) => {
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
});
