import { createHash } from 'node:crypto';
import { createManualClock, newId } from '@idt/core';
import { BUILT_IN_ROLE_PERMISSIONS, scopesWithin } from '@idt/identity';
import {
  bearer,
  createTestIdt,
  mintAccessToken,
  mintServiceToken,
  seedMembership,
  seedOrganization,
  seedTenant,
  seedUser,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, expectProblem, jsonInit } from './credentials-support.js';

interface Created {
  keyId: string;
  apiKey: string;
  prefix: string;
  name: string;
  scopes: string[];
  expiresAt: string | null;
}

describe.each(testDialects())('API keys over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let tenant: Awaited<ReturnType<typeof seedTenant>>;
  let otherOrg: { id: string };
  let viewer: { id: string };
  let platformOwner: { id: string };
  let platformOrg: { id: string };
  // Key expiry reads this clock.
  const clock = createManualClock();

  const tokenFor = (userId: string, orgId?: string) =>
    mintAccessToken(server, { sub: userId, ...(orgId ? { org_id: orgId } : {}) });
  const create = async (token: string, body: unknown) =>
    server.fetch('/v1/identity/auth/keys', jsonInit('POST', body, { authorization: `Bearer ${token}` }));
  const createOk = async (token: string, body: unknown): Promise<Created> => {
    const response = await create(token, body);
    expect(response.status).toBe(201);
    return (await response.json()) as Created;
  };

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    const { db } = server.database;
    tenant = await seedTenant(db);
    otherOrg = await seedOrganization(db);
    // The plain user is also a member of another organization.
    await seedMembership(db, { userId: tenant.user.id, organizationId: otherOrg.id, roles: ['user'] });
    // A custom role without any API key permission.
    const now = new Date().toISOString();
    await db('identity_roles').insert({
      id: newId(),
      organization_id: tenant.organization.id,
      name: 'viewer',
      description: '',
      permissions: JSON.stringify(['OrganizationsRead']),
      created_at: now,
      updated_at: now,
    });
    viewer = await seedUser(db);
    await seedMembership(db, { userId: viewer.id, organizationId: tenant.organization.id, roles: ['viewer'] });
    platformOrg = await seedOrganization(db, { isPlatform: true });
    platformOwner = await seedUser(db);
    await seedMembership(db, { userId: platformOwner.id, organizationId: platformOrg.id, roles: ['owner'] });
  });
  afterAll(async () => {
    await server.close();
  });

  it('creates a key shown once, stored only as its SHA-256, that authenticates with X-Api-Key', async () => {
    const token = await tokenFor(tenant.user.id, tenant.organization.id);
    const created = await createOk(token, { name: '  CI deploys ' });
    expect(created.apiKey).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/);
    expect(created.prefix).toBe(created.apiKey.slice(0, 16));
    expect(created).toMatchObject({ name: 'CI deploys', expiresAt: null });
    expect(created.scopes).toEqual(scopesWithin(new Set(BUILT_IN_ROLE_PERMISSIONS.user)));
    expect(created.scopes).toEqual(expect.arrayContaining(['apikeys.read', 'storage.read']));
    expect(created.scopes).not.toContain('apikeys.manage');

    const row = await server.database.db('identity_api_keys').where({ id: created.keyId }).first();
    expect(JSON.stringify(row)).not.toContain(created.apiKey);
    expect(JSON.stringify(row)).not.toContain(created.apiKey.slice(16));
    expect(row.key_hash).toBe(createHash('sha256').update(created.apiKey).digest('hex'));
    expect(row).toMatchObject({ user_id: tenant.user.id, organization_id: tenant.organization.id, prefix: created.prefix });

    const listed = await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': created.apiKey } });
    expect(listed.status).toBe(200);
    const keys = (await listed.json()) as Array<Record<string, unknown>>;
    const mine = keys.find((key) => key.keyId === created.keyId);
    expect(mine).toMatchObject({ name: 'CI deploys', prefix: created.prefix, scopes: created.scopes, expiresAt: null });
    expect(Object.keys(mine ?? {}).sort()).toEqual(['createdAt', 'expiresAt', 'keyId', 'lastUsedAt', 'name', 'prefix', 'scopes']);
    expect(JSON.stringify(keys)).not.toContain(created.apiKey);
    // Use is recorded (throttled in the background).
    await expect
      .poll(async () => (await server.database.db('identity_api_keys').where({ id: created.keyId }).first()).last_used_at)
      .not.toBeNull();
  });

  it('refuses bad input with Validation.Failed keyed by field, writing nothing', async () => {
    const token = await tokenFor(tenant.manager.id, tenant.organization.id);
    const before = await countRows(server, 'identity_api_keys', { user_id: tenant.manager.id });
    const cases: Array<[unknown, string[]]> = [
      [{}, ['name']],
      [{ name: ' ' }, ['name']],
      [{ name: 'x'.repeat(101) }, ['name']],
      [{ name: 'k', scopes: ['users.read', 'no.such.scope'] }, ['scopes']],
      [{ name: 'k', scopes: ['openid'] }, ['scopes']],
      [{ name: 'k', scopes: [] }, ['scopes']],
      [{ name: 'k', expiresAt: 'tomorrow' }, ['expiresAt']],
      [{ name: 'k', expiresAt: new Date(clock.now().getTime() - 60_000).toISOString() }, ['expiresAt']],
      [{ name: 'k', expiresAt: clock.now().toISOString() }, ['expiresAt']],
    ];
    for (const [body, fields] of cases) {
      const problem = await expectProblem(await create(token, body), 400, 'Validation.Failed');
      expect(Object.keys(problem.errors as object)).toEqual(fields);
    }
    expect(await countRows(server, 'identity_api_keys', { user_id: tenant.manager.id })).toBe(before);
  });

  it('answers 401 without a credential and for an unknown, malformed or revoked key', async () => {
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', jsonInit('POST', { name: 'k' })),
      401,
      'Auth.Unauthenticated',
    );
    await expectProblem(await server.fetch('/v1/identity/auth/keys'), 401, 'Auth.Unauthenticated');
    await expectProblem(
      await server.fetch(`/v1/identity/auth/keys/${newId()}`, { method: 'DELETE' }),
      401,
      'Auth.Unauthenticated',
    );
    for (const key of [`sk_live_${'A'.repeat(43)}`, 'sk_live_short', 'not-a-key']) {
      await expectProblem(
        await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': key } }),
        401,
        'Auth.Unauthenticated',
      );
    }
  });

  it('requires an organization, ApiKeysCreate and a user bearer token', async () => {
    await expectProblem(await create(await tokenFor(tenant.user.id), { name: 'k' }), 403, 'ApiKeys.OrganizationRequired');
    await expectProblem(await create(await tokenFor(viewer.id, tenant.organization.id), { name: 'k' }), 403, 'Auth.Forbidden');
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', { headers: bearer(await tokenFor(viewer.id, tenant.organization.id)) }),
      403,
      'Auth.Forbidden',
    );
    const service = await mintServiceToken(server, { clientId: 'sa-acme-robot', organizationId: tenant.organization.id });
    await expectProblem(await create(service, { name: 'k' }), 403, 'Auth.Forbidden');
    await expectProblem(await server.fetch('/v1/identity/auth/keys', { headers: bearer(service) }), 403, 'Auth.Forbidden');
    // An API key cannot mint more keys.
    const { apiKey } = await createOk(await tokenFor(tenant.admin.id, tenant.organization.id), { name: 'robot' });
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', jsonInit('POST', { name: 'child' }, { 'x-api-key': apiKey })),
      403,
      'Auth.Forbidden',
    );
    expect(await countRows(server, 'identity_api_keys', { user_id: viewer.id })).toBe(0);
  });

  it('refuses scopes beyond the caller’s permissions, platform-only scopes included', async () => {
    const userToken = await tokenFor(tenant.user.id, tenant.organization.id);
    const beyond = await expectProblem(
      await create(userToken, { name: 'k', scopes: ['storage.read', 'users.read'] }),
      403,
      'ApiKeys.ScopeExceedsPermissions',
    );
    expect(beyond.detail).toContain('UsersRead');
    // The user role holds ApiKeyManage, but apikeys.manage is platform-only.
    await expectProblem(
      await create(userToken, { name: 'k', scopes: ['apikeys.manage'] }),
      403,
      'ApiKeys.ScopeExceedsPermissions',
    );
    await expectProblem(
      await create(await tokenFor(tenant.owner.id, tenant.organization.id), { name: 'k', scopes: ['webhooks.manage'] }),
      403,
      'ApiKeys.ScopeExceedsPermissions',
    );
    const platform = await createOk(await tokenFor(platformOwner.id, platformOrg.id), {
      name: 'ops',
      scopes: ['apikeys.manage', 'users.read', 'users.read'],
    });
    expect(platform.scopes).toEqual(['apikeys.manage', 'users.read']);
    const explicit = await createOk(userToken, { name: 'storage only', scopes: ['storage.read'] });
    expect(explicit.scopes).toEqual(['storage.read']);
    // A key without apikeys.read cannot list keys, even though its creator can.
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': explicit.apiKey } }),
      403,
      'Auth.Forbidden',
    );
  });

  it('allows at most 10 live keys per user, also under concurrent creation', async () => {
    const user = await seedUser(server.database.db);
    await seedMembership(server.database.db, { userId: user.id, organizationId: tenant.organization.id, roles: ['user'] });
    const token = await tokenFor(user.id, tenant.organization.id);
    const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => create(token, { name: `key ${i}` })));
    expect(responses.map((response) => response.status).sort()).toEqual([...Array(10).fill(201), 422, 422]);
    const refused = responses.find((response) => response.status === 422) as Response;
    await expectProblem(refused, 422, 'ApiKeys.LimitReached');
    expect(await countRows(server, 'identity_api_keys', { user_id: user.id })).toBe(10);
    await expectProblem(await create(token, { name: 'eleventh' }), 422, 'ApiKeys.LimitReached');

    // A deleted or expired key frees its place.
    const [first] = (await (await server.fetch('/v1/identity/auth/keys', { headers: bearer(token) })).json()) as Created[];
    expect(
      (await server.fetch(`/v1/identity/auth/keys/${first?.keyId}`, { method: 'DELETE', headers: bearer(token) })).status,
    ).toBe(204);
    await createOk(token, { name: 'replacement', expiresAt: new Date(clock.now().getTime() + 60_000).toISOString() });
    await expectProblem(await create(token, { name: 'still full' }), 422, 'ApiKeys.LimitReached');
    clock.advance(60_000);
    await createOk(token, { name: 'after expiry' });
    await expectProblem(await create(token, { name: 'one too many' }), 422, 'ApiKeys.LimitReached');
  });

  it('deletes your own key (it stops working at once) and answers 404 for other users’ and organizations’ keys', async () => {
    const userToken = await tokenFor(tenant.user.id, tenant.organization.id);
    const mine = await createOk(userToken, { name: 'to delete' });
    const managerKey = await createOk(await tokenFor(tenant.manager.id, tenant.organization.id), { name: 'manager’s' });
    const otherOrgToken = await tokenFor(tenant.user.id, otherOrg.id);

    expect((await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': mine.apiKey } })).status).toBe(200);
    // Another user's key in the same organization.
    await expectProblem(
      await server.fetch(`/v1/identity/auth/keys/${managerKey.keyId}`, { method: 'DELETE', headers: bearer(userToken) }),
      404,
      'ApiKeys.NotFound',
    );
    // My own key, but asked from another organization.
    await expectProblem(
      await server.fetch(`/v1/identity/auth/keys/${mine.keyId}`, { method: 'DELETE', headers: bearer(otherOrgToken) }),
      404,
      'ApiKeys.NotFound',
    );
    const otherList = (await (
      await server.fetch('/v1/identity/auth/keys', { headers: bearer(otherOrgToken) })
    ).json()) as Created[];
    expect(otherList).toEqual([]);
    const rows = await server.database.db('identity_api_keys').whereIn('id', [managerKey.keyId, mine.keyId]);
    expect(rows.map((row) => row.revoked_at)).toEqual([null, null]);
    expect((await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': managerKey.apiKey } })).status).toBe(200);

    // An API key without apikeys.manage cannot delete keys.
    await expectProblem(
      await server.fetch(`/v1/identity/auth/keys/${mine.keyId}`, { method: 'DELETE', headers: { 'x-api-key': mine.apiKey } }),
      403,
      'Auth.Forbidden',
    );

    const deleted = await server.fetch(`/v1/identity/auth/keys/${mine.keyId}`, { method: 'DELETE', headers: bearer(userToken) });
    expect(deleted.status).toBe(204);
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': mine.apiKey } }),
      401,
      'Auth.Unauthenticated',
    );
    await expectProblem(
      await server.fetch(`/v1/identity/auth/keys/${mine.keyId}`, { method: 'DELETE', headers: bearer(userToken) }),
      404,
      'ApiKeys.NotFound',
    );
    const listed = (await (await server.fetch('/v1/identity/auth/keys', { headers: bearer(userToken) })).json()) as Created[];
    expect(listed.map((key) => key.keyId)).not.toContain(mine.keyId);
    const malformed = await server.fetch('/v1/identity/auth/keys/nope', { method: 'DELETE', headers: bearer(userToken) });
    await expectProblem(malformed, 400, 'Validation.Failed');
  });

  it('refuses an expired key with 401', async () => {
    const token = await tokenFor(tenant.user.id, tenant.organization.id);
    const expiresAt = new Date(clock.now().getTime() + 1500).toISOString();
    const created = await createOk(token, { name: 'short-lived', expiresAt });
    expect(created.expiresAt).toBe(expiresAt);
    expect((await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': created.apiKey } })).status).toBe(200);
    clock.advance(1499);
    expect((await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': created.apiKey } })).status).toBe(200);
    clock.advance(1);
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': created.apiKey } }),
      401,
      'Auth.Unauthenticated',
    );
  });

  it('lets a key do only what its creator can still do in its organization', async () => {
    const { db } = server.database;
    const user = await seedUser(db);
    const membership = await seedMembership(db, { userId: user.id, organizationId: tenant.organization.id, roles: ['user'] });
    const created = await createOk(await tokenFor(user.id, tenant.organization.id), { name: 'k', scopes: ['apikeys.read'] });
    expect((await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': created.apiKey } })).status).toBe(200);
    // An X-Tenant-Id naming another organization is refused.
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': created.apiKey, 'x-tenant-id': otherOrg.id } }),
      403,
      'Tenant.Forbidden',
    );
    await db('identity_membership_roles').where({ membership_id: membership.id }).update({ role: 'viewer' });
    await server.idt.infrastructure.invalidator.invalidate('identity.memberships', `${user.id}:${tenant.organization.id}`);
    await expectProblem(
      await server.fetch('/v1/identity/auth/keys', { headers: { 'x-api-key': created.apiKey } }),
      403,
      'Auth.Forbidden',
    );
  });
});
