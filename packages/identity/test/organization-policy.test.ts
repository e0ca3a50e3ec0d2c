import { createTestIdt, seedMembership, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { caller, expectJson, expectProblem, outboxEvents, seedWorld } from './accounts-helpers.js';

describe.each(testDialects())('organization security policy on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  const policy = (orgId: string) => `/v1/identity/organizations/${orgId}/security-policy`;
  const policies = () => server.idt.services.identity.verification.organizationPolicy;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  it('starts with nothing required', async () => {
    const read = await expectJson(await call('GET', policy(world.a.organization.id), { token: world.a.tokens.owner }));
    expect(read).toEqual({ organizationId: world.a.organization.id, requireMfa: false, requireVerifiedEmail: false });
    expect(await policies().get(world.a.organization.id)).toEqual({ requireMfa: false, requireVerifiedEmail: false });
  });

  it('lets the owner and an admin change it, field by field, and publishes the change', async () => {
    const orgId = world.a.organization.id;
    // Cached before the change: the change must evict it.
    expect((await policies().get(orgId)).requireMfa).toBe(false);
    expect(await policies().requiresMfaForUser(world.a.user.id)).toBe(false);
    const changed = await expectJson(
      await call('PUT', policy(orgId), { token: world.a.tokens.owner, body: { requireMfa: true } }),
    );
    expect(changed).toEqual({ organizationId: orgId, requireMfa: true, requireVerifiedEmail: false });
    await vi.waitFor(async () => expect(await policies().get(orgId)).toEqual({ requireMfa: true, requireVerifiedEmail: false }));
    await vi.waitFor(async () => expect(await policies().requiresMfaForUser(world.a.user.id)).toBe(true));
    expect(await policies().requiresMfaForUser(world.b.user.id)).toBe(false);

    const both = await expectJson(
      await call('PUT', policy(orgId.toUpperCase()), { token: world.a.tokens.admin, body: { requireVerifiedEmail: true } }),
    );
    expect(both).toEqual({ organizationId: orgId, requireMfa: true, requireVerifiedEmail: true });
    await vi.waitFor(async () => expect(await policies().requiresVerifiedEmail(orgId)).toBe(true));
    expect(await policies().requiresVerifiedEmail(world.b.organization.id)).toBe(false);
    expect(await policies().requiresVerifiedEmail(null)).toBe(false);

    const events = await outboxEvents(server.database.db, 'OrganizationSecurityPolicyChangedEvent');
    expect(events.slice(-2)).toEqual([
      {
        organizationId: orgId,
        requireMfa: true,
        requireVerifiedEmail: false,
        changedByUserId: world.a.owner.id,
        changedAt: expect.stringMatching(/Z$/),
      },
      {
        organizationId: orgId,
        requireMfa: true,
        requireVerifiedEmail: true,
        changedByUserId: world.a.admin.id,
        changedAt: expect.stringMatching(/Z$/),
      },
    ]);

    await expectJson(
      await call('PUT', policy(orgId), { token: world.a.tokens.owner, body: { requireMfa: false, requireVerifiedEmail: false } }),
    );
    await vi.waitFor(async () => expect(await policies().requiresMfaForUser(world.a.user.id)).toBe(false));
  });

  it('refuses managers and users (403) and other organizations’ members (404), changing nothing', async () => {
    const orgId = world.a.organization.id;
    for (const token of [world.a.tokens.manager, world.a.tokens.user]) {
      await expectProblem(await call('GET', policy(orgId), { token }), 403, 'Auth.Forbidden');
      await expectProblem(await call('PUT', policy(orgId), { token, body: { requireMfa: true } }), 403, 'Auth.Forbidden');
    }
    for (const token of [world.b.tokens.owner, world.b.tokens.admin]) {
      await expectProblem(await call('GET', policy(orgId), { token }), 404, 'Identity.OrganizationNotFound');
      await expectProblem(
        await call('PUT', policy(orgId), { token, body: { requireMfa: true } }),
        404,
        'Identity.OrganizationNotFound',
      );
    }
    // Without an organization in the token, as every organization route answers.
    await expectProblem(await call('GET', policy(orgId), { token: world.outsiderToken }), 403, 'Tenant.Required');
    await expectProblem(await call('GET', policy(orgId)), 401, 'Auth.Unauthenticated');
    await expectProblem(await call('PUT', policy(orgId), { body: { requireMfa: true } }), 401, 'Auth.Unauthenticated');
    expect(await policies().get(orgId)).toEqual({ requireMfa: false, requireVerifiedEmail: false });
  });

  it('lets platform administrators read and change any organization', async () => {
    const orgId = world.b.organization.id;
    await expectJson(await call('PUT', policy(orgId), { token: world.platformToken, body: { requireVerifiedEmail: true } }));
    const read = await expectJson(await call('GET', policy(orgId), { token: world.platformToken }));
    expect(read).toEqual({ organizationId: orgId, requireMfa: false, requireVerifiedEmail: true });
    await expectProblem(
      await call('GET', policy('00000000-0000-4000-8000-000000000000'), { token: world.platformToken }),
      404,
      'Identity.OrganizationNotFound',
    );
    await expectProblem(
      await call('PUT', policy('00000000-0000-4000-8000-000000000000'), {
        token: world.platformToken,
        body: { requireMfa: true },
      }),
      404,
      'Identity.OrganizationNotFound',
    );
    // A plain member of the platform organization is no platform administrator.
    const member = world.a.user;
    await seedMembership(server.database.db, { userId: member.id, organizationId: world.platform.id, roles: ['user'] });
    const { mintAccessToken } = await import('@idt/testing');
    const memberToken = await mintAccessToken(server, { sub: member.id, org_id: world.platform.id });
    await expectProblem(await call('GET', policy(orgId), { token: memberToken }), 404, 'Identity.OrganizationNotFound');
  });

  it('refuses bad bodies and bad ids with Validation.Failed, changing nothing', async () => {
    const orgId = world.a.organization.id;
    const token = world.a.tokens.owner;
    const before = await policies().get(orgId);
    for (const body of [
      {},
      { requireMfa: 'yes' },
      { requireMfa: 1 },
      { requireMfa: null },
      { requireMfa: true, unknown: true },
      { requireMFA: true },
      [],
      'true',
    ]) {
      const problem = await expectProblem(await call('PUT', policy(orgId), { token, body }), 400, 'Validation.Failed');
      expect(problem.errors).toBeDefined();
    }
    await expectProblem(await call('PUT', policy(orgId), { token, body: '{"requireMfa": tru' }), 400, 'Http.ClientError');
    await expectProblem(await call('GET', policy('not-a-guid'), { token }), 400, 'Validation.Failed');
    expect(await policies().get(orgId)).toEqual(before);
  });

  it('is seen by every instance on the same database', async () => {
    const second = await createTestIdt({ dialect, database: server.database });
    try {
      const orgId = world.a.organization.id;
      const other = () => second.idt.services.identity.verification.organizationPolicy;
      expect(await other().get(orgId)).toEqual({ requireMfa: false, requireVerifiedEmail: false });
      await expectJson(await call('PUT', policy(orgId), { token: world.a.tokens.owner, body: { requireMfa: true } }));
      await vi.waitFor(async () => expect((await other().get(orgId)).requireMfa).toBe(true), { timeout: 5000 });
      await vi.waitFor(async () => expect(await other().requiresMfaForUser(world.a.manager.id)).toBe(true), { timeout: 5000 });
      await expectJson(await call('PUT', policy(orgId), { token: world.a.tokens.owner, body: { requireMfa: false } }));
      await vi.waitFor(async () => expect((await other().get(orgId)).requireMfa).toBe(false), { timeout: 5000 });
    } finally {
      await second.close();
    }
  });

  it('is in the OpenAPI document and the event catalog', async () => {
    const document = await expectJson(await server.fetch('/openapi/v1.json'));
    const path = document.paths['/v1/identity/organizations/{orgId}/security-policy'];
    expect(path.get.operationId).toBe('getOrganizationSecurityPolicy');
    expect(path.put.operationId).toBe('updateOrganizationSecurityPolicy');
    const events = server.idt.services.identity.events.map((event) => event.type);
    expect(events).toContain('OrganizationSecurityPolicyChangedEvent');
  });
});
