import { createTestIdt, mintAccessToken, seedMembership, seedUser, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, organizationRows, outboxEvents, rolesOf, seedWorld } from './accounts-helpers.js';

/** Every route of the accounts half of the identity module, by operation id. */
const ACCOUNTS_OPERATIONS = [
  'registerUser',
  'getMyProfile',
  'updateMyProfile',
  'listMyOrganizations',
  'listUsers',
  'getUser',
  'deactivateUser',
  'reactivateUser',
  'createOrganization',
  'getOrganization',
  'updateOrganization',
  'listMembers',
  'setMemberRoles',
  'removeMember',
  'suspendMember',
  'reinstateMember',
  'approveMember',
  'denyMember',
  'createInvitation',
  'listInvitations',
  'revokeInvitation',
  'acceptInvitation',
  'listRoles',
  'createRole',
  'updateRole',
  'deleteRole',
];

describe.each(testDialects())('organizations and members over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  const org = (id: string, rest = '') => `/v1/identity/organizations/${id}${rest}`;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  describe('POST /v1/identity/organizations', () => {
    it('creates an organization owned by the caller, from an organization-less token', async () => {
      const created = await expectJson(
        await call('POST', '/v1/identity/organizations', {
          token: world.outsiderToken,
          body: { name: '  Ünïcode Labs, Inc. ', enrollmentPolicy: 'approval_required' },
        }),
        201,
      );
      expect(created).toEqual({
        id: expect.any(String),
        name: 'Ünïcode Labs, Inc.',
        slug: 'unicode-labs-inc',
        enrollmentPolicy: 'approval_required',
        status: 'active',
        isPlatform: false,
        createdAt: expect.stringMatching(/Z$/),
        updatedAt: expect.stringMatching(/Z$/),
      });
      expect(await rolesOf(server.database.db, world.outsider.id, created.id)).toEqual(['owner']);
      const mine = await expectJson(await call('GET', '/v1/identity/users/me/organizations', { token: world.outsiderToken }));
      expect(mine).toEqual([
        expect.objectContaining({ membership: expect.objectContaining({ status: 'active', roles: ['owner'] }) }),
      ]);
      expect(await outboxEvents(server.database.db, 'OrganizationCreatedEvent')).toEqual([
        { organizationId: created.id, name: 'Ünïcode Labs, Inc.', slug: 'unicode-labs-inc', createdByUserId: world.outsider.id },
      ]);
    });

    it('makes slugs unique, also under concurrent creation', async () => {
      const body = { name: 'Same Name' };
      const results = await Promise.all(
        [world.a.tokens.user, world.b.tokens.user, world.outsiderToken, world.a.tokens.manager].map((token) =>
          call('POST', '/v1/identity/organizations', { token, body }).then((response) => expectJson(response, 201)),
        ),
      );
      expect(results.map((created) => created.slug).sort()).toEqual(['same-name', 'same-name-2', 'same-name-3', 'same-name-4']);
      expect(results.every((created) => created.enrollmentPolicy === 'invitation_only')).toBe(true);
    });

    it('refuses bad input with errors by field, and anonymous callers', async () => {
      const problem = await expectProblem(
        await call('POST', '/v1/identity/organizations', {
          token: world.outsiderToken,
          body: { name: ' -- ', enrollmentPolicy: 'everyone' },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors).sort()).toEqual(['enrollmentPolicy', 'name']);
      await expectProblem(await call('POST', '/v1/identity/organizations', { body: { name: 'X' } }), 401, 'Auth.Unauthenticated');
    });
  });

  describe('GET and PATCH /v1/identity/organizations/{orgId}', () => {
    it('reads the caller’s organization', async () => {
      const found = await expectJson(await call('GET', org(world.a.organization.id), { token: world.a.tokens.user }));
      expect(found).toMatchObject({ id: world.a.organization.id, name: 'Alpha', isPlatform: false });
    });

    it('updates name and policy but never the slug', async () => {
      const updated = await expectJson(
        await call('PATCH', org(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: { name: 'Alpha Renamed', enrollmentPolicy: 'open' },
        }),
      );
      expect(updated).toMatchObject({ name: 'Alpha Renamed', enrollmentPolicy: 'open', slug: world.a.organization.slug });
      const problem = await expectProblem(
        await call('PATCH', org(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: { name: '', enrollmentPolicy: 3 },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors).sort()).toEqual(['enrollmentPolicy', 'name']);
      await expectProblem(
        await call('PATCH', org(world.a.organization.id), { token: world.a.tokens.manager, body: { name: 'Mine' } }),
        403,
        'Auth.Forbidden',
      );
      expect((await server.database.db('identity_organizations').where({ id: world.a.organization.id }).first()).name).toBe(
        'Alpha Renamed',
      );
    });
  });

  describe('members', () => {
    it('lists the members with their roles, filtered by status', async () => {
      const page = await expectJson(
        await call('GET', org(world.a.organization.id, '/members'), { token: world.a.tokens.manager }),
      );
      expect(page.totalCount).toBe(4);
      expect(page.items[0]).toEqual({
        userId: world.a.owner.id,
        email: world.a.owner.email,
        firstName: 'Olive',
        lastName: 'Owner',
        status: 'active',
        roles: ['owner'],
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      const pending = await expectJson(
        await call('GET', org(world.a.organization.id, '/members?status=pending'), { token: world.a.tokens.manager }),
      );
      expect(pending).toMatchObject({ items: [], totalCount: 0, totalPages: 0, hasNextPage: false });
      const problem = await expectProblem(
        await call('GET', org(world.a.organization.id, '/members?status=gone'), { token: world.a.tokens.manager }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors)).toEqual(['status']);
      await expectProblem(
        await call('GET', org(world.a.organization.id, '/members'), { token: world.a.tokens.user }),
        403,
        'Auth.Forbidden',
      );
    });

    it('replaces roles case-insensitively and takes effect on the member’s next request', async () => {
      const db = server.database.db;
      const member = await seedUser(db);
      await seedMembership(db, { userId: member.id, organizationId: world.a.organization.id, roles: ['user'] });
      const memberToken = await mintAccessToken(server, { sub: member.id, org_id: world.a.organization.id });
      await expectProblem(await call('GET', '/v1/identity/users', { token: memberToken }), 403, 'Auth.Forbidden');

      const updated = await expectJson(
        await call('PUT', org(world.a.organization.id, `/members/${member.id}/roles`), {
          token: world.a.tokens.manager,
          body: { roles: [' Manager', 'USER', 'manager'] },
        }),
      );
      expect(updated).toMatchObject({ userId: member.id, status: 'active', roles: ['manager', 'user'] });
      expect((await call('GET', '/v1/identity/users', { token: memberToken })).status).toBe(200);
      expect(await outboxEvents(db, 'MembershipRolesChangedEvent')).toEqual([
        {
          organizationId: world.a.organization.id,
          userId: member.id,
          roles: 'manager user',
          changedByUserId: world.a.manager.id,
        },
      ]);
    });

    it('refuses unknown or missing roles with errors by field', async () => {
      const path = org(world.a.organization.id, `/members/${world.a.user.id}/roles`);
      const unknown = await expectProblem(
        await call('PUT', path, { token: world.a.tokens.owner, body: { roles: ['user', 'wizard'] } }),
        400,
        'Validation.Failed',
      );
      expect(unknown.errors).toEqual({ 'roles[1]': ['No role named "wizard" exists in this organization.'] });
      const empty = await expectProblem(
        await call('PUT', path, { token: world.a.tokens.owner, body: { roles: [] } }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(empty.errors)).toEqual(['roles']);
      expect(await rolesOf(server.database.db, world.a.user.id, world.a.organization.id)).toEqual(['user']);
    });

    it('lets only owners grant or take owner, and no one grant beyond their permissions', async () => {
      const path = (userId: string) => org(world.a.organization.id, `/members/${userId}/roles`);
      await expectProblem(
        await call('PUT', path(world.a.user.id), { token: world.a.tokens.admin, body: { roles: ['owner'] } }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(
        await call('PUT', path(world.a.owner.id), { token: world.a.tokens.admin, body: { roles: ['admin'] } }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(
        await call('PUT', path(world.a.user.id), { token: world.a.tokens.manager, body: { roles: ['admin'] } }),
        403,
        'Identity.RoleExceedsPermissions',
      );
      await expectProblem(
        await call('PUT', path(world.a.admin.id), { token: world.a.tokens.manager, body: { roles: ['user'] } }),
        403,
        'Identity.RoleExceedsPermissions',
      );
      await expectProblem(
        await call('PUT', path(world.a.user.id), { token: world.a.tokens.user, body: { roles: ['user'] } }),
        403,
        'Auth.Forbidden',
      );
      expect(await rolesOf(server.database.db, world.a.user.id, world.a.organization.id)).toEqual(['user']);
      expect(await rolesOf(server.database.db, world.a.owner.id, world.a.organization.id)).toEqual(['owner']);
    });

    it('keeps the last active owner: no demotion, suspension or removal', async () => {
      const id = world.a.organization.id;
      const owner = world.a.owner.id;
      await expectProblem(
        await call('PUT', org(id, `/members/${owner}/roles`), { token: world.a.tokens.owner, body: { roles: ['admin'] } }),
        422,
        'Identity.LastOwner',
      );
      await expectProblem(
        await call('POST', org(id, `/members/${owner}/suspend`), { token: world.a.tokens.owner }),
        422,
        'Identity.LastOwner',
      );
      await expectProblem(
        await call('DELETE', org(id, `/members/${owner}`), { token: world.a.tokens.owner }),
        422,
        'Identity.LastOwner',
      );
      // With a second owner, the first may step down.
      await expectJson(
        await call('PUT', org(id, `/members/${world.a.admin.id}/roles`), {
          token: world.a.tokens.owner,
          body: { roles: ['owner'] },
        }),
      );
      const stepped = await expectJson(
        await call('PUT', org(id, `/members/${owner}/roles`), { token: world.a.tokens.owner, body: { roles: ['admin'] } }),
      );
      expect(stepped.roles).toEqual(['admin']);
      const adminAsOwner = await mintAccessToken(server, { sub: world.a.admin.id, org_id: id });
      await expectJson(
        await call('PUT', org(id, `/members/${owner}/roles`), { token: adminAsOwner, body: { roles: ['owner'] } }),
      );
      await expectJson(
        await call('PUT', org(id, `/members/${world.a.admin.id}/roles`), {
          token: world.a.tokens.owner,
          body: { roles: ['admin'] },
        }),
      );
      expect(await rolesOf(server.database.db, owner, id)).toEqual(['owner']);
    });

    it('suspends and reinstates; a suspended member is refused at once', async () => {
      const id = world.a.organization.id;
      const target = world.a.user.id;
      expect((await call('GET', org(id), { token: world.a.tokens.user })).status).toBe(200);
      const suspended = await expectJson(
        await call('POST', org(id, `/members/${target}/suspend`), { token: world.a.tokens.manager }),
      );
      expect(suspended).toMatchObject({ status: 'suspended', roles: ['user'] });
      await expectProblem(await call('GET', org(id), { token: world.a.tokens.user }), 403, 'Tenant.Forbidden');
      await expectProblem(
        await call('POST', org(id, `/members/${target}/suspend`), { token: world.a.tokens.manager }),
        422,
        'Identity.InvalidMembershipTransition',
      );
      await expectProblem(
        await call('POST', org(id, `/members/${target}/approve`), { token: world.a.tokens.manager }),
        422,
        'Identity.InvalidMembershipTransition',
      );
      const reinstated = await expectJson(
        await call('POST', org(id, `/members/${target}/reinstate`), { token: world.a.tokens.manager }),
      );
      expect(reinstated.status).toBe('active');
      expect((await call('GET', org(id), { token: world.a.tokens.user })).status).toBe(200);
      await expectProblem(
        await call('POST', org(id, `/members/${target}/reinstate`), { token: world.a.tokens.manager }),
        422,
        'Identity.InvalidMembershipTransition',
      );
      await expectProblem(
        await call('POST', org(id, `/members/${world.a.admin.id}/suspend`), { token: world.a.tokens.manager }),
        403,
        'Identity.RoleExceedsPermissions',
      );
    });

    it('approves and denies pending requests', async () => {
      const db = server.database.db;
      const id = world.a.organization.id;
      const [first, second] = [await seedUser(db), await seedUser(db)];
      await seedMembership(db, { userId: first.id, organizationId: id, roles: [], status: 'pending' });
      await seedMembership(db, { userId: second.id, organizationId: id, roles: [], status: 'pending' });
      const approved = await expectJson(
        await call('POST', org(id, `/members/${first.id}/approve`), { token: world.a.tokens.manager }),
      );
      expect(approved).toMatchObject({ status: 'active', roles: ['user'] });
      const denied = await expectJson(
        await call('POST', org(id, `/members/${second.id}/deny`), { token: world.a.tokens.manager }),
      );
      expect(denied).toMatchObject({ status: 'denied', roles: [] });
      await expectProblem(
        await call('POST', org(id, `/members/${second.id}/deny`), { token: world.a.tokens.manager }),
        422,
        'Identity.InvalidMembershipTransition',
      );
      const row = await db('identity_memberships').where({ user_id: second.id, organization_id: id }).first();
      expect(row.decided_by_user_id).toBe(world.a.manager.id);
      expect(await outboxEvents(db, 'MembershipApprovedEvent')).toEqual([
        { organizationId: id, userId: first.id, decidedByUserId: world.a.manager.id },
      ]);
      expect(await outboxEvents(db, 'MembershipDeniedEvent')).toEqual([
        { organizationId: id, userId: second.id, decidedByUserId: world.a.manager.id },
      ]);
    });

    it('removes members; the removed member is refused at once', async () => {
      const db = server.database.db;
      const id = world.a.organization.id;
      const leaving = await seedUser(db);
      await seedMembership(db, { userId: leaving.id, organizationId: id });
      const token = await mintAccessToken(server, { sub: leaving.id, org_id: id });
      expect((await call('GET', org(id), { token })).status).toBe(200);
      expect((await call('DELETE', org(id, `/members/${leaving.id}`), { token: world.a.tokens.manager })).status).toBe(204);
      await expectProblem(await call('GET', org(id), { token }), 403, 'Tenant.Forbidden');
      await expectProblem(
        await call('DELETE', org(id, `/members/${leaving.id}`), { token: world.a.tokens.manager }),
        404,
        'Identity.MemberNotFound',
      );
    });
  });

  describe('another organization’s data', () => {
    const routes = (orgId: string, userId: string) =>
      [
        ['GET', org(orgId), undefined],
        ['PATCH', org(orgId), { name: 'Taken over' }],
        ['GET', org(orgId, '/members'), undefined],
        ['PUT', org(orgId, `/members/${userId}/roles`), { roles: ['admin'] }],
        ['DELETE', org(orgId, `/members/${userId}`), undefined],
        ['POST', org(orgId, `/members/${userId}/suspend`), undefined],
        ['POST', org(orgId, `/members/${userId}/reinstate`), undefined],
        ['POST', org(orgId, `/members/${userId}/approve`), undefined],
        ['POST', org(orgId, `/members/${userId}/deny`), undefined],
        ['POST', org(orgId, '/invitations'), { email: 'intruder@example.com' }],
        ['GET', org(orgId, '/invitations'), undefined],
        ['DELETE', org(orgId, '/invitations/0190a000-0000-7000-8000-000000000000'), undefined],
      ] as const;

    it('answers 404 to an administrator of organization A on every route of organization B, changing nothing', async () => {
      const db = server.database.db;
      const before = await organizationRows(db, world.b.organization.id);
      for (const [method, path, body] of routes(world.b.organization.id, world.b.user.id)) {
        const response = await call(method, path, { token: world.a.tokens.owner, ...(body ? { body } : {}) });
        await expectProblem(response, 404, 'Identity.OrganizationNotFound');
      }
      expect(await organizationRows(db, world.b.organization.id)).toEqual(before);
    });

    it('answers 404 for a member of organization B addressed through organization A', async () => {
      const db = server.database.db;
      const before = await organizationRows(db, world.b.organization.id);
      const id = world.a.organization.id;
      for (const [method, path, body] of [
        ['PUT', org(id, `/members/${world.b.user.id}/roles`), { roles: ['user'] }],
        ['DELETE', org(id, `/members/${world.b.user.id}`), undefined],
        ['POST', org(id, `/members/${world.b.user.id}/suspend`), undefined],
      ] as const) {
        await expectProblem(
          await call(method, path, { token: world.a.tokens.owner, ...(body ? { body } : {}) }),
          404,
          'Identity.MemberNotFound',
        );
      }
      expect(await organizationRows(db, world.b.organization.id)).toEqual(before);
    });

    it('answers 403 Auth.Forbidden to a plain user on every route that manages the organization', async () => {
      const db = server.database.db;
      const before = await organizationRows(db, world.a.organization.id);
      const id = world.a.organization.id;
      for (const [method, path, body] of [
        ...routes(id, world.a.manager.id).filter(([method, path]) => !(method === 'GET' && path === org(id))),
        ['GET', '/v1/identity/roles', undefined],
        ['POST', '/v1/identity/roles', { name: 'mine', permissions: ['StorageRead'] }],
        ['PATCH', '/v1/identity/roles/0190a000-0000-7000-8000-000000000000', { name: 'mine' }],
        ['DELETE', '/v1/identity/roles/0190a000-0000-7000-8000-000000000000', undefined],
        ['GET', '/v1/identity/users', undefined],
        ['GET', `/v1/identity/users/${world.a.manager.id}`, undefined],
        ['POST', `/v1/identity/users/${world.a.manager.id}/deactivate`, undefined],
        ['POST', `/v1/identity/users/${world.a.manager.id}/reactivate`, undefined],
      ] as const) {
        await expectProblem(
          await call(method, path, { token: world.a.tokens.user, ...(body ? { body } : {}) }),
          403,
          'Auth.Forbidden',
        );
      }
      expect(await organizationRows(db, world.a.organization.id)).toEqual(before);
    });

    it('answers 403 Tenant.Required to organization-less tokens and 401 without a credential', async () => {
      for (const [method, path, body] of routes(world.a.organization.id, world.a.user.id)) {
        await expectProblem(
          await call(method, path, { token: world.outsiderToken, ...(body ? { body } : {}) }),
          403,
          'Tenant.Required',
        );
        await expectProblem(await call(method, path, body ? { body } : {}), 401, 'Auth.Unauthenticated');
      }
      for (const [method, path] of [
        ['GET', '/v1/identity/users'],
        ['GET', `/v1/identity/users/${world.outsider.id}`],
        ['GET', '/v1/identity/roles'],
        ['POST', '/v1/identity/roles'],
        ['PATCH', '/v1/identity/roles/0190a000-0000-7000-8000-000000000000'],
        ['DELETE', '/v1/identity/roles/0190a000-0000-7000-8000-000000000000'],
      ] as const) {
        await expectProblem(await call(method, path, { token: world.outsiderToken }), 403, 'Tenant.Required');
      }
    });
  });

  it('documents every accounts route in /openapi/v1.json', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as {
      paths: Record<string, Record<string, { operationId: string; 'x-problem-codes'?: string[] }>>;
      components: { schemas: { ErrorCode: { enum: string[] } } };
    };
    const operations = Object.values(document.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(operations).toEqual(expect.arrayContaining(ACCOUNTS_OPERATIONS));
    expect(document.paths['/v1/identity/organizations/{orgId}/members/{userId}/roles']?.put?.['x-problem-codes']).toContain(
      'Identity.LastOwner',
    );
    expect(document.components.schemas.ErrorCode.enum).toEqual(
      expect.arrayContaining(['Identity.LastOwner', 'Identity.InvitationExpired', 'Identity.RoleExceedsPermissions']),
    );
  });
});
