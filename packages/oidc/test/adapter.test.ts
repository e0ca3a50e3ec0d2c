import { type Clock, createManualClock, sha256Hex } from '@idt/core';
import { type CacheInvalidator, coreMigrations, createCacheInvalidator } from '@idt/core/knex';
import { CacheNamespaces } from '@idt/identity';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClientStore } from '../src/clients/store.js';
import { clientMetadata } from '../src/index.js';
import {
  createKnexAdapterClass,
  createKnexClientStore,
  type KnexAdapterClass,
  type KnexAdapterOptions,
  type OidcAdapter,
  oidcMigrations,
} from '../src/knex.js';
import { storedClientRecord } from './support/clients.js';

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
    await tokens.upsert(
      'refresh-value',
      { jti: 'refresh-value', grantId: 'grant-2', clientId: 'app', accountId: 'user-2', sid: 'sid-2' },
      600,
    );
    const stored = await rowOf('RefreshToken', sha256Hex('refresh-value'));
    // Found through its grant: the account, client and session columns (and their indexes) are for sessions and grants.
    expect(stored).toMatchObject({ grant_id: 'grant-2', client_id: null, account_id: null, session_id: null });
    expect(stored.payload).not.toContain('refresh-value');
    expect(await rowOf('RefreshToken', 'refresh-value')).toBeUndefined();
    expect(await tokens.find('refresh-value')).toEqual({
      jti: 'refresh-value',
      grantId: 'grant-2',
      clientId: 'app',
      accountId: 'user-2',
      sid: 'sid-2',
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

/**
 * oidc-provider looks a client up through the adapter's `Client` model. The
 * adapter reads the clients table through the client store and keeps what it
 * read until the client changes; with `providerKeepsClients` (idt's provider
 * keeps the instances it builds) it keeps only the ids that do not exist.
 * Rows are changed behind the store's back here, to see what was kept.
 */
describe.each(testDialects())('client lookups through the adapter, on %s', (dialect) => {
  let database: TestDatabase;
  let invalidator: CacheInvalidator;
  let store: ClientStore;
  const at = '2026-03-01T10:00:00.000Z';

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, oidcMigrations]);
    invalidator = createCacheInvalidator({ db: database.db });
    store = createKnexClientStore(database.db, invalidator);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  const adapterFor = (providerKeepsClients: boolean) =>
    new (createKnexAdapterClass({
      db: database.db,
      invalidator,
      findClient: (id) => store.find(id),
      clientMetadata,
      providerKeepsClients,
    }))('Client');
  const register = (clientId: string) =>
    store.insert(storedClientRecord({ clientId, name: 'Before', secretHash: `sha256:${sha256Hex('secret')}` }));
  const renameBehindTheStore = (clientId: string, name: string) =>
    database.db('oidc_clients').where({ client_id: clientId }).update({ name });

  it('keeps a client it read until the client changes', async () => {
    const clients = adapterFor(false);
    await register('sa-kept');
    expect(await clients.find('sa-kept')).toMatchObject({ client_id: 'sa-kept', client_name: 'Before' });

    await renameBehindTheStore('sa-kept', 'After');
    expect(await clients.find('sa-kept')).toMatchObject({ client_name: 'Before' });
    await invalidator.invalidate(CacheNamespaces.clients, 'sa-kept');
    expect(await clients.find('sa-kept')).toMatchObject({ client_name: 'After' });
  });

  it('with providerKeepsClients, reads a client again each time and hands out what only the provider reads', async () => {
    const clients = adapterFor(true);
    await register('sa-read');
    const metadata = await clients.find('sa-read');
    expect(metadata).toMatchObject({ client_id: 'sa-read', client_name: 'Before', idt_api_scopes: 'users.read' });
    expect(Object.keys(metadata ?? {}).filter((key) => key.startsWith('idt_'))).toEqual([
      'idt_api_scopes',
      'idt_organization_id',
    ]);

    await renameBehindTheStore('sa-read', 'After');
    expect(await clients.find('sa-read')).toMatchObject({ client_name: 'After' });
  });

  it('with providerKeepsClients, still remembers an id that does not exist, until a client of that id is registered', async () => {
    const clients = adapterFor(true);
    expect(await clients.find('sa-later')).toBeUndefined();

    // The row appears without the store's eviction: the id stays unknown.
    await database.db('oidc_clients').insert({
      client_id: 'sa-later',
      kind: 'service-account',
      name: 'Quiet',
      status: 'active',
      first_party: false,
      redirect_uris: '[]',
      post_logout_redirect_uris: '[]',
      backchannel_logout_session_required: false,
      scopes: '[]',
      secret_hash: `sha256:${sha256Hex('secret')}`,
      created_at: at,
      updated_at: at,
    });
    expect(await clients.find('sa-later')).toBeUndefined();

    await invalidator.invalidate(CacheNamespaces.clients, 'sa-later');
    expect(await clients.find('sa-later')).toMatchObject({ client_id: 'sa-later', client_name: 'Quiet' });
  });
});

/**
 * Within a request, the provider reads a code or a refresh token and then
 * its grant: the adapter reads both in one statement and hands the grant to
 * that next read, once.
 */
/** The adapter on a test database, with no clients, serving the request `currentRequest` answers (oidc-provider's `Provider.ctx`). */
function requestAdapter(
  database: TestDatabase,
  clock: Clock,
  currentRequest: () => object | undefined,
  options: Pick<KnexAdapterOptions, 'deferConsumption'> = {},
): KnexAdapterClass {
  return createKnexAdapterClass({
    db: database.db,
    clock,
    invalidator: createCacheInvalidator({ db: database.db }),
    findClient: async () => undefined,
    clientMetadata: () => ({}),
    currentRequest,
    ...options,
  });
}

describe.each(testDialects())('a token and its grant read together within a request, on %s', (dialect) => {
  let database: TestDatabase;
  const clock = createManualClock('2026-03-01T10:00:00Z');
  let Adapter: new (name: string) => OidcAdapter;
  /** The request being served, as oidc-provider's `Provider.ctx` gives it. */
  let request: object | undefined;
  /** The payload statements run since the last `take()`. */
  const statements: string[] = [];
  const take = () => statements.splice(0).map((sql) => (/ left join /.test(sql) ? 'token and grant' : 'one row'));

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, oidcMigrations]);
    Adapter = requestAdapter(database, clock, () => request);
    database.db.on('query', (query: { sql: string }) => {
      if (/^select .* from oidc_payloads/.test(query.sql)) statements.push(query.sql);
    });
  });
  afterAll(async () => {
    await database?.destroy();
  });

  it('reads a refresh token and its grant in one statement, and the grant once from it', async () => {
    const grants = new Adapter('Grant');
    const tokens = new Adapter('RefreshToken');
    await grants.upsert('grant-a', { accountId: 'user-a', clientId: 'app' }, 600);
    await tokens.upsert('refresh-a', { jti: 'refresh-a', grantId: 'grant-a' }, 600);
    take();

    request = {};
    expect(await tokens.find('refresh-a')).toMatchObject({ grantId: 'grant-a' });
    expect(await grants.find('grant-a')).toEqual({ accountId: 'user-a', clientId: 'app' });
    expect(take()).toEqual(['token and grant']);
    // Handed out once: a second read of the grant reads the database.
    expect(await grants.find('grant-a')).toEqual({ accountId: 'user-a', clientId: 'app' });
    expect(take()).toEqual(['one row']);

    // Another request does not see what this one read.
    expect(await tokens.find('refresh-a')).toBeDefined();
    request = {};
    expect(await grants.find('grant-a')).toBeDefined();
    expect(take()).toEqual(['token and grant', 'one row']);
  });

  it('does the same for an authorization code; outside a request, each read is its own statement', async () => {
    const grants = new Adapter('Grant');
    const codes = new Adapter('AuthorizationCode');
    await grants.upsert('grant-b', { accountId: 'user-b' }, 600);
    await codes.upsert('code-b', { jti: 'code-b', grantId: 'grant-b' }, 60);
    take();

    request = {};
    expect(await codes.find('code-b')).toMatchObject({ grantId: 'grant-b' });
    expect(await grants.find('grant-b')).toEqual({ accountId: 'user-b' });
    expect(take()).toEqual(['token and grant']);

    request = undefined;
    expect(await codes.find('code-b')).toMatchObject({ grantId: 'grant-b' });
    expect(await grants.find('grant-b')).toEqual({ accountId: 'user-b' });
    expect(take()).toEqual(['one row', 'one row']);
  });

  it('reads the grant again when the request wrote it, or revoked it, after reading the token', async () => {
    const grants = new Adapter('Grant');
    const tokens = new Adapter('RefreshToken');
    await grants.upsert('grant-c', { accountId: 'user-c', scope: 'openid' }, 600);
    await tokens.upsert('refresh-c', { jti: 'refresh-c', grantId: 'grant-c' }, 600);

    request = {};
    await tokens.find('refresh-c');
    await grants.upsert('grant-c', { accountId: 'user-c', scope: 'openid offline_access' }, 600);
    expect(await grants.find('grant-c')).toEqual({ accountId: 'user-c', scope: 'openid offline_access' });

    request = {};
    await tokens.find('refresh-c');
    await tokens.revokeByGrantId('grant-c');
    expect(await grants.find('grant-c')).toBeUndefined();
    request = undefined;
  });

  it('answers no grant for a token whose grant is gone or expired, as a read of the grant would', async () => {
    const grants = new Adapter('Grant');
    const tokens = new Adapter('RefreshToken');
    await tokens.upsert('refresh-d', { jti: 'refresh-d', grantId: 'grant-missing' }, 600);
    await grants.upsert('grant-e', { accountId: 'user-e' }, 60);
    await tokens.upsert('refresh-e', { jti: 'refresh-e', grantId: 'grant-e' }, 600);
    take();

    request = {};
    expect(await tokens.find('refresh-d')).toMatchObject({ grantId: 'grant-missing' });
    expect(await grants.find('grant-missing')).toBeUndefined();
    expect(await tokens.find('refresh-e')).toBeDefined();
    clock.advance(60_000);
    // Expired between the two reads: the grant's expiry is judged when the provider reads it.
    expect(await grants.find('grant-e')).toBeUndefined();
    expect(take()).toEqual(['token and grant', 'token and grant']);
    expect(await tokens.find('no-such-token')).toBeUndefined();
    request = undefined;
  });
});

describe.each(testDialects())("a consumption written with the request's next write, on %s", (dialect) => {
  let database: TestDatabase;
  const clock = createManualClock('2026-03-01T10:00:00Z');
  let Adapter: KnexAdapterClass;
  /** The request being served, as oidc-provider's `Provider.ctx` gives it. */
  let request: object | undefined;
  /** The statements run on `oidc_payloads` (and transaction control) since the last `take()`. */
  const statements: string[] = [];
  const take = () =>
    statements.splice(0).map((sql) => {
      if (/^with successor as \(insert .*\) update /i.test(sql)) return 'insert and consume';
      return sql.split(' ')[0]?.toLowerCase() ?? sql;
    });
  const consumedAt = async (id: string) =>
    (
      await database
        .db('oidc_payloads')
        .where({ model: 'RefreshToken', id: sha256Hex(id) })
        .first()
    )?.consumed_at ?? null;
  const stored = async (id: string) =>
    (await database
      .db('oidc_payloads')
      .where({ model: 'RefreshToken', id: sha256Hex(id) })
      .first()) !== undefined;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, oidcMigrations]);
    Adapter = requestAdapter(database, clock, () => request, { deferConsumption: true });
    // The adapter's own statements (the test's reads go through knex's builder).
    database.db.on('query', (query: { sql: string; method?: string }) => {
      if (query.method === 'raw' && /oidc_payloads|^(begin|commit|rollback)/i.test(query.sql)) statements.push(query.sql);
    });
    // A successor whose id starts with `refused` cannot be stored: a write that fails half-way.
    if (dialect === 'postgres') {
      await database.db.raw(
        `create function refuse_payload() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`,
      );
      await database.db.raw(
        `create trigger refuse_payload before insert on oidc_payloads for each row when (new.payload like '%"refused":true%') execute function refuse_payload()`,
      );
    } else {
      await database.db.raw(
        `create trigger refuse_payload before insert on oidc_payloads when new.payload like '%"refused":true%' begin select raise(abort, 'refused'); end`,
      );
    }
  });
  afterAll(async () => {
    await database?.destroy();
  });

  it('writes a rotation, the consumption and its successor, as one statement (Postgres) or one transaction (SQLite)', async () => {
    const tokens = new Adapter('RefreshToken');
    await tokens.upsert('old-a', { jti: 'old-a', grantId: 'grant-a' }, 600);
    take();

    request = {};
    await tokens.consume('old-a');
    expect(take()).toEqual([]);
    expect(await consumedAt('old-a')).toBeNull();
    await tokens.upsert('new-a', { jti: 'new-a', grantId: 'grant-a' }, 600);
    expect(take()).toEqual(dialect === 'postgres' ? ['insert and consume'] : ['begin', 'update', 'insert', 'commit']);
    expect(await consumedAt('old-a')).not.toBeNull();
    expect(await stored('new-a')).toBe(true);
    // Written once: settling the request afterwards writes nothing.
    await Adapter.settle(request);
    expect(take()).toEqual([]);
    request = undefined;
  });

  it("keeps the first redemption's time when a consumed token rotates again (a tolerated replay)", async () => {
    const tokens = new Adapter('RefreshToken');
    await tokens.upsert('old-b', { jti: 'old-b', grantId: 'grant-b' }, 600);
    request = {};
    await tokens.consume('old-b');
    await tokens.upsert('new-b', { jti: 'new-b', grantId: 'grant-b' }, 600);
    const first = await consumedAt('old-b');

    clock.advance(5_000);
    request = {};
    expect(await tokens.find('old-b')).toMatchObject({ consumed: expect.any(Number) });
    await tokens.consume('old-b');
    await tokens.upsert('new-b', { jti: 'new-b', grantId: 'grant-b', rotations: 1 }, 600);
    expect(await consumedAt('old-b')).toEqual(first);
    expect(await tokens.find('new-b')).toMatchObject({ rotations: 1 });
    request = undefined;
  });

  it('settle writes a consumption that no write followed, and nothing when there is none', async () => {
    const codes = new Adapter('AuthorizationCode');
    await codes.upsert('code-c', { jti: 'code-c', grantId: 'grant-c' }, 60);
    const codeConsumed = async () =>
      (
        await database
          .db('oidc_payloads')
          .where({ model: 'AuthorizationCode', id: sha256Hex('code-c') })
          .first()
      )?.consumed_at;
    take();

    const answered = {};
    request = answered;
    await codes.consume('code-c');
    request = undefined;
    expect(await codeConsumed()).toBeNull();
    await Adapter.settle(answered);
    expect(take()).toEqual(['update']);
    expect(await codeConsumed()).not.toBeNull();
    await Adapter.settle(answered);
    await Adapter.settle({});
    expect(take()).toEqual([]);
  });

  it("writes the consumption first when the request's next call reads, destroys or revokes", async () => {
    const tokens = new Adapter('RefreshToken');
    for (const id of ['old-d', 'old-e', 'old-f']) await tokens.upsert(id, { jti: id, grantId: `grant-${id}` }, 600);

    request = {};
    await tokens.consume('old-d');
    expect(await tokens.find('old-d')).toMatchObject({ consumed: expect.any(Number) });

    request = {};
    await tokens.consume('old-e');
    await tokens.destroy('old-f');
    expect(await consumedAt('old-e')).not.toBeNull();

    request = {};
    await tokens.consume('old-f-none');
    await tokens.consume('old-e');
    await tokens.revokeByGrantId('grant-old-e');
    expect(await stored('old-e')).toBe(false);
    request = undefined;
  });

  it('outside a request, consumes at once', async () => {
    const tokens = new Adapter('RefreshToken');
    await tokens.upsert('old-g', { jti: 'old-g', grantId: 'grant-g' }, 600);
    take();
    request = undefined;
    await tokens.consume('old-g');
    expect(take()).toEqual(['update']);
    expect(await consumedAt('old-g')).not.toBeNull();
  });

  it('writes neither when the successor cannot be stored: the token can be redeemed again', async () => {
    const tokens = new Adapter('RefreshToken');
    await tokens.upsert('old-h', { jti: 'old-h', grantId: 'grant-h' }, 600);

    const failed = {};
    request = failed;
    await tokens.consume('old-h');
    await expect(tokens.upsert('new-h', { jti: 'new-h', grantId: 'grant-h', refused: true }, 600)).rejects.toThrow(/refused/);
    expect(await consumedAt('old-h')).toBeNull();
    expect(await stored('new-h')).toBe(false);
    // The failed write took the consumption with it: the answer is an error, and the token stays usable.
    take();
    await Adapter.settle(failed);
    expect(take()).toEqual([]);

    request = {};
    expect(await tokens.find('old-h')).not.toHaveProperty('consumed');
    await tokens.consume('old-h');
    await tokens.upsert('new-h', { jti: 'new-h', grantId: 'grant-h' }, 600);
    expect(await consumedAt('old-h')).not.toBeNull();
    expect(await stored('new-h')).toBe(true);
    request = undefined;
  });
});
