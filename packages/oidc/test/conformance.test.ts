import { createManualClock, type ManualClock } from '@idt/core';
import {
  Browser,
  type BrowserResponse,
  bootstrapAdmin,
  createTestIdt,
  mintAccessToken,
  registerClient,
  registerUser,
  seedMembership,
  seedOrganization,
  type TestAdmin,
  type TestClient,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Protocol corners a certified relying party meets, driven by oauth4webapi: the authorization endpoint
// over POST (OpenID Connect Core 3.1.2.1), introspection of idt's JWT access tokens (RFC 7662),
// unauthorized_client (RFC 6749 5.2) and the caching headers of token responses (RFC 6749 5.1).

const REDIRECT = 'http://127.0.0.1:9/callback';
const SIGNED_OUT = 'http://127.0.0.1:9/signed-out';
const PASSWORD = 'correct horse battery staple';
/** The default reuse leeway of redeemed refresh tokens, in milliseconds. */
const LEEWAY_MS = 30_000;
/** What oauth4webapi sends through: the in-process instance of the describe block that runs. */
let send: typeof fetch = fetch;
const insecure = {
  [oauth.allowInsecureRequests]: true,
  [oauth.customFetch]: (url: string, init: oauth.CustomFetchOptions<string, unknown>) => send(url, init as RequestInit),
} as const;

/** Both caching headers of RFC 6749 5.1. */
function expectNoStore(response: Response | BrowserResponse) {
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('pragma')).toBe('no-cache');
}

/**
 * The OAuth error of a request oauth4webapi refused: from the body, or (for a 401 with a
 * `WWW-Authenticate` challenge, as client_secret_basic's) from the body of the response it kept unread.
 */
async function refusal(processing: Promise<unknown>): Promise<{ status: number; error: string }> {
  const error = await processing.then(
    () => {
      throw new Error('expected the request to be refused');
    },
    (caught: unknown) => caught,
  );
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    return { status: error.status, error: ((await error.response.json()) as { error: string }).error };
  }
  expect(error).toBeInstanceOf(oauth.ResponseBodyError);
  const { status, error: code } = error as oauth.ResponseBodyError;
  return { status, error: code };
}

/** What a sign-in through the POST authorization request gave. */
interface SignedIn {
  readonly tokens: oauth.TokenEndpointResponse;
  readonly browser: Browser;
  /** The answer of the POST itself. */
  readonly posted: BrowserResponse;
}

describe.each(testDialects())('relying-party conformance with oauth4webapi on %s', (dialect) => {
  // The refresh-token reuse leeway reads this clock; it starts on a whole second, as oidc-provider's `iat` does.
  const clock: ManualClock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  let server: TestIdt;
  let admin: TestAdmin;
  let as: oauth.AuthorizationServer;
  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    send = server.send;
    admin = await bootstrapAdmin(server);
    const issuer = new URL(server.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
  });
  afterAll(async () => {
    await server?.close();
  });

  const application = async (name: string) =>
    registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name,
      redirectUris: [REDIRECT],
      postLogoutRedirectUris: [SIGNED_OUT],
      scopes: ['openid', 'profile', 'email', 'offline_access', 'users.read'],
    });
  const serviceAccount = async (name: string, token = admin.token(), organizationId = admin.organizationId) =>
    registerClient(server, await token, organizationId, { kind: 'service-account', name, scopes: ['users.read'] });
  const rp = (client: TestClient): oauth.Client => ({ client_id: client.clientId, id_token_signed_response_alg: 'RS256' });
  const post = (client: TestClient) => oauth.ClientSecretPost(client.clientSecret);
  const basic = (client: TestClient) => oauth.ClientSecretBasic(client.clientSecret);

  /** POSTs a form to the authorization endpoint in a browser, without following the answer. */
  function postAuthorization(browser: Browser, form: Record<string, string>, query = ''): Promise<BrowserResponse> {
    return browser.request(`${as.authorization_endpoint}${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
  }

  /**
   * Signs in through a form-encoded POST authorization request built with oauth4webapi (PKCE, state,
   * nonce), the sign-in and consent pages, and the code exchange through oauth4webapi.
   */
  async function signInByPost(
    client: TestClient,
    person: { email: string; password: string } = admin,
    browser = new Browser({}, server.send),
  ): Promise<SignedIn> {
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const posted = await postAuthorization(browser, {
      client_id: client.clientId,
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid profile email offline_access users.read',
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    expect(posted.status).toBe(303);
    let page = await browser.navigate(new URL(posted.headers.get('location') ?? '', posted.url).href);
    for (let step = 0; step < 4 && !(page.status >= 300 && page.status < 400); step++) {
      if (page.body.includes('/login"')) {
        page = await browser.submit({ form: '/login', fields: { email: person.email, password: person.password } });
      } else if (page.body.includes('/consent"')) {
        page = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
      } else {
        throw new Error(`Unexpected page ${page.status} at ${page.url}:\n${page.body.slice(0, 2000)}`);
      }
    }
    const callback = new URL(page.url);
    expect(callback.origin + callback.pathname).toBe(REDIRECT);
    const parameters = oauth.validateAuthResponse(as, rp(client), callback, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      rp(client),
      post(client),
      parameters,
      REDIRECT,
      codeVerifier,
      insecure,
    );
    expectNoStore(response);
    const tokens = await oauth.processAuthorizationCodeResponse(as, rp(client), response, { expectedNonce: nonce });
    return { tokens, browser, posted };
  }

  /** Introspects a token as `client` through oauth4webapi. */
  async function introspect(
    client: TestClient,
    token: string,
    options: { auth?: 'post' | 'basic'; hint?: string } = {},
  ): Promise<oauth.IntrospectionResponse> {
    const response = await oauth.introspectionRequest(as, rp(client), (options.auth === 'basic' ? basic : post)(client), token, {
      ...insecure,
      ...(options.hint ? { additionalParameters: { token_type_hint: options.hint } } : {}),
    });
    expectNoStore(response);
    return oauth.processIntrospectionResponse(as, rp(client), response);
  }

  /** The status the API answers an access token with. */
  async function apiStatus(accessToken: string): Promise<number> {
    return (await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${accessToken}` } })).status;
  }

  it('signs in with a form-encoded POST authorization request, as with a GET', async () => {
    const client = await application('Post Authorize');
    const { tokens, posted } = await signInByPost(client);
    // The provider's answer to a GET: a redirect to the sign-in pages, with its cookies.
    expect(new URL(posted.headers.get('location') ?? '').pathname).toMatch(/^\/connect\/interaction\/[\w-]+$/);
    expect(posted.headers.getSetCookie().some((cookie) => cookie.startsWith('idt_interaction='))).toBe(true);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.refresh_token).toBeTruthy();
    expect(oauth.getValidatedIdTokenClaims(tokens)).toMatchObject({ sub: admin.userId, aud: client.clientId });
    expect(await apiStatus(tokens.access_token)).toBe(200);
  });

  it('applies every check of a GET to a POST authorization request', async () => {
    const client = await application('Post Checks');
    const browser = new Browser({}, server.send);
    const form = {
      client_id: client.clientId,
      response_type: 'code',
      redirect_uri: REDIRECT,
      scope: 'openid',
      state: 'state-1',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
    };
    const redirectError = (response: BrowserResponse) => {
      expect(response.status).toBe(303);
      const location = new URL(response.headers.get('location') ?? '');
      expect(location.origin + location.pathname).toBe(REDIRECT);
      return location.searchParams.get('error');
    };
    // PKCE is required.
    const { code_challenge: _challenge, code_challenge_method: _method, ...withoutPkce } = form;
    expect(redirectError(await postAuthorization(browser, withoutPkce))).toBe('invalid_request');
    expect(redirectError(await postAuthorization(browser, { ...form, code_challenge_method: 'plain' }))).toBe('invalid_request');
    // The organization hint of a bound client must name its organization.
    const elsewhere = await seedOrganization(server.database.db, { name: 'Elsewhere' });
    expect(redirectError(await postAuthorization(browser, { ...form, organization: elsewhere.id }))).toBe('invalid_request');
    // An unregistered redirect URI is never redirected to.
    const unregistered = await postAuthorization(browser, { ...form, redirect_uri: 'https://attacker.example/callback' });
    expect(unregistered.status).toBe(400);
    expect(unregistered.headers.get('location')).toBeNull();
    expect(unregistered.body).toContain('invalid_redirect_uri');
    // Codes return in the query only.
    const formPost = await postAuthorization(browser, { ...form, response_mode: 'form_post' });
    expect(formPost.status).toBe(400);
    expect(formPost.body).toContain('invalid_request');
    // The parameters of a POST are its form's: the URL's query is not read.
    const queryOnly = await browser.request(`${as.authorization_endpoint}?${new URLSearchParams(form)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(queryOnly.status).toBe(400);
    expect(queryOnly.body).toContain('client_id');
    const notForm = await browser.request(`${as.authorization_endpoint}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(form),
    });
    expect(notForm.status).toBe(400);
    expect(notForm.body).toContain('client_id');
    // Hostile bytes and oversized forms are refused before the provider sees them.
    for (const body of [`client_id=${client.clientId}&state=%00`, `client_id=${client.clientId}&state=%C3%28`]) {
      const hostile = await browser.request(`${as.authorization_endpoint}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      expect(hostile.status).toBe(400);
      expect(JSON.parse(hostile.body)).toEqual({
        error: 'invalid_request',
        error_description: 'The state parameter contains a NUL character or bytes that are not valid UTF-8.',
      });
      expectNoStore(hostile);
    }
    const large = await postAuthorization(browser, { ...form, padding: 'x'.repeat(57 * 1024) });
    expect(large.status).toBe(400);
    expect(JSON.parse(large.body)).toEqual({ error: 'invalid_request', error_description: 'The request body is too large.' });
    // Nothing above started a sign-in.
    expect(browser.cookies(as.authorization_endpoint ?? '').has('idt_sso')).toBe(false);
  });

  it('introspects a live access token for the client it was issued to: active, with the RFC 7662 members', async () => {
    const client = await application('Introspected');
    const { tokens } = await signInByPost(client);
    const idClaims = oauth.getValidatedIdTokenClaims(tokens);
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1] ?? '', 'base64url').toString('utf8'));
    const expected = {
      active: true,
      token_type: 'Bearer',
      client_id: client.clientId,
      sub: admin.userId,
      // offline_access asks for a refresh token; the access token does not carry it.
      scope: 'openid profile email users.read',
      org_id: admin.organizationId,
      exp: claims.exp,
      iat: claims.iat,
      iss: server.url,
      aud: server.url,
      jti: claims.jti,
      sid: idClaims?.sid,
    };
    expect(await introspect(client, tokens.access_token)).toEqual(expected);
    // Either client authentication; the hint is only a hint (RFC 7662 2.1), whatever its value.
    expect(await introspect(client, tokens.access_token, { auth: 'basic' })).toEqual(expected);
    for (const hint of ['access_token', 'refresh_token', 'urn:example:unknown']) {
      expect(await introspect(client, tokens.access_token, { hint })).toEqual(expected);
    }
    // The provider still introspects the refresh token itself.
    expect(await introspect(client, tokens.refresh_token ?? '', { hint: 'refresh_token' })).toMatchObject({
      active: true,
      client_id: client.clientId,
      sub: admin.userId,
    });

    // Another client of the same organization learns nothing.
    const other = await application('Curious');
    expect(await introspect(other, tokens.access_token)).toEqual({ active: false });
    // Neither does any client about what is not a live access token of idt.
    expect(await introspect(client, tokens.id_token ?? '')).toEqual({ active: false });
    expect(await introspect(client, 'not-a-token')).toEqual({ active: false });
    const [header, payload] = tokens.access_token.split('.');
    expect(await introspect(client, `${header}.${payload}.${'A'.repeat(86)}`)).toEqual({ active: false });
    expect(await introspect(client, `${header}.e30.e30`)).toEqual({ active: false });
    // Expired by the issuer's clock: inactive, even within the five minutes a resource server allows.
    const mint = (expiresIn: number) =>
      mintAccessToken(
        server,
        { sub: admin.userId, org_id: admin.organizationId, client_id: client.clientId, azp: client.clientId, scope: 'openid' },
        { expiresIn },
      );
    const justExpired = await mint(-10);
    expect(await apiStatus(justExpired)).toBe(200);
    expect(await introspect(client, justExpired)).toEqual({ active: false });
    expect(await introspect(client, await mint(-3600))).toEqual({ active: false });
    expect(await introspect(client, await mint(600))).toMatchObject({ active: true, client_id: client.clientId });

    // A client that prefers HTML still gets the JSON answer.
    const html = await server.fetch('/connect/introspect', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: new URLSearchParams({ token: tokens.access_token, client_id: client.clientId, client_secret: client.clientSecret }),
    });
    expect(html.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await html.json()).toEqual(expected);

    // The token must be there, and the client authenticated by the provider's own client authentication.
    const missing = await server.fetch('/connect/introspect', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: client.clientId, client_secret: client.clientSecret }).toString(),
    });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'invalid_request' });
    expectNoStore(missing);
    const wrongSecret = { ...client, clientSecret: 'not-the-secret' };
    expect(await refusal(introspect(wrongSecret, tokens.access_token))).toEqual({ status: 401, error: 'invalid_client' });
    expect(await refusal(introspect({ ...client, clientId: 'no-such-client' }, tokens.access_token))).toEqual({
      status: 401,
      error: 'invalid_client',
    });
  });

  it('keeps the invalid-client lockout at introspection of access tokens', async () => {
    const client = await application('Locked Introspection');
    const { tokens } = await signInByPost(client);
    const wrong = { ...client, clientSecret: 'not-the-secret' };
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(await refusal(introspect(wrong, tokens.access_token, { auth: 'basic' }))).toEqual({
        status: 401,
        error: 'invalid_client',
      });
    }
    expect(await refusal(introspect(client, tokens.access_token))).toEqual({ status: 401, error: 'invalid_client' });
    const audit = await server.database.db('oidc_client_auth_failures').where({ client_id: client.clientId }).first();
    // The sixth, refused although its secret is right, counts too.
    expect(Number(audit.total)).toBe(6);
    expect(audit.locked_until).toBeTruthy();
  });

  it('answers active: false once RP-initiated logout ended the session', async () => {
    const client = await application('Logged Out');
    const { tokens, browser } = await signInByPost(client);
    expect(await introspect(client, tokens.access_token)).toMatchObject({ active: true });
    const logout = new URL(as.end_session_endpoint ?? '');
    logout.searchParams.set('id_token_hint', tokens.id_token ?? '');
    logout.searchParams.set('post_logout_redirect_uri', SIGNED_OUT);
    const confirmation = await browser.navigate(logout.href);
    expect(confirmation.status).toBe(200);
    const done = await browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    expect(done.url.startsWith(SIGNED_OUT)).toBe(true);
    expect(await introspect(client, tokens.access_token)).toEqual({ active: false });
    expect(await introspect(client, tokens.refresh_token ?? '')).toEqual({ active: false });
    expect(await apiStatus(tokens.access_token)).toBe(401);
  });

  it('answers active: false once a refresh-token replay after the leeway ended the family; caching headers on both', async () => {
    const client = await application('Family');
    const { tokens } = await signInByPost(client);
    const refreshed = await oauth.refreshTokenGrantRequest(as, rp(client), basic(client), tokens.refresh_token ?? '', insecure);
    expectNoStore(refreshed);
    const rotated = await oauth.processRefreshTokenResponse(as, rp(client), refreshed);
    expect(await introspect(client, rotated.access_token)).toMatchObject({ active: true });

    clock.advance(LEEWAY_MS + 1);
    const replay = await oauth.refreshTokenGrantRequest(as, rp(client), basic(client), tokens.refresh_token ?? '', insecure);
    expectNoStore(replay);
    expect(await refusal(oauth.processRefreshTokenResponse(as, rp(client), replay))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    for (const accessToken of [tokens.access_token, rotated.access_token]) {
      expect(await introspect(client, accessToken)).toEqual({ active: false });
      expect(await apiStatus(accessToken)).toBe(401);
    }
    expect(await introspect(client, rotated.refresh_token ?? '')).toEqual({ active: false });
  });

  it('revokes a refresh token, refuses a JWT access token as unsupported_token_type, with both caching headers', async () => {
    const client = await application('Revoke');
    const { tokens } = await signInByPost(client);
    const refused = await oauth.revocationRequest(as, rp(client), basic(client), tokens.access_token, insecure);
    expectNoStore(refused);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'unsupported_token_type' });
    const revoked = await oauth.revocationRequest(as, rp(client), basic(client), tokens.refresh_token ?? '', insecure);
    expectNoStore(revoked);
    await oauth.processRevocationResponse(revoked);
    expect(await introspect(client, tokens.refresh_token ?? '')).toEqual({ active: false });
  });

  it('answers active: false once the user is deactivated', async () => {
    const email = `leaving-${dialect}@example.com`;
    const userId = await registerUser(server, email, PASSWORD);
    await seedMembership(server.database.db, { userId, organizationId: admin.organizationId });
    const client = await application('Deactivation');
    const { tokens } = await signInByPost(client, { email, password: PASSWORD });
    expect(await introspect(client, tokens.access_token)).toMatchObject({ active: true, sub: userId });
    const deactivated = await server.fetch(`/v1/identity/users/${userId}/deactivate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await admin.token()}` },
    });
    expect(deactivated.status).toBe(200);
    expect(await introspect(client, tokens.access_token)).toEqual({ active: false });
  });

  it('answers active: false once the user is no longer a member of the token organization', async () => {
    const email = `removed-${dialect}@example.com`;
    const userId = await registerUser(server, email, PASSWORD);
    await seedMembership(server.database.db, { userId, organizationId: admin.organizationId });
    const client = await application('Membership');
    const { tokens } = await signInByPost(client, { email, password: PASSWORD });
    expect(await introspect(client, tokens.access_token)).toMatchObject({ active: true, org_id: admin.organizationId });
    const removed = await server.fetch(`/v1/identity/organizations/${admin.organizationId}/members/${userId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${await admin.token()}` },
    });
    expect(removed.status).toBe(204);
    expect(await apiStatus(tokens.access_token)).toBe(403);
    expect(await introspect(client, tokens.access_token)).toEqual({ active: false });
  });

  it('introspects a client-credentials token for its service account; caching headers on client_credentials', async () => {
    const service = await serviceAccount('Introspecting Service');
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      rp(service),
      basic(service),
      { scope: 'users.read' },
      insecure,
    );
    expectNoStore(response);
    const { access_token: token } = await oauth.processClientCredentialsResponse(as, rp(service), response);
    expect(await introspect(service, token)).toMatchObject({
      active: true,
      token_type: 'Bearer',
      client_id: service.clientId,
      sub: service.clientId,
      scope: 'users.read',
      org_id: admin.organizationId,
      iss: server.url,
      aud: server.url,
    });
    // Another organization's service account learns nothing.
    const other = await seedOrganization(server.database.db, { name: 'Other Services' });
    const registration = await server.idt.services.oidc.clients.register({ userId: null, platformAdmin: true }, other.id, {
      kind: 'service-account',
      name: 'Foreign Service',
      scopes: ['users.read'],
    });
    const foreign = { clientId: registration.client.clientId, clientSecret: registration.clientSecret, record: {} };
    expect(await introspect(foreign, token)).toEqual({ active: false });
  });

  it('answers unauthorized_client for a grant type the client is not registered for, both ways', async () => {
    const client = await application('Not A Service');
    const asApplication = await oauth.clientCredentialsGrantRequest(
      as,
      rp(client),
      post(client),
      { scope: 'users.read' },
      insecure,
    );
    expectNoStore(asApplication);
    expect(await asApplication.clone().json()).toEqual({
      error: 'unauthorized_client',
      error_description: 'This client is not registered for the client_credentials grant.',
    });
    expect(await refusal(oauth.processClientCredentialsResponse(as, rp(client), asApplication))).toEqual({
      status: 400,
      error: 'unauthorized_client',
    });

    const service = await serviceAccount('Not An Application');
    const asCode = await oauth.genericTokenEndpointRequest(
      as,
      rp(service),
      basic(service),
      'authorization_code',
      { code: 'x', redirect_uri: REDIRECT, code_verifier: 'v'.repeat(43) },
      insecure,
    );
    expectNoStore(asCode);
    expect(await refusal(oauth.processGenericTokenEndpointResponse(as, rp(service), asCode))).toEqual({
      status: 400,
      error: 'unauthorized_client',
    });
    const asRefresh = await oauth.refreshTokenGrantRequest(as, rp(service), post(service), 'some-refresh-token', insecure);
    expectNoStore(asRefresh);
    expect(await refusal(oauth.processRefreshTokenResponse(as, rp(service), asRefresh))).toEqual({
      status: 400,
      error: 'unauthorized_client',
    });
    // A grant idt does not serve at all stays unsupported_grant_type.
    const password = await oauth.genericTokenEndpointRequest(
      as,
      rp(client),
      post(client),
      'password',
      { username: admin.email, password: admin.password },
      insecure,
    );
    expectNoStore(password);
    expect(await refusal(oauth.processGenericTokenEndpointResponse(as, rp(client), password))).toEqual({
      status: 400,
      error: 'unsupported_grant_type',
    });
  });
});

describe.each(testDialects())('caching headers of the token endpoint under the auth rate limit on %s', (dialect) => {
  const LIMIT = 3;
  let server: TestIdt;
  let service: TestClient;
  beforeAll(async () => {
    server = await createTestIdt({
      dialect,
      env: { IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: String(LIMIT), IDT_RATE_LIMIT_AUTH_WINDOW_SECONDS: '60' },
    });
    send = server.send;
    const admin = await bootstrapAdmin(server);
    service = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Limited',
      scopes: ['users.read'],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('sends Cache-Control: no-store and Pragma: no-cache with the 429 problem', async () => {
    const issuer = new URL(server.url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
    const client = { client_id: service.clientId };
    const request = () =>
      oauth.clientCredentialsGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(service.clientSecret),
        { scope: 'users.read' },
        insecure,
      );
    for (let attempt = 0; attempt < LIMIT; attempt++) expectNoStore(await request());
    const refused = await request();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expectNoStore(refused);
    // A problem document (SPEC 7.5) that carries the OAuth error too; oauth4webapi reads only application/json bodies.
    expect(await refused.clone().json()).toMatchObject({ code: 'RateLimit.Exceeded', error: 'rate_limit_exceeded' });
    await expect(oauth.processClientCredentialsResponse(as, client, refused)).rejects.toMatchObject({
      code: oauth.RESPONSE_IS_NOT_JSON,
    });
  });
});
