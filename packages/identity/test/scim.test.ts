import { randomBytes } from 'node:crypto';
import { newId, sha256Hex } from '@idt/core';
import {
  mintAccessToken,
  seedMembership,
  seedOrganization,
  seedTenant,
  seedUser,
  startTestServer,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCIM = 'application/scim+json';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

type Json = Record<string, any>;

describe.each(testDialects())('SCIM 2.0 over HTTP on %s', (dialect) => {
  let server: TestServer;
  let tenantA: Awaited<ReturnType<typeof seedTenant>>;
  let tenantB: Awaited<ReturnType<typeof seedTenant>>;
  let tokenA: string;
  let tokenB: string;

  const bearerOf = async (userId: string, orgId: string) => mintAccessToken(server, { sub: userId, org_id: orgId });

  /** A SCIM request with a bearer token; a body goes as application/scim+json. */
  const scim = async (token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await server.fetch(`/scim/v2${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': SCIM }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      body: (text ? JSON.parse(text) : undefined) as Json,
    };
  };

  const expectScimError = (result: { status: number; type: string | null; body: Json }, status: number, scimType?: string) => {
    expect(result.status).toBe(status);
    expect(result.type).toContain(SCIM);
    expect(result.body.schemas).toEqual([ERROR]);
    expect(result.body.status).toBe(String(status));
    if (scimType) expect(result.body.scimType).toBe(scimType);
    expect(typeof result.body.detail).toBe('string');
  };

  const createToken = async (userId: string, orgId: string, name = 'Directory') => {
    const response = await server.fetch(`/v1/identity/organizations/${orgId}/scim/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await bearerOf(userId, orgId)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as { id: string; token: string; prefix: string; name: string };
  };

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    const { db } = server.database;
    tenantA = await seedTenant(db, 'Acme');
    tenantB = await seedTenant(db, 'Globex');
    tokenA = (await createToken(tenantA.owner.id, tenantA.organization.id, 'Okta')).token;
    tokenB = (await createToken(tenantB.admin.id, tenantB.organization.id, 'Entra ID')).token;
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('tokens', () => {
    it('are shown once, stored as SHA-256, listed without secrets and revocable', async () => {
      const created = await createToken(tenantA.admin.id, tenantA.organization.id, '  Spare ');
      expect(created.token).toMatch(/^scim_[A-Za-z0-9_-]{43}$/);
      expect(created).toMatchObject({ name: 'Spare', prefix: created.token.slice(0, 16) });
      const row = await server.database.db('identity_scim_tokens').where({ id: created.id }).first();
      expect(row.token_hash).toBe(sha256Hex(created.token));
      expect(JSON.stringify(row)).not.toContain(created.token.slice(16));

      const auth = { authorization: `Bearer ${await bearerOf(tenantA.owner.id, tenantA.organization.id)}` };
      const listed = await server.fetch(`/v1/identity/organizations/${tenantA.organization.id}/scim/tokens`, { headers: auth });
      expect(listed.status).toBe(200);
      const tokens = (await listed.json()) as Json[];
      expect(tokens.map((token) => token.name)).toEqual(expect.arrayContaining(['Okta', 'Spare']));
      expect(JSON.stringify(tokens)).not.toContain(created.token);
      expect(Object.keys(tokens[0] ?? {}).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'prefix']);

      expect((await scim(created.token, 'GET', '/Users')).status).toBe(200);
      const revoked = await server.fetch(`/v1/identity/organizations/${tenantA.organization.id}/scim/tokens/${created.id}`, {
        method: 'DELETE',
        headers: auth,
      });
      expect(revoked.status).toBe(204);
      expectScimError(await scim(created.token, 'GET', '/Users'), 401);
      const again = await server.fetch(`/v1/identity/organizations/${tenantA.organization.id}/scim/tokens/${created.id}`, {
        method: 'DELETE',
        headers: auth,
      });
      expect(again.status).toBe(404);
      expect(((await again.json()) as Json).code).toBe('Scim.TokenNotFound');
    });

    it('refuse bad input, members without OrganizationsUpdate (403) and other organizations (404)', async () => {
      const orgA = tenantA.organization.id;
      const post = async (userId: string, orgId: string, body: unknown, tokenOrg = orgId) =>
        server.fetch(`/v1/identity/organizations/${orgId}/scim/tokens`, {
          method: 'POST',
          headers: { authorization: `Bearer ${await bearerOf(userId, tokenOrg)}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      for (const body of [{}, { name: ' ' }, { name: 'x'.repeat(101) }, { name: 'ok', extra: true }]) {
        const response = await post(tenantA.owner.id, orgA, body);
        expect(response.status).toBe(400);
        expect(((await response.json()) as Json).code).toBe('Validation.Failed');
      }
      for (const role of ['manager', 'user'] as const) {
        const response = await post(tenantA[role].id, orgA, { name: 'nope' });
        expect(response.status).toBe(403);
        expect(((await response.json()) as Json).code).toBe('Auth.Forbidden');
      }
      const other = await post(tenantB.owner.id, orgA, { name: 'nope' }, tenantB.organization.id);
      expect(other.status).toBe(404);
      expect(((await other.json()) as Json).code).toBe('Identity.OrganizationNotFound');
      const anonymous = await server.fetch(`/v1/identity/organizations/${orgA}/scim/tokens`);
      expect(anonymous.status).toBe(401);
    });

    it('are created by platform administrators for any organization', async () => {
      const { db } = server.database;
      const platform = await seedOrganization(db, { isPlatform: true });
      const operator = await seedUser(db);
      await seedMembership(db, { userId: operator.id, organizationId: platform.id, roles: ['admin'] });
      const response = await server.fetch(`/v1/identity/organizations/${tenantB.organization.id}/scim/tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await bearerOf(operator.id, platform.id)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Operator' }),
      });
      expect(response.status).toBe(201);
    });

    it('are required by /scim/v2 (401 as a SCIM error), discovery is not', async () => {
      const missing = await server.fetch('/scim/v2/Users');
      expect(missing.status).toBe(401);
      expect(missing.headers.get('www-authenticate')).toContain('Bearer');
      expect(((await missing.json()) as Json).schemas).toEqual([ERROR]);
      expectScimError(await scim('scim_nope', 'GET', '/Users'), 401);
      const config = await server.fetch('/scim/v2/ServiceProviderConfig');
      expect(config.status).toBe(200);
      expect(config.headers.get('content-type')).toContain(SCIM);
      const body = (await config.json()) as Json;
      expect(body).toMatchObject({
        patch: { supported: true },
        filter: { supported: true, maxResults: 200 },
        bulk: { supported: false },
      });
      const types = (await scim(tokenA, 'GET', '/ResourceTypes')).body;
      expect(types.Resources.map((type: Json) => type.id)).toEqual(['User', 'Group']);
      const schemas = (await scim(tokenA, 'GET', '/Schemas')).body;
      expect(schemas.Resources.map((schema: Json) => schema.id)).toEqual([USER, ENTERPRISE, GROUP]);
      expect((await scim(tokenA, 'GET', `/Schemas/${USER}`)).body.name).toBe('User');
    });
  });

  describe('Okta', () => {
    it('runs its provisioning sequence: lookup, create, read, patch, deactivate by PUT, reactivate, group push', async () => {
      const userName = `okta.user.${newId().slice(-6)}@acme.example`;
      // 1. Does the user exist?
      const lookup = await scim(
        tokenA,
        'GET',
        `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
      );
      expect(lookup.status).toBe(200);
      expect(lookup.body).toMatchObject({ totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });
      // 2. Create (Okta sends a password when password sync is on: accepted and ignored).
      const created = await scim(tokenA, 'POST', '/Users', {
        schemas: [USER],
        userName,
        name: { givenName: 'Olga', familyName: 'Okta' },
        emails: [{ primary: true, value: userName, type: 'work' }],
        displayName: 'Olga Okta',
        locale: 'en-US',
        externalId: '00u1okta',
        groups: [],
        password: 'ignored-Password-123',
        active: true,
      });
      expect(created.status).toBe(201);
      expect(created.type).toContain(SCIM);
      const id = created.body.id as string;
      expect(created.body).toMatchObject({
        schemas: [USER],
        userName,
        externalId: '00u1okta',
        name: { givenName: 'Olga', familyName: 'Okta' },
        displayName: 'Olga Okta',
        active: true,
        emails: [{ value: userName, type: 'work', primary: true }],
        meta: { resourceType: 'User', location: `${server.url}/scim/v2/Users/${id}` },
      });
      expect(created.body.meta.version).toMatch(/^W\/"/);
      const account = await server.database.db('identity_users').where({ id }).first();
      expect(account).toMatchObject({
        email: userName,
        password_hash: null,
        first_name: 'Olga',
        last_name: 'Okta',
        status: 'active',
      });
      const membership = await server.database.db('identity_memberships').where({ user_id: id }).first();
      expect(membership).toMatchObject({ organization_id: tenantA.organization.id, status: 'active' });
      // 3. Lookup again, read.
      const found = await scim(tokenA, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName.toUpperCase()}"`)}`);
      expect(found.body.totalResults).toBe(1);
      expect(found.body.Resources[0].id).toBe(id);
      expect((await scim(tokenA, 'GET', `/Users/${id}`)).body.userName).toBe(userName);
      // 4. Profile update, path-less.
      const patched = await scim(tokenA, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', value: { name: { givenName: 'Olga2', familyName: 'Okta' }, title: 'Engineer' } }],
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ name: { givenName: 'Olga2' }, title: 'Engineer' });
      // 5. Deactivate with a path-less replace.
      const deactivated = await scim(tokenA, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', value: { active: false } }],
      });
      expect(deactivated.body.active).toBe(false);
      expect((await server.database.db('identity_memberships').where({ user_id: id }).first()).status).toBe('suspended');
      // 6. Reactivate with a PUT of the whole user.
      const put = await scim(tokenA, 'PUT', `/Users/${id}`, { ...deactivated.body, active: true });
      expect(put.status).toBe(200);
      expect(put.body.active).toBe(true);
      // 7. Group push: create, then add and remove members, rename.
      const group = await scim(tokenA, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Okta Engineers', members: [] });
      expect(group.status).toBe(201);
      const groupId = group.body.id as string;
      const added = await scim(tokenA, 'PATCH', `/Groups/${groupId}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'add', path: 'members', value: [{ value: id, display: userName }] }],
      });
      expect(added.status).toBe(200);
      expect(added.body.members).toEqual([expect.objectContaining({ value: id, type: 'User' })]);
      const renamed = await scim(tokenA, 'PATCH', `/Groups/${groupId}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', value: { id: groupId, displayName: 'Okta Eng' } }],
      });
      expect(renamed.body.displayName).toBe('Okta Eng');
      expect((await scim(tokenA, 'GET', `/Users/${id}`)).body.groups).toEqual([
        expect.objectContaining({ value: groupId, display: 'Okta Eng' }),
      ]);
      const removed = await scim(tokenA, 'PATCH', `/Groups/${groupId}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'remove', path: `members[value eq "${id}"]` }],
      });
      expect(removed.body.members ?? []).toEqual([]);
      const lookupGroup = await scim(
        tokenA,
        'GET',
        `/Groups?filter=${encodeURIComponent('displayName eq "okta eng"')}&excludedAttributes=members`,
      );
      expect(lookupGroup.body.totalResults).toBe(1);
      expect(lookupGroup.body.Resources[0].members).toBeUndefined();
      expect((await scim(tokenA, 'DELETE', `/Groups/${groupId}`)).status).toBe(204);
      expectScimError(await scim(tokenA, 'GET', `/Groups/${groupId}`), 404);
    });
  });

  describe('Microsoft Entra ID', () => {
    it('runs its provisioning sequence with capitalised ops and string booleans', async () => {
      const userName = `entra.${newId().slice(-6)}@globex.example`;
      const absent = await scim(tokenB, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
      expect(absent.body.totalResults).toBe(0);
      const created = await scim(tokenB, 'POST', '/Users', {
        schemas: [USER, ENTERPRISE],
        externalId: 'entra-object-1',
        userName,
        active: true,
        displayName: 'Erin Entra',
        emails: [{ primary: true, type: 'work', value: userName }],
        meta: { resourceType: 'User' },
        name: { formatted: 'Erin Entra', familyName: 'Entra', givenName: 'Erin' },
        roles: [],
        [ENTERPRISE]: { department: 'Research', employeeNumber: '42' },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect(created.body[ENTERPRISE]).toEqual({ department: 'Research', employeeNumber: '42' });
      expect(created.body.schemas).toEqual([USER, ENTERPRISE]);

      const patched = await scim(tokenB, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'Replace', path: 'displayName', value: 'Erin E.' },
          { op: 'Replace', path: 'name.familyName', value: 'Entra-Smith' },
          { op: 'Add', path: `${ENTERPRISE}:department`, value: 'Platform' },
          { op: 'Replace', path: 'externalId', value: 'entra-object-1b' },
        ],
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({
        displayName: 'Erin E.',
        name: { familyName: 'Entra-Smith' },
        externalId: 'entra-object-1b',
      });
      expect(patched.body[ENTERPRISE].department).toBe('Platform');

      const byFamily = await scim(tokenB, 'GET', `/Users?filter=${encodeURIComponent('name.familyName sw "entra-s"')}`);
      expect(byFamily.body.Resources.map((user: Json) => user.id)).toEqual([id]);

      const disabled = await scim(tokenB, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
      });
      expect(disabled.body.active).toBe(false);
      const enabled = await scim(tokenB, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Replace', path: 'active', value: 'True' }],
      });
      expect(enabled.body.active).toBe(true);

      // Group push with a role mapping: members of "Globex Admins" become admins.
      const mapping = await server.fetch(`/v1/identity/organizations/${tenantB.organization.id}/scim/role-mappings`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${await bearerOf(tenantB.owner.id, tenantB.organization.id)}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ mappings: [{ group: 'Globex Admins', roles: ['admin'] }] }),
      });
      expect(mapping.status).toBe(200);
      const group = await scim(tokenB, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Globex Admins', externalId: 'g-1' });
      const groupId = group.body.id as string;
      const rolesOf = async () =>
        (await server.database
          .db('identity_membership_roles as r')
          .join('identity_memberships as m', 'm.id', 'r.membership_id')
          .where({ 'm.user_id': id, 'm.organization_id': tenantB.organization.id })
          .orderBy('r.role')
          .pluck('r.role')) as string[];
      const add = await scim(tokenB, 'PATCH', `/Groups/${groupId}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Add', path: 'members', value: [{ value: id }] }],
      });
      expect(add.status).toBe(200);
      expect(await rolesOf()).toEqual(['admin', 'user']);
      const inGroup = await scim(
        tokenB,
        'GET',
        `/Groups?filter=${encodeURIComponent(`id eq "${groupId}" and members[value eq "${id}"]`)}&excludedAttributes=members`,
      );
      expect(inGroup.body.totalResults).toBe(1);
      const remove = await scim(tokenB, 'PATCH', `/Groups/${groupId}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Remove', path: `members[value eq "${id}"]` }],
      });
      expect(remove.status).toBe(200);
      expect(await rolesOf()).toEqual(['user']);

      // Deprovisioning: DELETE suspends the membership; the user answers 404 from then on.
      expect((await scim(tokenB, 'DELETE', `/Users/${id}`)).status).toBe(204);
      expectScimError(await scim(tokenB, 'GET', `/Users/${id}`), 404);
      expect((await server.database.db('identity_memberships').where({ user_id: id }).first()).status).toBe('suspended');
      const listed = await scim(tokenB, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
      expect(listed.body.totalResults).toBe(0);
      // Provisioned again under the same userName: the same account comes back.
      const again = await scim(tokenB, 'POST', '/Users', {
        schemas: [USER],
        userName,
        emails: [{ value: userName, primary: true }],
      });
      expect(again.status).toBe(201);
      expect(again.body.id).toBe(id);
      expect(again.body.active).toBe(true);
    });
  });

  describe('filters and paging', () => {
    it('supports eq, ne, co, sw, pr, and, or, emails[type eq "work"].value, active and startIndex/count', async () => {
      const org = await seedOrganization(server.database.db, { name: 'Filters' });
      const { token } = await createToken(tenantA.owner.id, tenantA.organization.id);
      // The organization with its own token and three users.
      const owner = await seedUser(server.database.db);
      await seedMembership(server.database.db, { userId: owner.id, organizationId: org.id, roles: ['owner'] });
      const filterToken = (await createToken(owner.id, org.id)).token;
      const make = async (userName: string, familyName: string, active: boolean) =>
        (
          await scim(filterToken, 'POST', '/Users', {
            schemas: [USER],
            userName,
            name: { givenName: 'F', familyName },
            emails: [{ value: userName, type: 'work' }],
            active,
            ...(familyName === 'Alpha' ? { externalId: 'ext-alpha' } : {}),
          })
        ).body.id as string;
      const alpha = await make(`alpha.${newId().slice(-6)}@filters.example`, 'Alpha', true);
      const beta = await make(`beta.${newId().slice(-6)}@filters.example`, 'Beta', true);
      const gamma = await make(`gamma.${newId().slice(-6)}@other.example`, 'Gamma', false);
      const ids = async (filter: string, query = '') => {
        const result = await scim(filterToken, 'GET', `/Users?filter=${encodeURIComponent(filter)}${query}`);
        expect(result.status).toBe(200);
        return (result.body.Resources as Json[]).map((user) => user.id).sort();
      };
      const sorted = (...values: string[]) => [...values].sort();
      expect(await ids('name.familyName eq "alpha"')).toEqual([alpha]);
      expect(await ids('name.familyName ne "Alpha" and userName co "filters.example"')).toEqual([beta]);
      expect(await ids('userName sw "GAMMA."')).toEqual([gamma]);
      expect(await ids('emails[type eq "work"].value co "@filters.example"')).toEqual(sorted(alpha, beta));
      expect(await ids('emails[type eq "home"].value co "@filters.example"')).toEqual([]);
      expect(await ids('active eq false')).toEqual([gamma]);
      expect(await ids('active eq true and name.familyName pr and not (userName sw "beta")')).toEqual(sorted(owner.id, alpha));
      expect(await ids('externalId eq "ext-alpha" or name.familyName eq "Gamma"')).toEqual(sorted(alpha, gamma));
      expect(await ids('externalId pr')).toEqual([alpha]);
      expect(await ids('userName co "%"')).toEqual([]);
      const page = await scim(filterToken, 'GET', '/Users?startIndex=2&count=2');
      expect(page.body).toMatchObject({ totalResults: 4, startIndex: 2, itemsPerPage: 2 });
      const counted = await scim(filterToken, 'GET', '/Users?count=0');
      expect(counted.body).toMatchObject({ totalResults: 4, itemsPerPage: 0, Resources: [] });
      expect(token).toBeTruthy();
    });

    it('counts totalResults without a filter exactly as with one: pending, denied and deleted users are not listed', async () => {
      const db = server.database.db;
      const org = await seedOrganization(db, { name: 'Counted' });
      const owner = await seedUser(db);
      await seedMembership(db, { userId: owner.id, organizationId: org.id, roles: ['owner'] });
      const counted = (await createToken(owner.id, org.id)).token;
      for (const status of ['pending', 'denied', 'suspended'] as const) {
        await seedMembership(db, { userId: (await seedUser(db)).id, organizationId: org.id, status });
      }
      const made: string[] = [];
      for (let index = 0; index < 3; index++) {
        const userName = `counted.${index}.${newId().slice(-6)}@counted.example`;
        made.push((await scim(counted, 'POST', '/Users', { schemas: [USER], userName })).body.id as string);
      }
      expect((await scim(counted, 'DELETE', `/Users/${made[0]}`)).status).toBe(204);
      // Listed: the owner, the suspended member and the two users the directory did not delete.
      const totals = async () => ({
        unfiltered: (await scim(counted, 'GET', '/Users?count=0')).body.totalResults,
        filtered: (await scim(counted, 'GET', `/Users?count=0&filter=${encodeURIComponent('id pr')}`)).body.totalResults,
        listed: ((await scim(counted, 'GET', '/Users?count=100')).body.Resources as Json[]).length,
      });
      expect(await totals()).toEqual({ unfiltered: 4, filtered: 4, listed: 4 });
      // Another organization's members change nothing here.
      await seedMembership(db, { userId: (await seedUser(db)).id, organizationId: tenantB.organization.id, status: 'pending' });
      expect(await totals()).toEqual({ unfiltered: 4, filtered: 4, listed: 4 });
      // A member approved through idt is listed at once.
      await db('identity_memberships').where({ organization_id: org.id, status: 'pending' }).update({ status: 'active' });
      expect(await totals()).toEqual({ unfiltered: 5, filtered: 5, listed: 5 });
      // Pages are read in membership order: no member is skipped or repeated.
      const first = (await scim(counted, 'GET', '/Users?startIndex=1&count=3')).body.Resources as Json[];
      const second = (await scim(counted, 'GET', '/Users?startIndex=4&count=3')).body.Resources as Json[];
      expect(new Set([...first, ...second].map((user) => user.id)).size).toBe(5);
      // The users in a group list it; the others list none (their groups are not read).
      const group = await scim(counted, 'POST', '/Groups', {
        schemas: [GROUP],
        displayName: 'Counted Engineers',
        members: [{ value: made[1] }],
      });
      expect(group.status).toBe(201);
      const listed = (await scim(counted, 'GET', '/Users?count=100')).body.Resources as Json[];
      const groupsOf = (id: string | undefined) => listed.find((user) => user.id === id)?.groups;
      expect(groupsOf(made[1])).toEqual([expect.objectContaining({ value: group.body.id, display: 'Counted Engineers' })]);
      expect(groupsOf(made[2])).toEqual([]);
      expect(groupsOf(owner.id)).toEqual([]);
    });

    it('answers invalidFilter for bad syntax and unknown attributes', async () => {
      for (const filter of [
        'userName eq',
        'userName zz "x"',
        'nickName2 eq "x"',
        'active eq "yes"',
        'userName eq "a" and (',
        'password eq "x"',
      ]) {
        expectScimError(await scim(tokenA, 'GET', `/Users?filter=${encodeURIComponent(filter)}`), 400, 'invalidFilter');
      }
      expectScimError(await scim(tokenA, 'GET', '/Users?startIndex=abc'), 400, 'invalidValue');
    });
  });

  describe('errors', () => {
    it('answers SCIM errors for a wrong schema, an unknown attribute, bad values, conflicts and oversized bodies', async () => {
      const userName = `err.${newId().slice(-6)}@acme.example`;
      expectScimError(await scim(tokenA, 'POST', '/Users', { schemas: [GROUP], userName }), 400, 'invalidSyntax');
      expectScimError(
        await scim(tokenA, 'POST', '/Users', { schemas: [USER, 'urn:example:nope'], userName }),
        400,
        'invalidSyntax',
      );
      expectScimError(await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName, shoeSize: 44 }), 400, 'invalidSyntax');
      expectScimError(await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName: 'not-an-address' }), 400, 'invalidValue');
      expectScimError(await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName, active: 'maybe' }), 400, 'invalidValue');
      expectScimError(await scim(tokenA, 'POST', '/Users', '{"schemas": ['), 400, 'invalidSyntax');
      expectScimError(await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName }, { 'content-type': 'text/plain' }), 415);
      const created = await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName });
      expect(created.status).toBe(201);
      expectScimError(
        await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName: userName.toUpperCase() }),
        409,
        'uniqueness',
      );
      const id = created.body.id as string;
      const patch = (Operations: unknown[]) => scim(tokenA, 'PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations });
      expectScimError(await patch([{ op: 'replace', path: 'shoeSize', value: 44 }]), 400, 'invalidPath');
      expectScimError(await patch([{ op: 'remove' }]), 400, 'noTarget');
      expectScimError(await patch([{ op: 'jump', path: 'title', value: 'x' }]), 400, 'invalidSyntax');
      expectScimError(await scim(tokenA, 'PATCH', `/Users/${id}`, { Operations: [] }), 400, 'invalidSyntax');
      // The e-mail address of an account that belongs to another organization too is not this directory's to change.
      const shared = await seedUser(server.database.db);
      await seedMembership(server.database.db, { userId: shared.id, organizationId: tenantB.organization.id });
      const linked = await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName: shared.email });
      expect(linked.status).toBe(201);
      expect(linked.body.id).toBe(shared.id);
      const stolen = await scim(tokenA, 'PATCH', `/Users/${shared.id}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'replace', path: 'emails[type eq "work"].value', value: `attacker.${newId().slice(-6)}@acme.example` },
        ],
      });
      expectScimError(stolen, 400, 'mutability');
      expect((await server.database.db('identity_users').where({ id: shared.id }).first()).email).toBe(shared.email);
      // Over 1 MiB.
      const big = JSON.stringify({ schemas: [USER], userName, title: 'x'.repeat(1024 * 1024) });
      expectScimError(await scim(tokenA, 'POST', '/Users', big), 413);
      expectScimError(await scim(tokenA, 'GET', '/Users/not-a-guid'), 404);
      // Group members must be Users of the organization.
      expectScimError(
        await scim(tokenA, 'POST', '/Groups', {
          schemas: [GROUP],
          displayName: 'Strangers',
          members: [{ value: tenantB.user.id }],
        }),
        400,
        'invalidValue',
      );
    });
  });

  describe('unsupported parts of RFC 7644', () => {
    it('answers /Me, /Bulk and the /.search POSTs with SCIM 501 errors, after the token', async () => {
      for (const [method, path] of [
        ['GET', '/Me'],
        ['PATCH', '/Me'],
        ['POST', '/Bulk'],
        ['POST', '/.search'],
        ['POST', '/Users/.search'],
        ['POST', '/Groups/.search'],
      ] as const) {
        const body = method === 'GET' ? undefined : { schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'] };
        expectScimError(await scim(tokenA, method, path, body), 501);
        expect((await scim('not-a-token', method, path, body)).status).toBe(401);
      }
    });
  });

  describe('isolation', () => {
    it("keeps organization A's token away from B's users and groups (404 or empty)", async () => {
      const userName = `iso.${newId().slice(-6)}@globex.example`;
      const inB = await scim(tokenB, 'POST', '/Users', { schemas: [USER], userName });
      const groupB = await scim(tokenB, 'POST', '/Groups', { schemas: [GROUP], displayName: `Iso ${newId().slice(-6)}` });
      const id = inB.body.id as string;
      expectScimError(await scim(tokenA, 'GET', `/Users/${id}`), 404);
      expectScimError(await scim(tokenA, 'GET', `/Users/${tenantB.owner.id}`), 404);
      expectScimError(
        await scim(tokenA, 'PATCH', `/Users/${id}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'replace', path: 'active', value: false }],
        }),
        404,
      );
      expectScimError(await scim(tokenA, 'PUT', `/Users/${id}`, { schemas: [USER], userName, active: false }), 404);
      expectScimError(await scim(tokenA, 'DELETE', `/Users/${id}`), 404);
      expectScimError(await scim(tokenA, 'GET', `/Groups/${groupB.body.id}`), 404);
      expectScimError(await scim(tokenA, 'DELETE', `/Groups/${groupB.body.id}`), 404);
      const listed = await scim(tokenA, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
      expect(listed.body.totalResults).toBe(0);
      const all = await scim(tokenA, 'GET', '/Users?count=200');
      expect((all.body.Resources as Json[]).map((user) => user.id)).not.toContain(tenantB.owner.id);
      expect((await server.database.db('identity_memberships').where({ user_id: id }).first()).status).toBe('active');
      // Provisioning B's user into A attaches a membership in A and leaves B's untouched.
      const attached = await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName, active: false });
      expect(attached.status).toBe(201);
      expect(attached.body.id).toBe(id);
      const memberships = await server.database.db('identity_memberships').where({ user_id: id }).orderBy('organization_id');
      expect(Object.fromEntries(memberships.map((row: Json) => [row.organization_id, row.status]))).toEqual({
        [tenantA.organization.id]: 'suspended',
        [tenantB.organization.id]: 'active',
      });
    });
  });

  describe('deprovisioning', () => {
    it("ends the user's sessions, access tokens and API keys in the organization at once", async () => {
      const { db } = server.database;
      const userName = `leaver.${newId().slice(-6)}@acme.example`;
      const created = await scim(tokenA, 'POST', '/Users', {
        schemas: [USER],
        userName,
        name: { givenName: 'Lee', familyName: 'Ver' },
      });
      const id = created.body.id as string;
      const cookie = randomBytes(32).toString('base64url');
      const now = new Date();
      await db('identity_sessions').insert({
        id: newId(),
        user_id: id,
        token_hash: sha256Hex(cookie),
        created_at: now.toISOString(),
        last_activity_at: now.toISOString(),
        expires_at: new Date(now.getTime() + 3_600_000).toISOString(),
        amr: '["pwd"]',
      });
      const access = await bearerOf(id, tenantA.organization.id);
      const key = await server.fetch('/v1/identity/auth/keys', {
        method: 'POST',
        headers: { authorization: `Bearer ${access}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'laptop' }),
      });
      expect(key.status).toBe(201);
      const apiKey = ((await key.json()) as Json).apiKey as string;
      const whoami = (headers: Record<string, string>) => server.fetch('/v1/identity/auth/whoami', { headers });
      expect((await whoami({ authorization: `Bearer ${access}` })).status).toBe(200);
      expect((await whoami({ cookie: `idt_session=${cookie}` })).status).toBe(200);
      expect((await whoami({ 'x-api-key': apiKey })).status).toBe(200);

      const deactivated = await scim(tokenA, 'PATCH', `/Users/${id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
      });
      expect(deactivated.status).toBe(200);
      expect([401, 403]).toContain((await whoami({ authorization: `Bearer ${access}` })).status);
      expect((await whoami({ cookie: `idt_session=${cookie}` })).status).toBe(401);
      expect((await whoami({ 'x-api-key': apiKey })).status).toBe(401);
      expect((await db('identity_api_keys').where({ user_id: id }).first()).revoked_at).not.toBeNull();
      expect((await db('identity_sessions').where({ user_id: id }).first()).revoked_at).not.toBeNull();
    });

    it('keeps a user with another active membership signed in elsewhere, but out of this organization', async () => {
      const { db } = server.database;
      const both = await seedUser(db);
      await seedMembership(db, { userId: both.id, organizationId: tenantB.organization.id });
      const created = await scim(tokenA, 'POST', '/Users', { schemas: [USER], userName: both.email });
      expect(created.body.id).toBe(both.id);
      const inA = await bearerOf(both.id, tenantA.organization.id);
      const inB = await bearerOf(both.id, tenantB.organization.id);
      expect((await scim(tokenA, 'DELETE', `/Users/${both.id}`)).status).toBe(204);
      expect([401, 403]).toContain(
        (await server.fetch('/v1/identity/auth/whoami', { headers: { authorization: `Bearer ${inA}` } })).status,
      );
      expect((await server.fetch('/v1/identity/auth/whoami', { headers: { authorization: `Bearer ${inB}` } })).status).toBe(200);
      expect(
        (await db('identity_memberships').where({ user_id: both.id, organization_id: tenantB.organization.id }).first()).status,
      ).toBe('active');
    });

    it('refuses to suspend the last active owner', async () => {
      const org = await seedOrganization(server.database.db);
      const owner = await seedUser(server.database.db);
      await seedMembership(server.database.db, { userId: owner.id, organizationId: org.id, roles: ['owner'] });
      const token = (await createToken(owner.id, org.id)).token;
      expectScimError(await scim(token, 'DELETE', `/Users/${owner.id}`), 400, 'mutability');
    });
  });
});
