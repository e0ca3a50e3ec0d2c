import { createHash } from 'node:crypto';
import { createManualClock, sha256Hex } from '@idt/core';
import {
  Browser,
  createTestIdt,
  oidcClient,
  redeemCode,
  signIn,
  type TenantWithTokens,
  type TestIdt,
  tenantWithTokens,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  caller,
  clientRow,
  configFor,
  expectJson,
  expectProblem,
  grantError,
  jwtPayload,
  nextSecond,
  passwordUser,
  REDIRECT_URI,
  register,
  serviceToken,
  unique,
} from './clients-support.js';

const sha256 = (value: string) => `sha256:${createHash('sha256').update(value).digest('hex')}`;

describe.each(testDialects())('client lifecycle: rotate, suspend, reinstate, delete on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let tenant: TenantWithTokens;
  const path = (clientId: string, rest = '') => `/v1/identity/organizations/${tenant.organization.id}/clients/${clientId}${rest}`;
  // `lastUsedAt` (and its once-a-minute throttle) and the revocation watermarks read this clock.
  const clock = createManualClock();
  /**
   * Brings the clock to the wall clock before an operation that writes a
   * revocation watermark: the tokens it must refuse carry an `iat` that
   * oidc-provider stamped from its own Date.now(). Returns the instant.
   */
  const revokingNow = () => {
    clock.set(Date.now());
    return clock.now().getTime();
  };
  /** The client's `lastUsedAt` once the background write of a successful client authentication has landed. */
  const lastUsedAt = async (clientId: string): Promise<string> => {
    await expect.poll(async () => (await clientRow(server, clientId))?.last_used_at ?? null, { timeout: 5000 }).not.toBeNull();
    return new Date((await clientRow(server, clientId))?.last_used_at).toISOString();
  };

  /** A bearer call a users.read service token may make. */
  const usersWith = (token: string) => call('GET', '/v1/identity/users', { token });
  const newServiceAccount = (name = unique('Worker')) =>
    register(server, tenant.tokens.admin, tenant.organization.id, {
      kind: 'service-account',
      name,
      scopes: ['users.read', 'roles.read'],
    });

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock, env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' } });
    call = caller(server);
    tenant = await tenantWithTokens(server, 'Lifecycle');
  });
  afterAll(async () => {
    await server?.close();
  });

  it('issues client-credentials tokens that the API accepts (the baseline)', async () => {
    const sa = await newServiceAccount();
    const tokens = await serviceToken(server, sa, 'users.read');
    expect(jwtPayload(tokens.access_token)).toMatchObject({
      sub: sa.clientId,
      client_id: sa.clientId,
      org_id: tenant.organization.id,
      scope: 'users.read',
    });
    await expectJson(await usersWith(tokens.access_token));
    // The service account holds only the permissions of its scopes.
    await expectProblem(
      await call('GET', `/v1/identity/organizations/${tenant.organization.id}/clients`, { token: tokens.access_token }),
      403,
      'Auth.Forbidden',
    );
  });

  describe('rotate-secret', () => {
    it('issues a new secret, shown once; the old one is invalid_client at once; tokens survive by default', async () => {
      const sa = await newServiceAccount();
      const before = await serviceToken(server, sa, 'users.read');
      const usedAt = await lastUsedAt(sa.clientId);
      expect(usedAt).toBe(clock.now().toISOString());
      // No body at all.
      const response = await call('POST', path(sa.clientId, '/rotate-secret'), { token: tenant.tokens.manager });
      expect(response.headers.get('cache-control')).toBe('no-store');
      const rotated = await expectJson(response);
      expect(rotated).toEqual({
        client: {
          ...sa.client,
          lastRotatedAt: expect.stringMatching(/Z$/),
          lastRotatedByUserId: tenant.manager.id,
          updatedAt: clock.now().toISOString(),
          lastUsedAt: usedAt,
        },
        clientSecret: expect.any(String),
        issuer: server.url,
        apiBaseUrl: server.url,
      });
      expect(rotated.clientSecret).not.toBe(sa.clientSecret);
      const row = await clientRow(server, sa.clientId);
      expect(row?.secret_hash).toBe(sha256(rotated.clientSecret));
      expect(JSON.stringify(row)).not.toContain(rotated.clientSecret);
      // The new secret is not shown again.
      const shown = await expectJson(await call('GET', path(sa.clientId), { token: tenant.tokens.admin }));
      expect(JSON.stringify(shown)).not.toContain(rotated.clientSecret);

      expect(await grantError(serviceToken(server, sa, 'users.read'))).toEqual({ status: 401, error: 'invalid_client' });
      const fresh = await serviceToken(server, { clientId: sa.clientId, clientSecret: rotated.clientSecret }, 'users.read');
      await expectJson(await usersWith(fresh.access_token));
      // Without revokeActiveTokens, tokens issued before the rotation still work.
      await expectJson(await usersWith(before.access_token));
    });

    it('with revokeActiveTokens, every token issued so far stops working', async () => {
      const sa = await newServiceAccount();
      const old = await serviceToken(server, sa, 'users.read');
      await expectJson(await usersWith(old.access_token));
      const rotatedAt = revokingNow();
      const rotated = await expectJson(
        await call('POST', path(sa.clientId, '/rotate-secret'), {
          token: tenant.tokens.admin,
          body: { revokeActiveTokens: true },
        }),
      );
      await expectProblem(await usersWith(old.access_token), 401, 'Auth.Unauthenticated');
      const userinfo = await server.fetch('/connect/userinfo', { headers: { authorization: `Bearer ${old.access_token}` } });
      expect(userinfo.status).toBe(401);
      // Tokens are refused up to the end of the rotation's second; later ones work.
      await nextSecond(rotatedAt);
      const fresh = await serviceToken(server, { clientId: sa.clientId, clientSecret: rotated.clientSecret }, 'users.read');
      await expectJson(await usersWith(fresh.access_token));
      await expectProblem(await usersWith(old.access_token), 401, 'Auth.Unauthenticated');
    });

    it('validates the optional body', async () => {
      const sa = await newServiceAccount();
      await expectJson(await call('POST', path(sa.clientId, '/rotate-secret'), { token: tenant.tokens.admin, body: {} }));
      const problem = await expectProblem(
        await call('POST', path(sa.clientId, '/rotate-secret'), {
          token: tenant.tokens.admin,
          body: { revokeActiveTokens: 'yes' },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors)).toEqual(['revokeActiveTokens']);
    });
  });

  describe('suspend and reinstate', () => {
    it('suspends: invalid_client at the token endpoint, earlier tokens refused; reinstating lets new tokens in', async () => {
      const sa = await newServiceAccount();
      const old = await serviceToken(server, sa, 'users.read');
      await expectJson(await usersWith(old.access_token));
      const usedAt = await lastUsedAt(sa.clientId);

      const suspendedAt = revokingNow();
      const suspended = await expectJson(await call('POST', path(sa.clientId, '/suspend'), { token: tenant.tokens.admin }));
      expect(suspended).toEqual({
        ...sa.client,
        status: 'suspended',
        updatedAt: new Date(suspendedAt).toISOString(),
        lastUsedAt: usedAt,
      });
      await expectProblem(
        await call('POST', path(sa.clientId, '/suspend'), { token: tenant.tokens.admin }),
        422,
        'Identity.ClientAlreadySuspended',
      );
      expect((await expectJson(await call('GET', path(sa.clientId), { token: tenant.tokens.admin }))).status).toBe('suspended');

      expect(await grantError(serviceToken(server, sa, 'users.read'))).toEqual({ status: 401, error: 'invalid_client' });
      await expectProblem(await usersWith(old.access_token), 401, 'Auth.Unauthenticated');

      const reinstated = await expectJson(await call('POST', path(sa.clientId, '/reinstate'), { token: tenant.tokens.owner }));
      expect(reinstated).toEqual({
        ...sa.client,
        status: 'active',
        updatedAt: new Date(suspendedAt).toISOString(),
        lastUsedAt: usedAt,
      });
      await expectProblem(
        await call('POST', path(sa.clientId, '/reinstate'), { token: tenant.tokens.owner }),
        422,
        'Identity.ClientNotSuspended',
      );
      // The same secret works again; a token of a later second is accepted, the earlier one stays refused.
      await nextSecond(suspendedAt);
      const fresh = await serviceToken(server, sa, 'users.read');
      await expectJson(await usersWith(fresh.access_token));
      await expectProblem(await usersWith(old.access_token), 401, 'Auth.Unauthenticated');
      // Within a minute of that use (by the clock) `lastUsedAt` stays; a minute on, the next use moves it.
      clock.set(Date.parse(usedAt) + 59_999);
      await serviceToken(server, sa, 'users.read');
      expect(await lastUsedAt(sa.clientId)).toBe(usedAt);
      clock.set(Date.parse(usedAt) + 60_000);
      await serviceToken(server, sa, 'users.read');
      await expect
        .poll(() => lastUsedAt(sa.clientId), { timeout: 5000 })
        .toBe(new Date(Date.parse(usedAt) + 60_000).toISOString());
    });

    it("suspending an application ends its users' tokens, refresh tokens included, also after reinstatement", async () => {
      await server.database
        .db('identity_organizations')
        .where({ id: tenant.organization.id })
        .update({ enrollment_policy: 'open' });
      const application = await register(server, tenant.tokens.admin, tenant.organization.id, {
        kind: 'application',
        name: unique('Suspended App'),
        redirectUris: [REDIRECT_URI],
        scopes: ['openid', 'offline_access', 'users.read'],
      });
      const config = await configFor(server, application);
      const user = await passwordUser(server, 'suspension');
      const result = await signIn(config, {
        redirectUri: REDIRECT_URI,
        scope: 'openid offline_access',
        email: user.email,
        password: user.password,
      });
      const tokens = await redeemCode(config, result);
      expect(tokens.refresh_token).toBeTruthy();
      await expectJson(await call('GET', '/v1/identity/users/me', { token: tokens.access_token }));
      // The refresh token's row (under its hash) and its grant's, found through the grant by the client.
      const stored = () =>
        server.database
          .db('oidc_payloads')
          .where({ model: 'RefreshToken', id: sha256Hex(tokens.refresh_token ?? '') })
          .first('grant_id');
      const grantId = (await stored())?.grant_id;
      expect(grantId).toEqual(expect.any(String));

      const suspendedAt = revokingNow();
      await expectJson(await call('POST', path(application.clientId, '/suspend'), { token: tenant.tokens.admin }));
      // Deleted, not only refused: the grant and every row of it.
      expect(await stored()).toBeUndefined();
      expect(await server.database.db('oidc_payloads').where({ grant_id: grantId }).select('model')).toEqual([]);
      await expectProblem(
        await call('GET', '/v1/identity/users/me', { token: tokens.access_token }),
        401,
        'Auth.Unauthenticated',
      );
      expect(await grantError(oidcClient.refreshTokenGrant(config, tokens.refresh_token ?? ''))).toEqual({
        status: 401,
        error: 'invalid_client',
      });

      await expectJson(await call('POST', path(application.clientId, '/reinstate'), { token: tenant.tokens.admin }));
      await nextSecond(suspendedAt);
      // The refresh token issued before the suspension does not bring the old sign-in back.
      expect((await grantError(oidcClient.refreshTokenGrant(config, tokens.refresh_token ?? ''))).error).toBe('invalid_grant');
      // A new sign-in works.
      const again = await signIn(config, {
        redirectUri: REDIRECT_URI,
        scope: 'openid offline_access',
        email: user.email,
        password: user.password,
        browser: new Browser({}, server.send),
      });
      const fresh = await redeemCode(config, again);
      await expectJson(await call('GET', '/v1/identity/users/me', { token: fresh.access_token }));
    });

    it('takes no body and answers 404 for unknown clients', async () => {
      await expectProblem(
        await call('POST', path('no-such-client', '/suspend'), { token: tenant.tokens.admin }),
        404,
        'Clients.NotFound',
      );
      await expectProblem(
        await call('POST', path('no-such-client', '/reinstate'), { token: tenant.tokens.admin }),
        404,
        'Clients.NotFound',
      );
    });
  });

  describe('delete', () => {
    it('removes the client: 204, then 404; invalid_client at the token endpoint; its tokens refused', async () => {
      const sa = await newServiceAccount();
      const old = await serviceToken(server, sa, 'users.read');
      await expectJson(await usersWith(old.access_token));
      revokingNow();
      const response = await call('DELETE', path(sa.clientId), { token: tenant.tokens.admin });
      expect(response.status).toBe(204);
      expect(await response.text()).toBe('');
      expect(await clientRow(server, sa.clientId)).toBeUndefined();
      await expectProblem(await call('GET', path(sa.clientId), { token: tenant.tokens.admin }), 404, 'Clients.NotFound');
      await expectProblem(await call('DELETE', path(sa.clientId), { token: tenant.tokens.admin }), 404, 'Clients.NotFound');
      const list = await expectJson(
        await call('GET', `/v1/identity/organizations/${tenant.organization.id}/clients`, { token: tenant.tokens.admin }),
      );
      expect(list.map((client: { clientId: string }) => client.clientId)).not.toContain(sa.clientId);

      expect(await grantError(serviceToken(server, sa, 'users.read'))).toEqual({ status: 401, error: 'invalid_client' });
      await expectProblem(await usersWith(old.access_token), 401, 'Auth.Unauthenticated');
    });

    it('frees the id: a client registered again under the name works, the deleted one’s tokens stay refused', async () => {
      const name = unique('Reborn');
      const first = await newServiceAccount(name);
      const old = await serviceToken(server, first, 'users.read');
      const deletedAt = revokingNow();
      expect((await call('DELETE', path(first.clientId), { token: tenant.tokens.admin })).status).toBe(204);

      const second = await newServiceAccount(name);
      expect(second.clientId).toBe(first.clientId);
      expect(await grantError(serviceToken(server, first, 'users.read'))).toEqual({ status: 401, error: 'invalid_client' });
      await nextSecond(deletedAt);
      const fresh = await serviceToken(server, second, 'users.read');
      await expectJson(await usersWith(fresh.access_token));
      await expectProblem(await usersWith(old.access_token), 401, 'Auth.Unauthenticated');
    });
  });
});

describe.each(testDialects())('the registration rate policy on the clients surface on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let tenant: TenantWithTokens;
  const base = () => `/v1/identity/organizations/${tenant.organization.id}/clients`;

  beforeAll(async () => {
    server = await createTestIdt({
      dialect,
      env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true', IDT_RATE_LIMIT_REGISTRATION_PERMIT_LIMIT: '2' },
    });
    call = caller(server);
    tenant = await tenantWithTokens(server, 'Limited');
  });
  afterAll(async () => {
    await server?.close();
  });

  it('counts every mutation per user, not reads', async () => {
    const app = {
      kind: 'application',
      name: 'Limited App',
      redirectUris: ['https://limited.example.com/cb'],
      scopes: ['openid'],
    };
    // The admin: register and rotate count; the third mutation (an update) is refused.
    const registration = await expectJson(await call('POST', base(), { token: tenant.tokens.admin, body: app }), 201);
    const clientPath = `${base()}/${registration.client.clientId}`;
    await expectJson(await call('POST', `${clientPath}/rotate-secret`, { token: tenant.tokens.admin }));
    const limited = await call('PATCH', clientPath, { token: tenant.tokens.admin, body: { scopes: ['openid', 'email'] } });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    await expectProblem(limited, 429, 'RateLimit.Exceeded');
    expect(JSON.parse((await clientRow(server, registration.client.clientId))?.scopes)).toEqual(['openid']);
    // Reads are not counted.
    for (let i = 0; i < 4; i++) {
      await expectJson(await call('GET', clientPath, { token: tenant.tokens.admin }));
      await expectJson(await call('GET', `${clientPath}/branding`, { token: tenant.tokens.admin }));
    }

    // The manager has a budget of their own: suspend and reinstate count, then branding is refused.
    await expectJson(await call('POST', `${clientPath}/suspend`, { token: tenant.tokens.manager }));
    await expectJson(await call('POST', `${clientPath}/reinstate`, { token: tenant.tokens.manager }));
    await expectProblem(
      await call('PUT', `${clientPath}/branding`, { token: tenant.tokens.manager, body: { displayName: 'Limited' } }),
      429,
      'RateLimit.Exceeded',
    );

    // The owner: branding and delete count; another registration is refused and writes nothing.
    await expectJson(
      await call('PUT', `${clientPath}/branding`, { token: tenant.tokens.owner, body: { displayName: 'Limited' } }),
    );
    expect((await call('DELETE', clientPath, { token: tenant.tokens.owner })).status).toBe(204);
    await expectProblem(await call('POST', base(), { token: tenant.tokens.owner, body: app }), 429, 'RateLimit.Exceeded');
    expect(await clientRow(server, registration.client.clientId)).toBeUndefined();
  });
});
