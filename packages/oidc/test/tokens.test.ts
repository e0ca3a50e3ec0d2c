import {
  bootstrapAdmin,
  createTestIdt,
  discover,
  oidcClient,
  redeemCode,
  registerClient,
  signIn,
  type TestAdmin,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';
const SIGNED_OUT = 'http://127.0.0.1:9/signed-out';

function decode(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
}

function header(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8'));
}

async function tokenRequest(server: TestIdt, body: Record<string, string>, basic?: [string, string]) {
  return server.fetch('/connect/token', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(basic ? { authorization: `Basic ${Buffer.from(`${basic[0]}:${basic[1]}`).toString('base64')}` } : {}),
    },
    body: new URLSearchParams(body).toString(),
  });
}

describe.each(testDialects())('OpenID provider tokens on %s', (dialect) => {
  let server: TestIdt;
  let admin: TestAdmin;
  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  const application = async (name: string, extra: Record<string, unknown> = {}) =>
    registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name,
      redirectUris: [REDIRECT],
      postLogoutRedirectUris: [SIGNED_OUT],
      scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'],
      ...extra,
    });

  it('advertises exactly the three grants, S256, query responses and the logout flags', async () => {
    const discovery = (await (await server.fetch('/.well-known/openid-configuration')).json()) as Record<string, unknown>;
    expect(discovery.issuer).toBe(server.url);
    expect(discovery.grant_types_supported).toEqual(['authorization_code', 'refresh_token', 'client_credentials']);
    expect(discovery.code_challenge_methods_supported).toEqual(['S256']);
    expect(discovery.response_types_supported).toEqual(['code']);
    expect(discovery.response_modes_supported).toEqual(['query']);
    expect(discovery).toMatchObject({
      authorization_endpoint: `${server.url}/connect/authorize`,
      token_endpoint: `${server.url}/connect/token`,
      userinfo_endpoint: `${server.url}/connect/userinfo`,
      end_session_endpoint: `${server.url}/connect/logout`,
      jwks_uri: `${server.url}/.well-known/jwks.json`,
      frontchannel_logout_supported: true,
      frontchannel_logout_session_supported: true,
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      introspection_endpoint: `${server.url}/connect/introspect`,
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      revocation_endpoint: `${server.url}/connect/revoke`,
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });
    const jwks = (await (await server.fetch('/.well-known/jwks.json')).json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.map((key) => key.alg).sort()).toEqual(['ES256', 'RS256']);
    for (const key of jwks.keys) for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(key).not.toHaveProperty(secret);
  });

  it('signs id tokens (RS256) and access tokens (ES256) that verify against the published JWKS', async () => {
    const jwks = createLocalJWKSet((await (await server.fetch('/.well-known/jwks.json')).json()) as never);
    const client = await application('Signatures');
    const config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid users.read',
      email: admin.email,
      password: admin.password,
    });
    const tokens = await redeemCode(config, result);
    const id = await jwtVerify(tokens.id_token ?? '', jwks, { issuer: server.url, audience: client.clientId });
    expect(id.protectedHeader.alg).toBe('RS256');
    const access = await jwtVerify(tokens.access_token, jwks, { issuer: server.url, typ: 'at+jwt' });
    expect(access.protectedHeader.alg).toBe('ES256');
    // A signature of the right length but another value is refused: the JWS really is checked.
    for (const token of [tokens.access_token, tokens.id_token ?? '']) {
      const [h, p, signature = ''] = token.split('.');
      const forged = `${h}.${p}.${Buffer.from(signature, 'base64url').reverse().toString('base64url')}`;
      await expect(jwtVerify(forged, jwks)).rejects.toThrow();
    }
  });

  it('issues interactive tokens with org claims, sid everywhere and scope-gated userinfo', async () => {
    const client = await application('Claims');
    const config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid profile roles users.read',
      email: admin.email,
      password: admin.password,
    });
    const tokens = await redeemCode(config, result);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBeGreaterThan(800);
    expect(tokens.expires_in).toBeLessThanOrEqual(900);
    const id = tokens.claims();
    expect(id?.sid).toMatch(/^[0-9a-f-]{36}$/);
    const access = decode(tokens.access_token);
    expect(header(tokens.access_token)).toMatchObject({ typ: 'at+jwt', alg: 'ES256' });
    expect(access).toMatchObject({
      iss: server.url,
      aud: server.url,
      sub: admin.userId,
      client_id: client.clientId,
      azp: client.clientId,
      org_id: admin.organizationId,
      sid: id?.sid,
    });
    expect(String(access.scope).split(' ').sort()).toEqual(['openid', 'profile', 'roles', 'users.read']);
    const userinfo = await oidcClient.fetchUserInfo(config, tokens.access_token, admin.userId);
    expect(userinfo).toEqual({
      sub: admin.userId,
      name: 'Ada Admin',
      given_name: 'Ada',
      family_name: 'Admin',
      org_id: admin.organizationId,
      org_name: 'Platform',
      roles: ['owner'],
    });
    expect(userinfo).not.toHaveProperty('email');
    // The id token of the session and the refresh token name the same session.
    expect(tokens.refresh_token).toBeTruthy();
  });

  it('refuses a code without its PKCE verifier or without the client secret', async () => {
    const client = await application('Pkce');
    const config = await discover(server, client);
    const result = await signIn(config, { redirectUri: REDIRECT, scope: 'openid', email: admin.email, password: admin.password });
    const code = result.callback.searchParams.get('code') ?? '';
    const wrongVerifier = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: client.clientId,
      client_secret: client.clientSecret,
      code_verifier: 'x'.repeat(50),
    });
    expect(wrongVerifier.status).toBe(400);
    expect(await wrongVerifier.json()).toMatchObject({ error: 'invalid_grant' });
    const again = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid',
      email: admin.email,
      password: admin.password,
      browser: result.browser,
    });
    const noSecret = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: again.callback.searchParams.get('code') ?? '',
      redirect_uri: REDIRECT,
      client_id: client.clientId,
      code_verifier: again.codeVerifier,
    });
    expect(noSecret.status).toBe(401);
    expect(await noSecret.json()).toMatchObject({ error: 'invalid_client' });
    const noVerifier = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: again.callback.searchParams.get('code') ?? '',
      redirect_uri: REDIRECT,
      client_id: client.clientId,
      client_secret: client.clientSecret,
    });
    expect(noVerifier.status).toBe(400);
  });

  it('requires PKCE at the authorization endpoint and refuses form_post', async () => {
    const client = await application('Modes');
    const base = `${server.url}/connect/authorize?client_id=${client.clientId}&response_type=code&redirect_uri=${encodeURIComponent(REDIRECT)}&scope=openid&state=s`;
    const withoutPkce = await server.send(base, { redirect: 'manual' });
    const location = new URL(withoutPkce.headers.get('location') ?? '', server.url);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    const formPost = await server.send(
      `${base}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256&response_mode=form_post`,
      {
        redirect: 'manual',
      },
    );
    expect(formPost.status).toBe(400);
    const plain = await server.send(`${base}&code_challenge=${'a'.repeat(43)}&code_challenge_method=plain`, {
      redirect: 'manual',
    });
    expect(new URL(plain.headers.get('location') ?? '', server.url).searchParams.get('error')).toBe('invalid_request');
  });

  it('refuses grant types other than the three', async () => {
    const client = await application('Grants');
    const response = await tokenRequest(server, { grant_type: 'password', username: admin.email, password: admin.password }, [
      client.clientId,
      client.clientSecret,
    ]);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });

  it('gives service accounts client-credentials tokens bound to their organization, without refresh tokens', async () => {
    const service = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Reporting',
      scopes: ['users.read', 'inquiries.read'],
    });
    expect(service.clientId).toBe('sa-platform-reporting');
    const config = await discover(server, service);
    const tokens = await oidcClient.clientCredentialsGrant(config, { scope: 'users.read inquiries.write' });
    expect(tokens.refresh_token).toBeUndefined();
    const claims = decode(tokens.access_token);
    expect(claims).toMatchObject({
      sub: service.clientId,
      azp: service.clientId,
      client_id: service.clientId,
      org_id: admin.organizationId,
    });
    expect(claims.scope).toBe('users.read');
    const allowed = await server.fetch('/v1/identity/users', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(allowed.status).toBe(200);
    const whoami = await server.fetch('/v1/identity/auth/whoami', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await whoami.json()).toEqual({
      kind: 'service',
      subject: service.clientId,
      userId: null,
      clientId: service.clientId,
      organizationId: admin.organizationId,
      sessionId: null,
      permissions: ['UsersRead'],
      scopes: ['users.read'],
    });
    const refused = await server.fetch(`/v1/identity/organizations/${admin.organizationId}/clients`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope"');
    const basic = await tokenRequest(server, { grant_type: 'client_credentials', scope: 'users.read' }, [
      service.clientId,
      service.clientSecret,
    ]);
    expect(basic.status).toBe(200);
    const authorizationCode = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, code_verifier: 'v'.repeat(43) },
      [service.clientId, service.clientSecret],
    );
    expect(authorizationCode.status).toBe(400);
    expect(await authorizationCode.json()).toEqual({
      error: 'unauthorized_client',
      error_description: 'This client is not registered for the authorization_code grant.',
    });
  });

  it('answers invalid_client for an unknown client or a wrong secret, and locks a client out after five failures', async () => {
    const service = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Locked',
      scopes: ['users.read'],
    });
    const unknown = await tokenRequest(server, { grant_type: 'client_credentials' }, ['nobody', 'nothing']);
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_client' });
    for (let attempt = 0; attempt < 5; attempt++) {
      const wrong = await tokenRequest(server, { grant_type: 'client_credentials', scope: 'users.read' }, [
        service.clientId,
        'wrong',
      ]);
      expect(wrong.status).toBe(401);
    }
    const right = await tokenRequest(server, { grant_type: 'client_credentials', scope: 'users.read' }, [
      service.clientId,
      service.clientSecret,
    ]);
    expect(right.status).toBe(401);
    const body = (await right.json()) as { error: string; error_description: string };
    expect(body.error).toBe('invalid_client');
    const audit = await server.database.db('oidc_client_auth_failures').where({ client_id: service.clientId }).first();
    expect(Number(audit.total)).toBe(6);
    expect(audit.locked_until).toBeTruthy();
    // Unknown client ids are counted in memory only (see lockout-bounded.test.ts).
    const unknownAudit = await server.database.db('oidc_client_auth_failures').where({ client_id: 'nobody' }).first();
    expect(unknownAudit).toBeUndefined();
  });

  it('answers a Basic credential that is not form-encoded with an OAuth error, not a crash', async () => {
    const garbled = await tokenRequest(server, { grant_type: 'client_credentials' }, ['%zz', 'secret']);
    expect(garbled.status).toBe(400);
    expect(await garbled.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('refuses a token form over 56 KiB unread, and takes the next form whole', async () => {
    const service = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Form sizes',
      scopes: ['users.read'],
    });
    const credentials: [string, string] = [service.clientId, service.clientSecret];
    const large = await tokenRequest(server, { grant_type: 'client_credentials', padding: 'x'.repeat(57 * 1024) }, credentials);
    expect(large.status).toBe(400);
    expect(await large.json()).toEqual({ error: 'invalid_request', error_description: 'The request body is too large.' });
    // Just under the limit: read in several chunks, handed to the provider whole.
    const padded = await tokenRequest(
      server,
      { grant_type: 'client_credentials', scope: 'users.read', padding: 'x'.repeat(55 * 1024) },
      credentials,
    );
    expect(padded.status).toBe(200);
    expect(decode(((await padded.json()) as { access_token: string }).access_token)).toMatchObject({ scope: 'users.read' });
    const empty = await server.fetch('/connect/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('signs with rotated keys while tokens of the old keys keep verifying', async () => {
    const service = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Rotation',
      scopes: ['users.read'],
    });
    const config = await discover(server, service);
    const before = await oidcClient.clientCredentialsGrant(config, { scope: 'users.read' });
    const oldKid = header(before.access_token).kid;
    await server.idt.rotateSigningKeys();
    const after = await oidcClient.clientCredentialsGrant(await discover(server, service), { scope: 'users.read' });
    expect(header(after.access_token).kid).not.toBe(oldKid);
    const jwks = (await (await server.fetch('/.well-known/jwks.json')).json()) as { keys: Array<{ kid: string }> };
    expect(jwks.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([oldKid, header(after.access_token).kid]));
    for (const token of [before.access_token, after.access_token]) {
      expect((await server.fetch('/v1/identity/users', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    }
  });
});
