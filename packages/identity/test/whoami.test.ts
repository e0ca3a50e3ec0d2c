import { BUILT_IN_ROLE_PERMISSIONS } from '@idt/identity';
import {
  createTestIdt,
  mintAccessToken,
  mintServiceToken,
  seedMembership,
  seedOrganization,
  seedTenant,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, jsonInit } from './credentials-support.js';

const WHOAMI = '/v1/identity/auth/whoami';

describe.each(testDialects())('GET /v1/identity/auth/whoami on %s', (dialect) => {
  let server: TestIdt;
  let tenant: Awaited<ReturnType<typeof seedTenant>>;
  let other: { id: string };

  const whoami = (headers: Record<string, string> = {}) => server.fetch(WHOAMI, { headers });
  const ok = async (headers: Record<string, string>) => {
    const response = await whoami(headers);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    return (await response.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    tenant = await seedTenant(server.database.db);
    other = await seedOrganization(server.database.db);
  });
  afterAll(async () => {
    await server.close();
  });

  it('describes a user token: its organization, the role permissions there and the token scopes', async () => {
    const token = await mintAccessToken(server, {
      sub: tenant.user.id,
      org_id: tenant.organization.id,
      sid: 'session-1',
      scope: 'openid profile',
    });
    expect(await ok({ authorization: `Bearer ${token}` })).toEqual({
      kind: 'user',
      subject: tenant.user.id,
      userId: tenant.user.id,
      clientId: expect.any(String),
      organizationId: tenant.organization.id,
      sessionId: 'session-1',
      permissions: [...BUILT_IN_ROLE_PERMISSIONS.user].sort(),
      scopes: ['openid', 'profile'],
    });
  });

  it('answers an organization-less token with no organization and no permissions', async () => {
    const token = await mintAccessToken(server, { sub: tenant.owner.id });
    expect(await ok({ authorization: `Bearer ${token}` })).toMatchObject({
      kind: 'user',
      userId: tenant.owner.id,
      organizationId: null,
      permissions: [],
    });
  });

  it('describes a service account by its client id and granted scopes', async () => {
    const token = await mintServiceToken(server, {
      clientId: 'sa-whoami',
      organizationId: tenant.organization.id,
      scope: 'users.read',
    });
    expect(await ok({ authorization: `Bearer ${token}` })).toEqual({
      kind: 'service',
      subject: 'sa-whoami',
      userId: null,
      clientId: 'sa-whoami',
      organizationId: tenant.organization.id,
      sessionId: null,
      permissions: ['UsersRead'],
      scopes: ['users.read'],
    });
  });

  it('describes an API key by its creator, its organization and its scopes', async () => {
    const token = await mintAccessToken(server, { sub: tenant.admin.id, org_id: tenant.organization.id });
    const created = await server.fetch(
      '/v1/identity/auth/keys',
      jsonInit('POST', { name: 'whoami', scopes: ['users.read'] }, { authorization: `Bearer ${token}` }),
    );
    expect(created.status).toBe(201);
    const { apiKey } = (await created.json()) as { apiKey: string };
    expect(await ok({ 'x-api-key': apiKey })).toMatchObject({
      kind: 'apiKey',
      userId: tenant.admin.id,
      organizationId: tenant.organization.id,
      permissions: ['UsersRead'],
      scopes: ['users.read'],
    });
  });

  it('refuses a missing, malformed, expired or foreign-signed credential with 401', async () => {
    await expectProblem(await whoami(), 401, 'Auth.Unauthenticated');
    const garbage = await whoami({ authorization: 'Bearer not-a-jwt' });
    expect(garbage.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", error_description="/);
    await expectProblem(garbage, 401, 'Auth.Unauthenticated');
    const expired = await mintAccessToken(server, { sub: tenant.user.id, org_id: tenant.organization.id }, { expiresIn: -600 });
    await expectProblem(await whoami({ authorization: `Bearer ${expired}` }), 401, 'Auth.Unauthenticated');
    await expectProblem(await whoami({ 'x-api-key': 'sk_live_unknown' }), 401, 'Auth.Unauthenticated');
  });

  it('never lets X-Tenant-Id name an organization the caller is not a member of', async () => {
    const token = await mintAccessToken(server, { sub: tenant.user.id });
    await expectProblem(await whoami({ authorization: `Bearer ${token}`, 'x-tenant-id': other.id }), 403, 'Tenant.Forbidden');
    // A member who names the organization gets its permissions.
    await seedMembership(server.database.db, { userId: tenant.manager.id, organizationId: other.id, roles: ['user'] });
    const manager = await mintAccessToken(server, { sub: tenant.manager.id });
    expect(await ok({ authorization: `Bearer ${manager}`, 'x-tenant-id': other.id })).toMatchObject({
      organizationId: other.id,
      permissions: [...BUILT_IN_ROLE_PERMISSIONS.user].sort(),
    });
  });
});
