import { newId } from '@idt/core';
import { createTestIdt, mintAccessToken, seedMembership, seedUser, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, organizationRows, rolesOf, seedWorld } from './accounts-helpers.js';

describe.each(testDialects())('roles over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  let betaRoleId: string;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
    betaRoleId = newId();
    const now = new Date().toISOString();
    await server.database.db('identity_roles').insert({
      id: betaRoleId,
      organization_id: world.b.organization.id,
      name: 'beta-secret',
      description: 'Only in Beta',
      permissions: JSON.stringify(['UsersRead']),
      created_at: now,
      updated_at: now,
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('lists the built-in roles and only the tenant’s custom roles', async () => {
    const roles = await expectJson(await call('GET', '/v1/identity/roles', { token: world.a.tokens.admin }));
    expect(roles.map((role: { name: string }) => role.name)).toEqual(['owner', 'admin', 'manager', 'user']);
    expect(roles[2]).toMatchObject({ id: null, builtIn: true, permissions: expect.arrayContaining(['UsersRead']) });
    const beta = await expectJson(await call('GET', '/v1/identity/roles', { token: world.b.tokens.admin }));
    expect(beta.map((role: { name: string }) => role.name)).toContain('beta-secret');
    await expectProblem(await call('GET', '/v1/identity/roles', { token: world.a.tokens.manager }), 403, 'Auth.Forbidden');
    await expectProblem(await call('GET', '/v1/identity/roles'), 401, 'Auth.Unauthenticated');
  });

  it('creates, assigns, narrows and deletes a custom role, with effect on the next request', async () => {
    const db = server.database.db;
    const created = await expectJson(
      await call('POST', '/v1/identity/roles', {
        token: world.a.tokens.admin,
        body: { name: ' Auditor ', description: 'Reads users', permissions: ['UsersRead', 'InquiriesRead', 'UsersRead'] },
      }),
      201,
    );
    expect(created).toEqual({
      id: expect.any(String),
      name: 'auditor',
      description: 'Reads users',
      permissions: ['UsersRead', 'InquiriesRead'],
      builtIn: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const auditor = await seedUser(db);
    await seedMembership(db, { userId: auditor.id, organizationId: world.a.organization.id, roles: ['user'] });
    const token = await mintAccessToken(server, { sub: auditor.id, org_id: world.a.organization.id });
    await expectProblem(await call('GET', '/v1/identity/users', { token }), 403, 'Auth.Forbidden');
    await expectJson(
      await call('PUT', `/v1/identity/organizations/${world.a.organization.id}/members/${auditor.id}/roles`, {
        token: world.a.tokens.admin,
        body: { roles: ['user', 'AUDITOR'] },
      }),
    );
    expect((await call('GET', '/v1/identity/users', { token })).status).toBe(200);

    const narrowed = await expectJson(
      await call('PATCH', `/v1/identity/roles/${created.id}`, {
        token: world.a.tokens.admin,
        body: { name: 'Reviewer', permissions: ['InquiriesRead'] },
      }),
    );
    expect(narrowed).toMatchObject({ name: 'reviewer', permissions: ['InquiriesRead'], description: 'Reads users' });
    expect(await rolesOf(db, auditor.id, world.a.organization.id)).toEqual(['reviewer', 'user']);
    await expectProblem(await call('GET', '/v1/identity/users', { token }), 403, 'Auth.Forbidden');

    await expectJson(
      await call('PATCH', `/v1/identity/roles/${created.id}`, {
        token: world.a.tokens.admin,
        body: { permissions: ['UsersRead'] },
      }),
    );
    expect((await call('GET', '/v1/identity/users', { token })).status).toBe(200);
    expect((await call('DELETE', `/v1/identity/roles/${created.id}`, { token: world.a.tokens.admin })).status).toBe(204);
    expect(await rolesOf(db, auditor.id, world.a.organization.id)).toEqual(['user']);
    await expectProblem(await call('GET', '/v1/identity/users', { token }), 403, 'Auth.Forbidden');
    await expectProblem(
      await call('DELETE', `/v1/identity/roles/${created.id}`, { token: world.a.tokens.admin }),
      404,
      'Identity.RoleNotFound',
    );
  });

  it('refuses reserved and taken names, unknown permissions and bad bodies', async () => {
    const create = (body: unknown) => call('POST', '/v1/identity/roles', { token: world.a.tokens.owner, body });
    await expectJson(await create({ name: 'support', permissions: ['InquiriesRead'] }), 201);
    await expectProblem(await create({ name: 'SUPPORT', permissions: ['InquiriesRead'] }), 409, 'Identity.RoleNameTaken');
    await expectProblem(await create({ name: 'Admin', permissions: ['InquiriesRead'] }), 409, 'Identity.RoleNameReserved');
    const unknown = await expectProblem(
      await create({ name: 'x', permissions: ['UsersRead', 'FlyPlanes'] }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(unknown.errors)).toEqual(['permissions[1]']);
    const bad = await expectProblem(await create({ name: 'no spaces please', permissions: [] }), 400, 'Validation.Failed');
    expect(Object.keys(bad.errors).sort()).toEqual(['name', 'permissions']);
    // A rename onto a taken or reserved name.
    const other = await expectJson(await create({ name: 'other', permissions: ['InquiriesRead'] }), 201);
    await expectProblem(
      await call('PATCH', `/v1/identity/roles/${other.id}`, { token: world.a.tokens.owner, body: { name: 'support' } }),
      409,
      'Identity.RoleNameTaken',
    );
    await expectProblem(
      await call('PATCH', `/v1/identity/roles/${other.id}`, { token: world.a.tokens.owner, body: { name: 'user' } }),
      409,
      'Identity.RoleNameReserved',
    );
  });

  it('lets no one create or widen a role beyond their own permissions', async () => {
    const db = server.database.db;
    const creator = await seedUser(db);
    const now = new Date().toISOString();
    await db('identity_roles').insert({
      id: newId(),
      organization_id: world.a.organization.id,
      name: 'role-maker',
      description: '',
      permissions: JSON.stringify(['RolesCreate', 'RolesUpdate', 'RolesRead', 'UsersRead']),
      created_at: now,
      updated_at: now,
    });
    await seedMembership(db, { userId: creator.id, organizationId: world.a.organization.id, roles: ['role-maker'] });
    const token = await mintAccessToken(server, { sub: creator.id, org_id: world.a.organization.id });
    await expectProblem(
      await call('POST', '/v1/identity/roles', { token, body: { name: 'escalate', permissions: ['UsersRead', 'UsersDelete'] } }),
      403,
      'Identity.RoleExceedsPermissions',
    );
    const mine = await expectJson(
      await call('POST', '/v1/identity/roles', { token, body: { name: 'reader', permissions: ['UsersRead'] } }),
      201,
    );
    await expectProblem(
      await call('PATCH', `/v1/identity/roles/${mine.id}`, { token, body: { permissions: ['AdminAccess'] } }),
      403,
      'Identity.RoleExceedsPermissions',
    );
    await expectProblem(await call('DELETE', `/v1/identity/roles/${mine.id}`, { token }), 403, 'Auth.Forbidden');
    expect(await db('identity_roles').where({ name: 'escalate' })).toEqual([]);
  });

  it('keeps organization B’s roles out of reach: 404 and no change', async () => {
    const db = server.database.db;
    const before = await organizationRows(db, world.b.organization.id);
    await expectProblem(
      await call('PATCH', `/v1/identity/roles/${betaRoleId}`, { token: world.a.tokens.owner, body: { name: 'stolen' } }),
      404,
      'Identity.RoleNotFound',
    );
    await expectProblem(
      await call('DELETE', `/v1/identity/roles/${betaRoleId}`, { token: world.a.tokens.owner }),
      404,
      'Identity.RoleNotFound',
    );
    await expectProblem(
      await call('PUT', `/v1/identity/organizations/${world.a.organization.id}/members/${world.a.user.id}/roles`, {
        token: world.a.tokens.owner,
        body: { roles: ['beta-secret'] },
      }),
      400,
      'Validation.Failed',
    );
    expect(await organizationRows(db, world.b.organization.id)).toEqual(before);
    const bad = await expectProblem(
      await call('PATCH', '/v1/identity/roles/nope', { token: world.a.tokens.owner, body: { name: 'x' } }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(bad.errors)).toEqual(['roleId']);
  });
});
