import { AUDIT_EVENTS_TABLE } from '@idt/core/knex';
import {
  caller,
  createTestIdt,
  expectJson,
  expectProblem,
  mintAccessToken,
  seedMembership,
  seedUser,
  seedWorld,
  type TestIdt,
  testDialects,
  type World,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCIM = 'application/scim+json';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

type Row = Record<string, any>;

/**
 * The organization side of identity's audit actions (issue 51), through the
 * real HTTP API: organizations, memberships, invitations, custom roles and
 * SCIM each record exactly one record per action on the organization's
 * trail, none for a refused request, and no other organization sees them.
 */
describe.each(testDialects())('organization audit actions on %s', (dialect) => {
  let server: TestIdt;
  let world: World;
  let call: ReturnType<typeof caller>;
  let orgA: string;

  const metadataOf = (row: Row) => (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata);
  /** Every stored record of an action (any trail), optionally of one target. */
  const rowsOf = async (action: string, targetId?: string): Promise<Row[]> => {
    const query = server.database.db(AUDIT_EVENTS_TABLE).where({ action });
    if (targetId !== undefined) query.andWhere({ target_id: targetId });
    return query.orderBy([{ column: 'chain' }, { column: 'seq' }]);
  };
  /** The one record of an action on a target: asserts there is exactly one, on `organizationId`'s trail. */
  const single = async (action: string, targetId: string, organizationId = orgA): Promise<Row> => {
    const rows = await rowsOf(action, targetId);
    expect(rows, `${action} on ${targetId}`).toHaveLength(1);
    const row = rows[0] as Row;
    expect(row.organization_id).toBe(organizationId);
    expect(row.outcome).toBe('success');
    return { ...row, metadata: metadataOf(row) };
  };
  const count = async () => Number(((await server.database.db(AUDIT_EVENTS_TABLE).count({ n: '*' }).first()) as Row).n);
  const events = (token: string, query = '') => call('GET', `/v1/audit/events${query}`, { token });

  /** A SCIM request with a bearer token; a body goes as application/scim+json. */
  const scim = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await server.fetch(`/scim/v2${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'user-agent': 'Okta SCIM Client 1.0',
        ...(body === undefined ? {} : { 'content-type': SCIM }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : undefined) as Row };
  };

  /** A new user with a membership in organization A. */
  const member = async (status: 'active' | 'pending' = 'active', roles = ['user']) => {
    const user = await seedUser(server.database.db, {});
    await seedMembership(server.database.db, { userId: user.id, organizationId: orgA, status, roles });
    return user;
  };

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
    orgA = world.a.organization.id;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('records organizations created (on their own trail) and updated, none for refused input', async () => {
    const before = await count();
    await expectProblem(
      await call('POST', '/v1/identity/organizations', { token: world.outsiderToken, body: { name: '' } }),
      400,
      'Validation.Failed',
    );
    expect(await count()).toBe(before);

    const created = await expectJson(
      await call('POST', '/v1/identity/organizations', { token: world.outsiderToken, body: { name: 'Gamma Labs' } }),
      201,
    );
    const row = await single('identity.organization.created', created.id, created.id);
    expect(row).toMatchObject({ actor_type: 'user', actor_id: world.outsider.id, target_type: 'organization' });
    expect(row.target_display).toBe('Gamma Labs');
    expect(row.metadata).toEqual({ slug: 'gamma-labs', enrollmentPolicy: 'invitation_only' });
    // Its owner reads it; A's owner never does.
    const ownerToken = await mintAccessToken(server, { sub: world.outsider.id, org_id: created.id });
    const own = await expectJson(await events(ownerToken, '?action=identity.organization.created'));
    expect(own.items.map((item: Row) => item.target.id)).toEqual([created.id]);
    const theirs = await expectJson(await events(world.a.tokens.owner, `?targetId=${created.id}`));
    expect(theirs.items).toEqual([]);

    await expectProblem(
      await call('PATCH', `/v1/identity/organizations/${orgA}`, {
        token: world.a.tokens.owner,
        body: { enrollmentPolicy: 'everyone' },
      }),
      400,
      'Validation.Failed',
    );
    expect(await rowsOf('identity.organization.updated')).toHaveLength(0);
    await expectJson(
      await call('PATCH', `/v1/identity/organizations/${orgA}`, {
        token: world.a.tokens.owner,
        body: { name: 'Alpha Inc', enrollmentPolicy: 'open' },
      }),
    );
    const updated = await single('identity.organization.updated', orgA);
    expect(updated).toMatchObject({ actor_id: world.a.owner.id, target_display: 'Alpha Inc' });
    expect(updated.metadata).toEqual({
      changed: ['name', 'enrollmentPolicy'],
      name: 'Alpha Inc',
      previousName: 'Alpha',
      enrollmentPolicy: 'open',
      previousEnrollmentPolicy: 'invitation_only',
    });
  });

  it('records role changes, suspension, reinstatement, removal, approval and denial once each', async () => {
    const path = (userId: string, rest = '') => `/v1/identity/organizations/${orgA}/members/${userId}${rest}`;
    const token = world.a.tokens.owner;

    const ada = await member();
    await expectProblem(
      await call('PUT', path(ada.id, '/roles'), { token, body: { roles: ['no-such-role'] } }),
      400,
      'Validation.Failed',
    );
    // Unchanged roles are no change.
    await expectJson(await call('PUT', path(ada.id, '/roles'), { token, body: { roles: ['user'] } }));
    expect(await rowsOf('identity.member.rolesChanged', ada.id)).toHaveLength(0);
    await expectJson(await call('PUT', path(ada.id, '/roles'), { token, body: { roles: ['manager'] } }));
    const roles = await single('identity.member.rolesChanged', ada.id);
    expect(roles).toMatchObject({ actor_type: 'user', actor_id: world.a.owner.id, target_type: 'user' });
    expect(roles.target_display).toBe(ada.email);
    expect(roles.metadata).toEqual({ roles: ['manager'], previousRoles: ['user'], added: ['manager'], removed: ['user'] });

    await expectJson(await call('POST', path(ada.id, '/suspend'), { token }));
    // Suspending a suspended member is refused: nothing more is recorded.
    await expectProblem(await call('POST', path(ada.id, '/suspend'), { token }), 422, 'Identity.InvalidMembershipTransition');
    await single('identity.member.suspended', ada.id);
    await expectJson(await call('POST', path(ada.id, '/reinstate'), { token }));
    await single('identity.member.reinstated', ada.id);
    // The last owner cannot be removed: refused, nothing recorded.
    await expectProblem(await call('DELETE', path(world.a.owner.id), { token }), 422, 'Identity.LastOwner');
    expect(await rowsOf('identity.member.removed', world.a.owner.id)).toHaveLength(0);
    expect((await call('DELETE', path(ada.id), { token })).status).toBe(204);
    const removed = await single('identity.member.removed', ada.id);
    expect(removed.metadata).toEqual({ status: 'active', roles: ['manager'] });

    const pending = await member('pending', []);
    const denied = await member('pending', []);
    await expectJson(await call('POST', path(pending.id, '/approve'), { token: world.a.tokens.manager }));
    const approved = await single('identity.member.approved', pending.id);
    expect(approved.actor_id).toBe(world.a.manager.id);
    await expectJson(await call('POST', path(denied.id, '/deny'), { token }));
    await single('identity.member.denied', denied.id);
    await expectProblem(await call('POST', path(denied.id, '/approve'), { token }), 422, 'Identity.InvalidMembershipTransition');
    expect(await rowsOf('identity.member.approved', denied.id)).toHaveLength(0);
  });

  it('records members joining by enrollment and by an operator', async () => {
    const identity = server.idt.services.identity;
    // Organization A is open since the first test: a sign-in enrolls (the provider calls `enroll`).
    const walker = await seedUser(server.database.db, {});
    expect(await identity.accounts.memberships.enroll(walker.id, orgA)).toBe('active');
    expect(await identity.accounts.memberships.enroll(walker.id, orgA)).toBe('active');
    const enrolled = await single('identity.member.joined', walker.id);
    expect(enrolled).toMatchObject({ actor_type: 'user', actor_id: walker.id, actor_display: walker.email });
    expect(enrolled.metadata).toEqual({ via: 'enrollment', roles: ['user'] });

    const added = await seedUser(server.database.db, {});
    await identity.accounts.operator.addMember({ organizationId: orgA, userId: added.id, roles: ['admin'] });
    await identity.accounts.operator.addMember({ organizationId: orgA, userId: added.id, roles: ['admin'] });
    const operated = await single('identity.member.joined', added.id);
    expect(operated).toMatchObject({ actor_type: 'operator', actor_id: null });
    expect(operated.metadata).toEqual({ via: 'operator', roles: ['admin'] });
  });

  it('records invitations created, accepted (with the member who joined) and revoked', async () => {
    const invitations = `/v1/identity/organizations/${orgA}/invitations`;
    await expectProblem(
      await call('POST', invitations, { token: world.a.tokens.manager, body: { email: 'not an address' } }),
      400,
      'Validation.Failed',
    );
    expect(await rowsOf('identity.invitation.created')).toHaveLength(0);

    const ivy = await seedUser(server.database.db, { email: 'ivy.audit@example.com' });
    const invitation = await expectJson(
      await call('POST', invitations, { token: world.a.tokens.manager, body: { email: ivy.email, roles: ['manager'] } }),
      201,
    );
    const created = await single('identity.invitation.created', invitation.id);
    expect(created).toMatchObject({ actor_id: world.a.manager.id, target_type: 'invitation', target_display: ivy.email });
    expect(created.metadata).toMatchObject({ roles: ['manager'] });

    const link = new URL(server.idt.services.identity.accounts.invitations.acceptUrl(invitation.id));
    const ivyToken = await mintAccessToken(server, { sub: ivy.id });
    const accept = () =>
      call('POST', '/v1/identity/invitations/accept', { token: ivyToken, body: { token: link.searchParams.get('token') } });
    await expectJson(await accept());
    await expectProblem(await accept(), 422, 'Identity.InvitationInvalid');
    const accepted = await single('identity.invitation.accepted', invitation.id);
    expect(accepted).toMatchObject({ actor_type: 'user', actor_id: ivy.id });
    const joined = await single('identity.member.joined', ivy.id);
    expect(joined.metadata).toEqual({ via: 'invitation', invitationId: invitation.id, roles: ['manager'] });
    // An accepted invitation cannot be revoked.
    await expectProblem(
      await call('DELETE', `${invitations}/${invitation.id}`, { token: world.a.tokens.manager }),
      422,
      'Identity.InvitationNotPending',
    );

    const other = await expectJson(
      await call('POST', invitations, { token: world.a.tokens.manager, body: { email: 'nobody.audit@example.com' } }),
      201,
    );
    for (let i = 0; i < 2; i++) {
      expect((await call('DELETE', `${invitations}/${other.id}`, { token: world.a.tokens.owner })).status).toBe(204);
    }
    const revoked = await single('identity.invitation.revoked', other.id);
    expect(revoked).toMatchObject({ actor_id: world.a.owner.id, target_display: 'nobody.audit@example.com' });
    expect(revoked.metadata).toEqual({ expired: false });
    expect(await rowsOf('identity.invitation.revoked', invitation.id)).toHaveLength(0);
  });

  it('records custom roles created, updated and deleted', async () => {
    const token = world.a.tokens.owner;
    const role = await expectJson(
      await call('POST', '/v1/identity/roles', { token, body: { name: 'auditor', permissions: ['UsersRead'] } }),
      201,
    );
    await expectProblem(
      await call('POST', '/v1/identity/roles', { token, body: { name: 'Auditor', permissions: ['UsersRead'] } }),
      409,
      'Identity.RoleNameTaken',
    );
    const created = await single('identity.role.created', role.id);
    expect(created).toMatchObject({ target_type: 'role', target_display: 'auditor', actor_id: world.a.owner.id });
    expect(created.metadata).toEqual({ permissions: ['UsersRead'] });
    expect(await rowsOf('identity.role.created')).toHaveLength(1);

    await expectProblem(
      await call('PATCH', `/v1/identity/roles/${role.id}`, { token, body: { permissions: ['NoSuchPermission'] } }),
      400,
      'Validation.Failed',
    );
    await expectJson(
      await call('PATCH', `/v1/identity/roles/${role.id}`, {
        token,
        body: { name: 'reviewer', permissions: ['UsersRead', 'RolesRead'] },
      }),
    );
    const updated = await single('identity.role.updated', role.id);
    expect(updated.metadata).toEqual({
      changed: ['name', 'permissions'],
      name: 'reviewer',
      previousName: 'auditor',
      permissions: ['UsersRead', 'RolesRead'],
      previousPermissions: ['UsersRead'],
    });
    expect((await call('DELETE', `/v1/identity/roles/${role.id}`, { token })).status).toBe(204);
    await expectProblem(await call('DELETE', `/v1/identity/roles/${role.id}`, { token }), 404, 'Identity.RoleNotFound');
    const deleted = await single('identity.role.deleted', role.id);
    expect(deleted.target_display).toBe('reviewer');
  });

  it('records SCIM tokens, users, groups and role mappings with the scim actor', async () => {
    const admin = (method: string, rest: string, body?: unknown, token = world.a.tokens.admin) =>
      call(method, `/v1/identity/organizations/${orgA}/scim${rest}`, { token, ...(body === undefined ? {} : { body }) });

    await expectProblem(await admin('POST', '/tokens', { name: '' }), 400, 'Validation.Failed');
    const created = await expectJson(await admin('POST', '/tokens', { name: 'Okta' }), 201);
    const tokenRow = await single('identity.scim.tokenCreated', created.id);
    expect(tokenRow).toMatchObject({ actor_type: 'user', actor_id: world.a.admin.id, target_display: 'Okta' });
    // The token itself is never in the trail.
    expect(JSON.stringify(await rowsOf('identity.scim.tokenCreated'))).not.toContain(created.token.slice(5));
    const bearer = created.token as string;
    const scimActor = { actor_type: 'scim', actor_id: created.id, actor_display: 'Okta' };

    // Users: a refused create records nothing.
    const userName = 'olga.audit@alpha.example';
    expect((await scim(bearer, 'POST', '/Users', { schemas: [USER], userName, shoeSize: 44 })).status).toBe(400);
    expect(await rowsOf('identity.scim.userProvisioned')).toHaveLength(0);
    const user = await scim(bearer, 'POST', '/Users', {
      schemas: [USER],
      userName,
      name: { givenName: 'Olga', familyName: 'Okta' },
      emails: [{ primary: true, value: userName, type: 'work' }],
      externalId: '00u1audit',
      active: true,
    });
    expect(user.status).toBe(201);
    const id = user.body.id as string;
    const provisioned = await single('identity.scim.userProvisioned', id);
    expect(provisioned).toMatchObject({ ...scimActor, target_type: 'user', target_display: userName });
    expect(provisioned.user_agent).toBe('Okta SCIM Client 1.0');
    expect(provisioned.metadata).toEqual({
      accountCreated: true,
      membershipCreated: true,
      active: true,
      externalId: '00u1audit',
    });

    // A PUT that changes nothing records nothing; a name change records an update.
    const replace = (overrides: Row) =>
      scim(bearer, 'PUT', `/Users/${id}`, {
        schemas: [USER],
        userName,
        name: { givenName: 'Olga', familyName: 'Okta' },
        emails: [{ primary: true, value: userName, type: 'work' }],
        externalId: '00u1audit',
        active: true,
        ...overrides,
      });
    expect((await replace({})).status).toBe(200);
    expect(await rowsOf('identity.scim.userUpdated', id)).toHaveLength(0);
    expect((await replace({ name: { givenName: 'Olga', familyName: 'Okta-Smith' } })).status).toBe(200);
    expect((await single('identity.scim.userUpdated', id)).metadata).toEqual({ changed: ['familyName'], reactivated: false });

    // Okta's deactivation.
    const deactivate = () =>
      scim(bearer, 'PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
    expect((await deactivate()).status).toBe(200);
    expect((await deactivate()).status).toBe(200);
    const deactivated = await single('identity.scim.userDeactivated', id);
    expect(deactivated).toMatchObject(scimActor);
    expect(deactivated.metadata).toEqual({ changed: [], revokedApiKeyCount: 0, sessionsEnded: 0 });
    expect(await rowsOf('identity.scim.userUpdated', id)).toHaveLength(1);

    // Groups.
    const group = await scim(bearer, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering', members: [] });
    expect(group.status).toBe(201);
    const groupId = group.body.id as string;
    const groupCreated = await single('identity.scim.groupCreated', groupId);
    expect(groupCreated).toMatchObject({ ...scimActor, target_type: 'scimGroup', target_display: 'Engineering' });
    expect((await scim(bearer, 'POST', '/Groups', { schemas: [GROUP], displayName: 'engineering', members: [] })).status).toBe(
      409,
    );
    expect(await rowsOf('identity.scim.groupCreated')).toHaveLength(1);

    const patchGroup = (operations: unknown[]) =>
      scim(bearer, 'PATCH', `/Groups/${groupId}`, { schemas: [PATCH_OP], Operations: operations });
    expect((await patchGroup([{ op: 'add', path: 'members', value: [{ value: id }] }])).status).toBe(200);
    const members = await single('identity.scim.groupMembersChanged', groupId);
    expect(members).toMatchObject(scimActor);
    expect(members.metadata).toMatchObject({ addedUserIds: [id], addedCount: 1, removedUserIds: [], removedCount: 0 });
    expect((await patchGroup([{ op: 'replace', value: { displayName: 'Platform Engineering' } }])).status).toBe(200);
    const renamed = await single('identity.scim.groupUpdated', groupId);
    expect(renamed.metadata).toMatchObject({
      changed: ['displayName'],
      displayName: 'Platform Engineering',
      previousDisplayName: 'Engineering',
    });
    // A member who is no User of the organization: refused, nothing recorded.
    expect((await patchGroup([{ op: 'add', path: 'members', value: [{ value: world.b.user.id }] }])).status).toBe(400);
    expect(await rowsOf('identity.scim.groupMembersChanged', groupId)).toHaveLength(1);

    // Role mappings (by an owner or admin).
    await expectProblem(
      await admin('PUT', '/role-mappings', { mappings: [{ group: 'Platform Engineering', roles: ['owner'] }] }),
      400,
      'Validation.Failed',
    );
    const mappings = { mappings: [{ group: 'Platform Engineering', roles: ['manager'] }] };
    await expectJson(await admin('PUT', '/role-mappings', mappings));
    await expectJson(await admin('PUT', '/role-mappings', mappings));
    const mapped = await single('identity.scim.roleMappingsChanged', orgA);
    expect(mapped).toMatchObject({ actor_type: 'user', actor_id: world.a.admin.id, target_type: 'organization' });
    expect(mapped.metadata).toMatchObject({
      mappings: [{ group: 'Platform Engineering', roles: ['manager'] }],
      mappingCount: 1,
      previousMappings: [],
    });

    expect((await scim(bearer, 'DELETE', `/Groups/${groupId}`)).status).toBe(204);
    expect((await scim(bearer, 'DELETE', `/Groups/${groupId}`)).status).toBe(404);
    const groupDeleted = await single('identity.scim.groupDeleted', groupId);
    expect(groupDeleted).toMatchObject({ ...scimActor, target_display: 'Platform Engineering' });
    expect(groupDeleted.metadata).toMatchObject({ memberCount: 1 });

    expect((await scim(bearer, 'DELETE', `/Users/${id}`)).status).toBe(204);
    expect((await scim(bearer, 'DELETE', `/Users/${id}`)).status).toBe(404);
    const userDeleted = await single('identity.scim.userDeleted', id);
    expect(userDeleted).toMatchObject({ ...scimActor, target_display: userName });
    expect(userDeleted.metadata).toEqual({ wasActive: false, revokedApiKeyCount: 0, sessionsEnded: 0 });

    // Revocation: once.
    expect((await admin('DELETE', `/tokens/${created.id}`)).status).toBe(204);
    await expectProblem(await admin('DELETE', `/tokens/${created.id}`), 404, 'Scim.TokenNotFound');
    const revoked = await single('identity.scim.tokenRevoked', created.id);
    expect(revoked).toMatchObject({ actor_type: 'user', actor_id: world.a.admin.id, target_display: 'Okta' });
  });

  it('shows the records to A’s owners only: B’s owner never lists them, a manager gets 403', async () => {
    const a = await expectJson(await events(world.a.tokens.owner, '?limit=200'));
    const actions = new Set(a.items.map((item: Row) => item.action));
    for (const action of [
      'identity.organization.updated',
      'identity.member.rolesChanged',
      'identity.member.joined',
      'identity.invitation.created',
      'identity.role.created',
      'identity.scim.userProvisioned',
      'identity.scim.tokenRevoked',
    ]) {
      expect(actions.has(action), action).toBe(true);
    }
    expect(a.items.every((item: Row) => item.organizationId === orgA)).toBe(true);
    const scimRecord = a.items.find((item: Row) => item.action === 'identity.scim.userProvisioned');
    expect(scimRecord.actor.type).toBe('scim');

    const b = await expectJson(await events(world.b.tokens.owner, '?limit=200'));
    expect(b.items).toEqual([]);
    for (const query of [`?organizationId=${orgA}`, `?organizationId=${orgA}&action=identity.member.joined`]) {
      await expectProblem(await events(world.b.tokens.owner, query), 404, 'Audit.OrganizationNotFound');
    }
    await expectProblem(
      await call('GET', `/v1/audit/events/export?organizationId=${orgA}`, { token: world.b.tokens.owner }),
      404,
      'Audit.OrganizationNotFound',
    );
    await expectProblem(await events(world.a.tokens.manager), 403, 'Auth.Forbidden');
  });
});
