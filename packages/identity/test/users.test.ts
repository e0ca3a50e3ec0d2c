import { defineEventHandler, type EventEnvelope } from '@idt/core';
import { UserDeactivatedEvent } from '@idt/identity';
import { createTestIdt, mintAccessToken, seedMembership, seedUser, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, outboxEvents, seedWorld } from './accounts-helpers.js';

describe.each(testDialects())('users over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  const deactivations: Array<EventEnvelope<{ userId: string; deactivatedAt: string }>> = [];

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
    server.idt.infrastructure.events.subscribe(
      defineEventHandler({
        name: 'test.record-deactivations',
        module: 'test',
        event: UserDeactivatedEvent,
        handle: async (envelope) => void deactivations.push(envelope),
      }),
    );
  });
  afterAll(async () => {
    await server.close();
  });

  describe('POST /v1/identity/auth/register', () => {
    const grace = {
      email: '  Grace@Example.COM ',
      password: 'correct horse battery staple',
      firstName: 'Grace',
      lastName: 'Hopper',
    };

    it('registers an account with an argon2id hash and publishes UserRegisteredEvent', async () => {
      const { userId } = await expectJson(await call('POST', '/v1/identity/auth/register', { body: grace }), 201);
      const row = await server.database.db('identity_users').where({ id: userId }).first();
      expect(row).toMatchObject({
        email: 'grace@example.com',
        username: 'grace@example.com',
        first_name: 'Grace',
        status: 'active',
      });
      expect(row.password_hash).toMatch(/^\$argon2id\$/);
      expect(await outboxEvents(server.database.db, 'UserRegisteredEvent')).toEqual([{ userId, email: 'grace@example.com' }]);
    });

    it('answers 409 Identity.EmailTaken for a taken address, whatever its case', async () => {
      await expectProblem(
        await call('POST', '/v1/identity/auth/register', { body: { ...grace, email: 'GRACE@example.com' } }),
        409,
        'Identity.EmailTaken',
      );
      expect(await outboxEvents(server.database.db, 'UserRegisteredEvent')).toHaveLength(1);
    });

    it('answers 400 with errors keyed by field and writes nothing', async () => {
      const before = await server.database.db('identity_users').count({ n: '*' }).first();
      const problem = await expectProblem(
        await call('POST', '/v1/identity/auth/register', { body: { email: 'nope', password: 'short', firstName: ' ' } }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors).sort()).toEqual(['email', 'firstName', 'lastName', 'password']);
      expect(await server.database.db('identity_users').count({ n: '*' }).first()).toEqual(before);
    });
  });

  describe('the caller’s profile and organizations', () => {
    it('serves GET /users/me to organization-less and organization tokens, and 401 without a credential', async () => {
      const profile = await expectJson(await call('GET', '/v1/identity/users/me', { token: world.outsiderToken }));
      expect(profile).toEqual({
        id: world.outsider.id,
        email: world.outsider.email,
        username: world.outsider.email,
        firstName: 'Otto',
        lastName: 'Outsider',
        status: 'active',
        emailVerified: false,
        createdAt: expect.stringMatching(/Z$/),
      });
      expect((await expectJson(await call('GET', '/v1/identity/users/me', { token: world.a.tokens.user }))).id).toBe(
        world.a.user.id,
      );
      await expectProblem(await call('GET', '/v1/identity/users/me'), 401, 'Auth.Unauthenticated');
    });

    it('changes names with PATCH /users/me and refuses bad names without writing', async () => {
      const updated = await expectJson(
        await call('PATCH', '/v1/identity/users/me', { token: world.outsiderToken, body: { firstName: '  Ottilie ' } }),
      );
      expect(updated).toMatchObject({ firstName: 'Ottilie', lastName: 'Outsider' });
      const problem = await expectProblem(
        await call('PATCH', '/v1/identity/users/me', {
          token: world.outsiderToken,
          body: { firstName: '', lastName: 'x'.repeat(101) },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors).sort()).toEqual(['firstName', 'lastName']);
      const row = await server.database.db('identity_users').where({ id: world.outsider.id }).first();
      expect(row).toMatchObject({ first_name: 'Ottilie', last_name: 'Outsider' });
      await expectProblem(
        await call('PATCH', '/v1/identity/users/me', { body: { firstName: 'X' } }),
        401,
        'Auth.Unauthenticated',
      );
    });

    it('lists every membership of the caller, in any state, with GET /users/me/organizations', async () => {
      const db = server.database.db;
      const user = await seedUser(db);
      await seedMembership(db, { userId: user.id, organizationId: world.a.organization.id, roles: ['manager', 'user'] });
      await seedMembership(db, { userId: user.id, organizationId: world.b.organization.id, roles: [], status: 'pending' });
      const token = await mintAccessToken(server, { sub: user.id });
      const list = await expectJson(await call('GET', '/v1/identity/users/me/organizations', { token }));
      expect(list).toEqual([
        {
          organization: {
            id: world.a.organization.id,
            name: 'Alpha',
            slug: world.a.organization.slug,
            enrollmentPolicy: 'invitation_only',
            status: 'active',
            isPlatform: false,
          },
          membership: { status: 'active', roles: ['manager', 'user'], createdAt: expect.any(String) },
        },
        expect.objectContaining({
          organization: expect.objectContaining({ id: world.b.organization.id }),
          membership: expect.objectContaining({ status: 'pending', roles: [] }),
        }),
      ]);
      expect(await expectJson(await call('GET', '/v1/identity/users/me/organizations', { token: world.outsiderToken }))).toEqual(
        [],
      );
      await expectProblem(await call('GET', '/v1/identity/users/me/organizations'), 401, 'Auth.Unauthenticated');
    });
  });

  describe('users of the tenant', () => {
    it('lists only the members of the token organization, paged', async () => {
      const members: string[] = await server.database
        .db('identity_memberships')
        .where({ organization_id: world.a.organization.id })
        .pluck('user_id');
      expect(members).toHaveLength(5);
      const page = await expectJson(await call('GET', '/v1/identity/users?pageSize=3', { token: world.a.tokens.manager }));
      expect(page).toMatchObject({
        totalCount: 5,
        page: 1,
        pageSize: 3,
        totalPages: 2,
        hasNextPage: true,
        hasPreviousPage: false,
      });
      const second = await expectJson(
        await call('GET', '/v1/identity/users?page=2&pageSize=3', { token: world.a.tokens.manager }),
      );
      expect(second).toMatchObject({ page: 2, hasNextPage: false, hasPreviousPage: true });
      const ids = [...page.items, ...second.items].map((user: { id: string }) => user.id).sort();
      expect(ids).toEqual(members.sort());
      expect(ids).not.toContain(world.b.user.id);
      const clamped = await expectJson(await call('GET', '/v1/identity/users?pageSize=500', { token: world.a.tokens.admin }));
      expect(clamped.pageSize).toBe(100);
    });

    it('refuses bad paging, missing permissions, organization-less tokens and anonymous callers', async () => {
      const problem = await expectProblem(
        await call('GET', '/v1/identity/users?page=0&pageSize=x', { token: world.a.tokens.admin }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors).sort()).toEqual(['page', 'pageSize']);
      await expectProblem(await call('GET', '/v1/identity/users', { token: world.a.tokens.user }), 403, 'Auth.Forbidden');
      await expectProblem(await call('GET', '/v1/identity/users', { token: world.outsiderToken }), 403, 'Tenant.Required');
      await expectProblem(await call('GET', '/v1/identity/users'), 401, 'Auth.Unauthenticated');
    });

    it('reads a user of the tenant and answers 404 for anyone else', async () => {
      expect(
        await expectJson(await call('GET', `/v1/identity/users/${world.a.user.id}`, { token: world.a.tokens.admin })),
      ).toMatchObject({ id: world.a.user.id, email: world.a.user.email });
      await expectProblem(
        await call('GET', `/v1/identity/users/${world.b.user.id}`, { token: world.a.tokens.admin }),
        404,
        'Identity.UserNotFound',
      );
      await expectProblem(
        await call('GET', `/v1/identity/users/${world.outsider.id}`, { token: world.a.tokens.admin }),
        404,
        'Identity.UserNotFound',
      );
      const problem = await expectProblem(
        await call('GET', '/v1/identity/users/not-a-guid', { token: world.a.tokens.admin }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors)).toEqual(['userId']);
      await expectProblem(
        await call('GET', `/v1/identity/users/${world.a.user.id}`, { token: world.a.tokens.user }),
        403,
        'Auth.Forbidden',
      );
    });
  });

  describe('deactivation', () => {
    it('is for platform administrators only: 403 for organization administrators, 401 anonymous', async () => {
      const target = world.b.user.id;
      await expectProblem(
        await call('POST', `/v1/identity/users/${target}/deactivate`, { token: world.a.tokens.owner }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(
        await call('POST', `/v1/identity/users/${target}/deactivate`, { token: world.b.tokens.manager }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(await call('POST', `/v1/identity/users/${target}/deactivate`), 401, 'Auth.Unauthenticated');
      await expectProblem(
        await call('POST', `/v1/identity/users/${target}/deactivate`, { token: world.outsiderToken }),
        403,
        'Tenant.Required',
      );
      expect((await server.database.db('identity_users').where({ id: target }).first()).status).toBe('active');
    });

    it('revokes the user’s tokens, records the watermark and publishes UserDeactivatedEvent in one go', async () => {
      const target = world.b.user;
      const oldToken = world.b.tokens.user;
      expect((await call('GET', `/v1/identity/organizations/${world.b.organization.id}`, { token: oldToken })).status).toBe(200);

      const deactivated = await expectJson(
        await call('POST', `/v1/identity/users/${target.id}/deactivate`, { token: world.platformToken }),
      );
      expect(deactivated).toMatchObject({ id: target.id, status: 'deactivated' });

      await expectProblem(
        await call('GET', `/v1/identity/organizations/${world.b.organization.id}`, { token: oldToken }),
        401,
        'Auth.Unauthenticated',
      );
      const db = server.database.db;
      const watermark = await db('identity_token_revocations').where({ subject_type: 'user', subject_id: target.id }).first();
      // The second after the server's clock: tokens issued in the current second are refused too.
      expect(Number(watermark.not_before)).toBe(Math.floor(server.clock.now().getTime() / 1000) + 1);
      const events = await outboxEvents(db, 'UserDeactivatedEvent');
      expect(events).toEqual([
        { userId: target.id, deactivatedAt: expect.stringMatching(/Z$/), deactivatedByUserId: world.platformAdmin.id },
      ]);
      await server.idt.infrastructure.events.dispatchPending();
      expect(deactivations.map((envelope) => envelope.payload)).toEqual(events);
    });

    it('refuses deactivating yourself, twice, or an unknown user', async () => {
      await expectProblem(
        await call('POST', `/v1/identity/users/${world.platformAdmin.id}/deactivate`, { token: world.platformToken }),
        422,
        'Identity.CannotDeactivateSelf',
      );
      await expectProblem(
        await call('POST', `/v1/identity/users/${world.b.user.id}/deactivate`, { token: world.platformToken }),
        422,
        'Identity.UserAlreadyDeactivated',
      );
      await expectProblem(
        await call('POST', '/v1/identity/users/0190a000-0000-7000-8000-000000000000/deactivate', { token: world.platformToken }),
        404,
        'Identity.UserNotFound',
      );
      expect(await outboxEvents(server.database.db, 'UserDeactivatedEvent')).toHaveLength(1);
    });

    it('reactivates: new tokens work, tokens from before the deactivation stay revoked', async () => {
      const target = world.b.user;
      await expectProblem(
        await call('POST', `/v1/identity/users/${world.a.user.id}/reactivate`, { token: world.platformToken }),
        422,
        'Identity.UserNotDeactivated',
      );
      await expectProblem(
        await call('POST', `/v1/identity/users/${target.id}/reactivate`, { token: world.a.tokens.admin }),
        403,
        'Auth.Forbidden',
      );
      const reactivated = await expectJson(
        await call('POST', `/v1/identity/users/${target.id}/reactivate`, { token: world.platformToken }),
      );
      expect(reactivated.status).toBe('active');
      expect(await outboxEvents(server.database.db, 'UserReactivatedEvent')).toEqual([
        { userId: target.id, reactivatedAt: expect.any(String), reactivatedByUserId: world.platformAdmin.id },
      ]);
      const path = `/v1/identity/organizations/${world.b.organization.id}`;
      await expectProblem(await call('GET', path, { token: world.b.tokens.user }), 401, 'Auth.Unauthenticated');
      // Two seconds after the watermark, by the server's clock: a token issued now is newer than it.
      server.clock.advance(2_000);
      const fresh = await mintAccessToken(server, { sub: target.id, org_id: world.b.organization.id });
      expect((await call('GET', path, { token: fresh })).status).toBe(200);
    });
  });
});
