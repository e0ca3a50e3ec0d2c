import { createManualClock, sha256Hex } from '@idt/core';
import { coreMigrations, createCacheInvalidator } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKnexAdapterClass, type OidcAdapter, oidcMigrations } from '../src/knex.js';

/**
 * The storage adapter oidc-provider runs on, met the way the provider meets
 * it (upsert, find, consume, destroy, revoke by grant), on both engines: what
 * each call leaves in `oidc_payloads` and what the next one reads back.
 */
describe.each(testDialects())('the oidc-provider adapter on %s', (dialect) => {
  let database: TestDatabase;
  const clock = createManualClock('2026-03-01T10:00:00Z');
  let Adapter: new (name: string) => OidcAdapter;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, oidcMigrations]);
    const invalidator = createCacheInvalidator({ db: database.db });
    Adapter = createKnexAdapterClass({
      db: database.db,
      clock,
      invalidator,
      findClient: async () => undefined,
      clientMetadata: () => ({}),
    });
  });
  afterAll(async () => {
    await database?.destroy();
  });

  const rowOf = (model: string, id: string) => database.db('oidc_payloads').where({ model, id }).first();

  it('stores a payload with its lookup columns and reads it back until it expires', async () => {
    const sessions = new Adapter('Session');
    await sessions.upsert(
      'session-1',
      { uid: 'uid-1', accountId: 'user-1', authorizations: { app: { sid: 'sid-1', grantId: 'grant-1' } } },
      60,
    );
    expect(await sessions.find('session-1')).toEqual({
      uid: 'uid-1',
      accountId: 'user-1',
      authorizations: { app: { sid: 'sid-1', grantId: 'grant-1' } },
    });
    expect(await sessions.findByUid('uid-1')).toMatchObject({ accountId: 'user-1' });
    expect(await rowOf('Session', 'session-1')).toMatchObject({ uid: 'uid-1', account_id: 'user-1', session_id: 'sid-1' });
    // Another model with the same id is another row.
    expect(await new Adapter('Interaction').find('session-1')).toBeUndefined();

    clock.advance(59_999);
    expect(await sessions.find('session-1')).toBeDefined();
    clock.advance(1);
    expect(await sessions.find('session-1')).toBeUndefined();
  });

  it('keeps codes and refresh tokens only under their SHA-256, without their value in the payload', async () => {
    const tokens = new Adapter('RefreshToken');
    await tokens.upsert('refresh-value', { jti: 'refresh-value', grantId: 'grant-2', clientId: 'app', accountId: 'user-2' }, 600);
    const stored = await rowOf('RefreshToken', sha256Hex('refresh-value'));
    // Found through its grant: the account and client columns (and their indexes) are for sessions and grants.
    expect(stored).toMatchObject({ grant_id: 'grant-2', client_id: null, account_id: null });
    expect(stored.payload).not.toContain('refresh-value');
    expect(await rowOf('RefreshToken', 'refresh-value')).toBeUndefined();
    expect(await tokens.find('refresh-value')).toEqual({
      jti: 'refresh-value',
      grantId: 'grant-2',
      clientId: 'app',
      accountId: 'user-2',
    });
  });

  it('consumes once, keeps the first time, and keeps it when the payload is written again', async () => {
    const codes = new Adapter('AuthorizationCode');
    await codes.upsert('code-1', { jti: 'code-1', grantId: 'grant-3' }, 60);
    expect((await codes.find('code-1'))?.consumed).toBeUndefined();
    await codes.consume('code-1');
    const first = clock.now().getTime() / 1000;
    clock.advance(5_000);
    await codes.consume('code-1');
    expect((await codes.find('code-1'))?.consumed).toBe(first);
    // oidc-provider saves a consumed model again (e.g. a rotated token's successor bookkeeping).
    await codes.upsert('code-1', { jti: 'code-1', grantId: 'grant-3', rotated: true }, 60);
    expect(await codes.find('code-1')).toMatchObject({ rotated: true, consumed: first });
    // Consuming a code that is not there changes nothing and does not fail.
    await codes.consume('no-such-code');
    expect(await codes.find('no-such-code')).toBeUndefined();
  });

  it('destroys one row and revokes every row of a grant', async () => {
    const grants = new Adapter('Grant');
    const tokens = new Adapter('RefreshToken');
    const accessTokens = new Adapter('AccessToken');
    await grants.upsert('grant-4', { accountId: 'user-4', clientId: 'app' }, 600);
    await tokens.upsert('refresh-4a', { jti: 'refresh-4a', grantId: 'grant-4' }, 600);
    await tokens.upsert('refresh-4b', { jti: 'refresh-4b', grantId: 'grant-4' }, 600);
    await accessTokens.upsert('access-5', { jti: 'access-5', grantId: 'grant-5' }, 600);
    // A grant's own row carries its id as its grant id, so revoking the grant removes it too; and its user and
    // client, by which a user's or a client's grants are found.
    expect(await rowOf('Grant', 'grant-4')).toMatchObject({ grant_id: 'grant-4', account_id: 'user-4', client_id: 'app' });

    await tokens.destroy('refresh-4a');
    expect(await tokens.find('refresh-4a')).toBeUndefined();
    expect(await tokens.find('refresh-4b')).toBeDefined();

    await tokens.revokeByGrantId('grant-4');
    expect(await grants.find('grant-4')).toBeUndefined();
    expect(await tokens.find('refresh-4b')).toBeUndefined();
    expect(await accessTokens.find('access-5')).toBeDefined();
  });

  it('refuses to store clients, which are managed through the clients API', async () => {
    await expect(new Adapter('Client').upsert('app', { client_id: 'app' })).rejects.toThrow(/clients API/);
    expect(await database.db('oidc_payloads').where({ model: 'Client' }).first()).toBeUndefined();
  });
});
