import { type JwtClaims, newId } from '@idt/core';
import { coreMigrations, createCacheInvalidator } from '@idt/core/knex';
import { connectTestDatabase, createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CacheNamespaces, createCredentialResolver } from '../src/index.js';
import { createKnexAccessStore, identityMigrations, writeRevocation } from '../src/knex.js';

const now = () => new Date().toISOString();

async function seed(database: TestDatabase) {
  const { db } = database;
  const ids = { user: newId(), other: newId(), orgA: newId(), orgB: newId(), membership: newId(), customMembership: newId() };
  await db('identity_users').insert(
    [ids.user, ids.other].map((id, index) => ({
      id,
      email: `u${index}@example.com`,
      username: `u${index}@example.com`,
      first_name: 'Ada',
      last_name: `Number${index}`,
      status: 'active',
      email_verified: false,
      created_at: now(),
      updated_at: now(),
    })),
  );
  await db('identity_organizations').insert(
    [ids.orgA, ids.orgB].map((id, index) => ({
      id,
      name: `Org ${index}`,
      slug: `org-${index}`,
      enrollment_policy: 'invitation_only',
      status: 'active',
      is_platform: false,
      created_at: now(),
      updated_at: now(),
    })),
  );
  await db('identity_memberships').insert([
    { id: ids.membership, organization_id: ids.orgA, user_id: ids.user, status: 'active', created_at: now(), updated_at: now() },
    {
      id: ids.customMembership,
      organization_id: ids.orgB,
      user_id: ids.user,
      status: 'suspended',
      created_at: now(),
      updated_at: now(),
    },
  ]);
  await db('identity_membership_roles').insert([
    { membership_id: ids.membership, role: 'user' },
    { membership_id: ids.membership, role: 'auditor' },
  ]);
  await db('identity_roles').insert({
    id: newId(),
    organization_id: ids.orgA,
    name: 'auditor',
    description: '',
    permissions: JSON.stringify(['UsersRead', 'InquiriesRead']),
    created_at: now(),
    updated_at: now(),
  });
  return ids;
}

describe.each(testDialects())('credential resolver on %s', (dialect) => {
  let database: TestDatabase;
  let ids: Awaited<ReturnType<typeof seed>>;
  const iat = Math.floor(Date.now() / 1000) - 10;
  const claims = (extra: Partial<JwtClaims>): JwtClaims =>
    ({ iss: 'i', aud: 'a', exp: iat + 900, iat, sub: ids.user, client_id: 'app', ...extra }) as JwtClaims;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations]);
    ids = await seed(database);
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('expands built-in and custom roles of the token organization', async () => {
    const resolver = createCredentialResolver({ store: createKnexAccessStore(database.db) });
    const principal = await resolver.resolveToken(claims({ org_id: ids.orgA, sid: 's1', scope: 'openid profile' }), ids.orgA);
    expect(principal).toMatchObject({
      kind: 'user',
      userId: ids.user,
      organizationId: ids.orgA,
      sessionId: 's1',
      name: 'Ada Number0',
    });
    expect(principal.permissions.has('StorageWrite')).toBe(true);
    expect(principal.permissions.has('UsersRead')).toBe(true);
    expect(principal.permissions.has('InquiriesRead')).toBe(true);
    expect(principal.permissions.has('AdminAccess')).toBe(false);
    expect([...principal.scopes]).toEqual(['openid', 'profile']);
  });

  it('refuses an organization where the membership is not active, or absent', async () => {
    const resolver = createCredentialResolver({ store: createKnexAccessStore(database.db) });
    await expect(resolver.resolveToken(claims({}), ids.orgB)).rejects.toMatchObject({ code: 'Tenant.Forbidden', status: 403 });
    await expect(resolver.resolveToken(claims({ sub: ids.other }), ids.orgA)).rejects.toMatchObject({ code: 'Tenant.Forbidden' });
    const noTenant = await resolver.resolveToken(claims({}), null);
    expect(noTenant.organizationId).toBeNull();
    expect(noTenant.permissions.size).toBe(0);
  });

  it('gives service accounts the permissions of their scopes', async () => {
    const resolver = createCredentialResolver({ store: createKnexAccessStore(database.db) });
    const principal = await resolver.resolveToken(
      claims({ sub: 'sa-org-0-bot', client_id: 'sa-org-0-bot', org_id: ids.orgA, scope: 'users.read inquiries.write nonsense' }),
      ids.orgA,
    );
    expect(principal).toMatchObject({ kind: 'service', userId: null, clientId: 'sa-org-0-bot', organizationId: ids.orgA });
    expect([...principal.permissions].sort()).toEqual(['InquiriesWrite', 'UsersRead']);
  });

  it('refuses tokens issued before a revocation, immediately through the invalidator', async () => {
    const invalidator = createCacheInvalidator({ db: database.db });
    await invalidator.start();
    const resolver = createCredentialResolver({
      store: createKnexAccessStore(database.db),
      subscribe: (namespace, listener) => invalidator.subscribe(namespace, listener),
    });
    try {
      const token = claims({ org_id: ids.orgA, sid: 'session-x' });
      await expect(resolver.resolveToken(token, ids.orgA)).resolves.toBeTruthy();
      await database.db.transaction(async (trx) => {
        await writeRevocation(trx, 'session', 'session-x', new Date(), { all: true });
        await invalidator.invalidate(CacheNamespaces.revocations, 'session:session-x', trx);
      });
      // Real I/O: the eviction reaches the resolver's cache after the commit (over NOTIFY on Postgres).
      await new Promise((resolve) => setTimeout(resolve, 50));
      await expect(resolver.resolveToken(token, ids.orgA)).rejects.toMatchObject({ name: 'UnauthorizedError' });
      await database.db.transaction(async (trx) => {
        await writeRevocation(trx, 'user', ids.user, new Date());
        await writeRevocation(trx, 'user', ids.user, new Date(Date.now() - 3_600_000));
        await invalidator.invalidate(CacheNamespaces.revocations, `user:${ids.user}`, trx);
      });
      // Real I/O: as above, the eviction arrives after the commit.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await expect(resolver.resolveToken(claims({ org_id: ids.orgA }), ids.orgA)).rejects.toMatchObject({
        name: 'UnauthorizedError',
      });
      const later = Math.floor(Date.now() / 1000) + 2;
      await expect(resolver.resolveToken(claims({ org_id: ids.orgA, iat: later }), ids.orgA)).resolves.toBeTruthy();
    } finally {
      await invalidator.close();
    }
  });
  it('rejects once, leaving no unhandled rejection, when the revocation lookup fails (database unreachable)', async () => {
    const closed = connectTestDatabase(database);
    await closed.destroy();
    const resolver = createCredentialResolver({ store: createKnexAccessStore(closed.db) });
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      await expect(resolver.resolveToken(claims({ org_id: ids.orgA, sid: 'session-y' }), ids.orgA)).rejects.toThrow();
      // Real I/O: unhandled rejections are reported after the event loop turns.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });
});
