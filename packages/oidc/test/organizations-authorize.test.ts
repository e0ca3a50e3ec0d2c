import {
  Browser,
  createTestIdt,
  oidcClient,
  redeemCode,
  type SignInResult,
  seedMembership,
  seedOrganization,
  signIn,
  type TestIdt,
  tenantWithTokens,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  caller,
  configFor,
  expectJson,
  expectProblem,
  jwtPayload,
  passwordUser,
  REDIRECT_URI,
  register,
  sawConsent,
  unique,
} from './clients-support.js';

type Policy = 'open' | 'approval_required' | 'invitation_only';
type Config = Awaited<ReturnType<typeof configFor>>;

const SCOPE = 'openid profile email roles';

describe.each(testDialects())('organizations at authorize time on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;

  beforeAll(async () => {
    server = await createTestIdt({ dialect, env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' } });
    call = caller(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** An organization with the given enrollment policy, its admins, and an application bound to it. */
  async function boundClient(policy: Policy) {
    const tenant = await tenantWithTokens(server, unique('Org'));
    await server.database
      .db('identity_organizations')
      .where({ id: tenant.organization.id })
      .update({ enrollment_policy: policy });
    const client = await register(server, tenant.tokens.admin, tenant.organization.id, {
      kind: 'application',
      name: unique('Portal'),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'],
    });
    return { tenant, client, config: await configFor(server, client) };
  }

  /** A seeded first-party client, bound to no organization. */
  async function firstPartyClient() {
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      {
        kind: 'application',
        name: unique('Console'),
        redirectUris: [REDIRECT_URI],
        scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'],
      },
      { firstParty: true },
    );
    expect(registration.client).toMatchObject({ firstParty: true, organizationId: null });
    const config = await configFor(server, { clientId: registration.client.clientId, clientSecret: registration.clientSecret });
    return { client: registration.client, config };
  }

  const run = (config: Config, user: { email: string; password: string }, extra: Partial<Parameters<typeof signIn>[1]> = {}) =>
    signIn(config, { redirectUri: REDIRECT_URI, scope: SCOPE, email: user.email, password: user.password, ...extra });

  /** Exchanges the code of a finished sign-in. */
  async function exchange(config: Config, result: SignInResult) {
    expect(result.callback.searchParams.get('error'), result.callback.href).toBeNull();
    const tokens = await redeemCode(config, result);
    return { tokens, access: jwtPayload(tokens.access_token), id: (tokens.claims() ?? {}) as Record<string, unknown> };
  }

  /** Asserts the sign-in ended at the client's redirect URI with an error. */
  function expectRedirectError(result: SignInResult, error: string, description?: string) {
    const { callback } = result;
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get('code')).toBeNull();
    expect(callback.searchParams.get('error')).toBe(error);
    if (description !== undefined) expect(callback.searchParams.get('error_description')).toBe(description);
    expect(callback.searchParams.get('state')).toBe(result.state);
  }

  const membershipOf = (userId: string, organizationId: string) =>
    server.database.db('identity_memberships').where({ user_id: userId, organization_id: organizationId }).first();

  describe('a client bound to an organization runs its enrollment policy', () => {
    it('open: a new user joins as an active user and gets a token for the organization', async () => {
      const { tenant, config } = await boundClient('open');
      const user = await passwordUser(server, 'open');
      const result = await run(config, user);
      expect(sawConsent(result.pages)).toBe(true);
      const { access, id } = await exchange(config, result);
      expect(access).toMatchObject({ sub: user.id, org_id: tenant.organization.id });
      expect(id).toMatchObject({
        sub: user.id,
        org_id: tenant.organization.id,
        org_name: tenant.organization.name,
        roles: ['user'],
      });
      expect(await membershipOf(user.id, tenant.organization.id)).toMatchObject({ status: 'active' });
    });

    it('approval_required: membership_pending, the request is recorded, and after approval the same sign-in succeeds', async () => {
      const { tenant, config } = await boundClient('approval_required');
      const user = await passwordUser(server, 'pending');
      const first = await run(config, user);
      expectRedirectError(first, 'access_denied', 'membership_pending');
      expect(await membershipOf(user.id, tenant.organization.id)).toMatchObject({ status: 'pending' });
      const pending = await expectJson(
        await call('GET', `/v1/identity/organizations/${tenant.organization.id}/members?status=pending`, {
          token: tenant.tokens.admin,
        }),
      );
      expect(pending.items.map((member: { userId: string }) => member.userId)).toEqual([user.id]);

      // Trying again before approval changes nothing.
      expectRedirectError(await run(config, user, { browser: first.browser }), 'access_denied', 'membership_pending');

      await expectJson(
        await call('POST', `/v1/identity/organizations/${tenant.organization.id}/members/${user.id}/approve`, {
          token: tenant.tokens.admin,
        }),
      );
      const second = await run(config, user, { browser: first.browser });
      const { access, id } = await exchange(config, second);
      expect(access).toMatchObject({ sub: user.id, org_id: tenant.organization.id });
      expect(id).toMatchObject({ org_id: tenant.organization.id, roles: ['user'] });
    });

    it('invitation_only: not_a_member, and nothing is written', async () => {
      const { tenant, config } = await boundClient('invitation_only');
      const user = await passwordUser(server, 'outsider');
      expectRedirectError(await run(config, user), 'access_denied', 'not_a_member');
      expect(await membershipOf(user.id, tenant.organization.id)).toBeUndefined();
    });

    it.each([
      ['suspended', 'membership_suspended'],
      ['denied', 'membership_denied'],
      ['pending', 'membership_pending'],
    ] as const)('a %s member is refused with %s, whatever the policy', async (status, description) => {
      const { tenant, config } = await boundClient('open');
      const user = await passwordUser(server, status);
      await seedMembership(server.database.db, { userId: user.id, organizationId: tenant.organization.id, status, roles: [] });
      expectRedirectError(await run(config, user), 'access_denied', description);
      expect(await membershipOf(user.id, tenant.organization.id)).toMatchObject({ status });
    });

    it('refuses an existing grant once the membership is suspended', async () => {
      const { tenant, config } = await boundClient('open');
      const user = await passwordUser(server, 'later-suspended');
      const first = await run(config, user);
      await exchange(config, first);
      await expectJson(
        await call('POST', `/v1/identity/organizations/${tenant.organization.id}/members/${user.id}/suspend`, {
          token: tenant.tokens.admin,
        }),
      );
      expectRedirectError(await run(config, user, { browser: first.browser }), 'access_denied', 'membership_suspended');
    });

    it('answers an organization parameter naming another organization with invalid_request', async () => {
      const { tenant, config } = await boundClient('open');
      const other = await seedOrganization(server.database.db, { enrollmentPolicy: 'open' });
      const user = await passwordUser(server, 'hint');
      for (const organization of [other.id, 'select', 'none', 'not-a-guid']) {
        expectRedirectError(await run(config, user, { parameters: { organization } }), 'invalid_request');
      }
      // Naming the bound organization itself is fine (in any letter case).
      const result = await run(config, user, { parameters: { organization: tenant.organization.id.toUpperCase() } });
      expect((await exchange(config, result)).access.org_id).toBe(tenant.organization.id);
      expect(await membershipOf(user.id, other.id)).toBeUndefined();
    });
  });

  describe('first-party clients and the organization hint', () => {
    let config: Config;
    let orgOne: { id: string; name: string };
    let orgTwo: { id: string; name: string };
    let member: Awaited<ReturnType<typeof passwordUser>>;

    beforeAll(async () => {
      ({ config } = await firstPartyClient());
      orgOne = await seedOrganization(server.database.db, { name: unique('One') });
      orgTwo = await seedOrganization(server.database.db, { name: unique('Two') });
      member = await passwordUser(server, 'multi');
      await seedMembership(server.database.db, { userId: member.id, organizationId: orgOne.id, roles: ['manager'] });
      await seedMembership(server.database.db, { userId: member.id, organizationId: orgTwo.id, roles: ['admin', 'user'] });
    });

    it('carries the hinted organization: org_id, org_name and the roles there; never asks for consent', async () => {
      const result = await run(config, member, { parameters: { organization: orgTwo.id } });
      expect(sawConsent(result.pages)).toBe(false);
      const { tokens, access, id } = await exchange(config, result);
      expect(access).toMatchObject({ sub: member.id, org_id: orgTwo.id });
      expect(id).toMatchObject({ org_id: orgTwo.id, org_name: orgTwo.name, roles: ['admin', 'user'] });
      const userinfo = await oidcClient.fetchUserInfo(config, tokens.access_token, member.id);
      expect(userinfo).toMatchObject({ org_id: orgTwo.id, org_name: orgTwo.name, roles: ['admin', 'user'] });
      // The token works in that organization with the permissions of those roles.
      await expectJson(await call('GET', `/v1/identity/organizations/${orgTwo.id}/clients`, { token: tokens.access_token }));
    });

    it('without a hint, a user with several organizations gets an organization-less token of limited reach', async () => {
      const result = await run(config, member);
      expect(sawConsent(result.pages)).toBe(false);
      const { tokens, access, id } = await exchange(config, result);
      expect(access.org_id).toBeUndefined();
      expect(id.org_id).toBeUndefined();
      expect(id.roles).toBeUndefined();
      const token = tokens.access_token;
      expect((await expectJson(await call('GET', '/v1/identity/users/me', { token }))).id).toBe(member.id);
      const mine = await expectJson(await call('GET', '/v1/identity/users/me/organizations', { token }));
      expect(mine.map((entry: { organization: { id: string } }) => entry.organization.id).sort()).toEqual(
        [orgOne.id, orgTwo.id].sort(),
      );
      await expectProblem(await call('GET', '/v1/identity/users', { token }), 403, 'Tenant.Required');
      await expectProblem(await call('GET', '/v1/identity/scopes', { token }), 403, 'Tenant.Required');
      await expectProblem(
        await call('GET', `/v1/identity/organizations/${orgOne.id}/clients`, { token }),
        403,
        'Tenant.Required',
      );
      await expectJson(await call('POST', '/v1/identity/organizations', { token, body: { name: unique('Created') } }), 201);
    });

    it('organization=select shows the organization choice, and the choice is carried', async () => {
      const result = await run(config, member, { parameters: { organization: 'select' }, chooseOrganization: orgOne.id });
      const choice = result.pages.find((page) => page.body.includes('/organization"'));
      expect(choice?.body).toContain(orgOne.name);
      expect(choice?.body).toContain(orgTwo.name);
      const { id, access } = await exchange(config, result);
      expect(access.org_id).toBe(orgOne.id);
      expect(id).toMatchObject({ org_id: orgOne.id, roles: ['manager'] });
      // Choosing "No organization" gives an organization-less token.
      const none = await run(config, member, { parameters: { organization: 'select' }, chooseOrganization: 'none' });
      expect((await exchange(config, none)).access.org_id).toBeUndefined();
    });

    it('a single membership is the default; no membership means no organization', async () => {
      const single = await passwordUser(server, 'single');
      await seedMembership(server.database.db, { userId: single.id, organizationId: orgOne.id, roles: ['user'] });
      const result = await run(config, single);
      expect((await exchange(config, result)).access.org_id).toBe(orgOne.id);
      // With a single organization, select has nothing to choose.
      const selected = await run(config, single, { parameters: { organization: 'select' } });
      expect((await exchange(config, selected)).access.org_id).toBe(orgOne.id);

      const loner = await passwordUser(server, 'loner');
      const alone = await run(config, loner);
      const { access, id } = await exchange(config, alone);
      expect(access.org_id).toBeUndefined();
      expect(id.org_name).toBeUndefined();
    });

    it('refuses a hint of an organization the user is not an active member of, and a hint that is no organization id', async () => {
      const loner = await passwordUser(server, 'hinted');
      expectRedirectError(await run(config, loner, { parameters: { organization: orgTwo.id } }), 'access_denied', 'not_a_member');
      expect(await membershipOf(loner.id, orgTwo.id)).toBeUndefined();
      expectRedirectError(await run(config, member, { parameters: { organization: 'acme' } }), 'invalid_request');
    });
  });

  describe('consent', () => {
    it('is asked once per user and client, remembered, and asked again after withdrawal', async () => {
      const { client, config } = await boundClient('open');
      const user = await passwordUser(server, 'consent');
      const first = await run(config, user);
      expect(sawConsent(first.pages)).toBe(true);
      const consentPage = first.pages.find((page) => page.body.includes('/consent"'));
      expect(consentPage?.body).toContain('Your e-mail address');
      const { tokens } = await exchange(config, first);

      // Another browser (a new single sign-on session): not asked again.
      const second = await run(config, user, { browser: new Browser({}, server.send) });
      expect(sawConsent(second.pages)).toBe(false);
      const { tokens: secondTokens } = await exchange(config, second);
      const otherClientId = (await boundClient('open')).client.clientId;

      const consents = await expectJson(await call('GET', '/v1/identity/consents', { token: tokens.access_token }));
      expect(consents).toEqual([
        { clientId: client.clientId, scopes: ['email', 'openid', 'profile', 'roles'], updatedAt: expect.any(String) },
      ]);
      expect((await call('DELETE', `/v1/identity/consents/${client.clientId}`, { token: tokens.access_token })).status).toBe(204);
      // Withdrawal ends the client's token families: its access tokens, the one used here included.
      await expectProblem(
        await call('GET', '/v1/identity/consents', { token: tokens.access_token }),
        401,
        'Auth.Unauthenticated',
      );
      await expectProblem(
        await call('GET', '/v1/identity/consents', { token: secondTokens.access_token }),
        401,
        'Auth.Unauthenticated',
      );

      const third = await run(config, user, { browser: new Browser({}, server.send) });
      expect(sawConsent(third.pages)).toBe(true);
      const { tokens: thirdTokens } = await exchange(config, third);
      await expectProblem(
        await call('DELETE', `/v1/identity/consents/${otherClientId}`, { token: thirdTokens.access_token }),
        404,
        'Clients.NotFound',
      );
      expect(await expectJson(await call('GET', '/v1/identity/consents', { token: thirdTokens.access_token }))).toEqual([
        { clientId: client.clientId, scopes: ['email', 'openid', 'profile', 'roles'], updatedAt: expect.any(String) },
      ]);
    });

    it('asks again for scopes not yet allowed', async () => {
      const { config } = await boundClient('open');
      const user = await passwordUser(server, 'more-scopes');
      await exchange(config, await run(config, user, { scope: 'openid' }));
      const more = await run(config, user, { scope: 'openid users.read', browser: new Browser({}, server.send) });
      expect(sawConsent(more.pages)).toBe(true);
      expect(jwtPayload((await exchange(config, more)).tokens.access_token).scope).toContain('users.read');
    });

    it('denying consent is access_denied and is not remembered', async () => {
      const { config } = await boundClient('open');
      const user = await passwordUser(server, 'denier');
      const denied = await run(config, user, { consent: 'deny' });
      expect(sawConsent(denied.pages)).toBe(true);
      expectRedirectError(denied, 'access_denied');
      const again = await run(config, user, { browser: new Browser({}, server.send) });
      expect(sawConsent(again.pages)).toBe(true);
    });
  });
});
