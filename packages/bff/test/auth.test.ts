import { createBff, createBffCookies } from '@idt/bff';
import { ConfigError, createManualClock, type ManualClock } from '@idt/core';
import { Browser } from '@idt/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  authorizeThroughBff,
  bffSignIn,
  cookieHeader,
  expectBrowserProblem,
  parseSetCookie,
  sessionOf,
  startTestBff,
  startTestProvider,
  TEST_BFF_SCOPES,
  TEST_COOKIE_PASSWORD,
  type TestBff,
  type TestProvider,
  throughProvider,
} from './support.js';

describe('BFF sign-in over HTTP against the reference provider', () => {
  let provider: TestProvider;
  let bff: TestBff;
  let clock: ManualClock;
  beforeAll(async () => {
    provider = await startTestProvider();
    clock = createManualClock();
    bff = await startTestBff(provider, { clock });
  });
  afterAll(async () => {
    await bff?.close();
    await provider?.close();
  });
  beforeEach(() => {
    clock.set(Date.now());
  });

  const get = (browser: Browser, path: string, headers: Record<string, string> = {}) =>
    browser.request(`${bff.url}${path}`, { headers });
  const post = (browser: Browser, path: string, headers: Record<string, string> = {}) =>
    browser.request(`${bff.url}${path}`, { method: 'POST', headers });

  it('redirects /bff/login to the authorization endpoint with state, nonce and PKCE S256, and sets the transaction cookie', async () => {
    const browser = new Browser();
    const organization = '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const login = await get(browser, `/bff/login?returnTo=%2Forders&organization=${organization}&prompt=login`);
    expect(login.status).toBe(302);
    expect(login.headers.get('cache-control')).toBe('no-store');
    const location = new URL(login.headers.get('location') ?? '');
    expect(`${location.origin}${location.pathname}`).toBe(`${provider.server.url}/connect/authorize`);
    const params = Object.fromEntries(location.searchParams);
    expect(params).toMatchObject({
      client_id: bff.client.clientId,
      response_type: 'code',
      redirect_uri: `${bff.url}/bff/callback`,
      scope: TEST_BFF_SCOPES.join(' '),
      code_challenge_method: 'S256',
      organization,
      prompt: 'login',
    });
    // 22 random characters (they name the cookie), then where and when the sign-in started, under a MAC.
    expect(params.state).toMatch(/^[\w-]{22}\.[\w-]+\.[\w-]{43}$/);
    expect(params.nonce).toMatch(/^[\w-]{20,}$/);
    expect(params.code_challenge).toMatch(/^[\w-]{43}$/);
    expect(params).not.toHaveProperty('response_mode');
    const [tx] = login.headers.getSetCookie().map(parseSetCookie);
    expect(tx?.name).toBe(`__Host-idt_bff_tx_${params.state?.slice(0, 16)}`);
    expect(Object.fromEntries(tx?.attributes ?? [])).toEqual({
      path: '/',
      'max-age': '600',
      httponly: '',
      secure: '',
      samesite: 'Lax',
    });
    // The verifier stays in the sealed cookie; only its challenge leaves.
    const transaction = await createBffCookies(bff.config, clock).readTransaction(
      new Headers({ cookie: `${tx?.name}=${tx?.value}` }),
      params.state ?? null,
    );
    expect(transaction).toMatchObject({ state: params.state, nonce: params.nonce, returnTo: '/orders', organization });
    expect(location.href).not.toContain(transaction?.codeVerifier);

    const odd = await get(new Browser(), '/bff/login?organization=not-a-guid&prompt=bogus');
    const oddParams = new URL(odd.headers.get('location') ?? '').searchParams;
    expect(oddParams.has('organization')).toBe(false);
    expect(oddParams.has('prompt')).toBe(false);
  });

  it('signs in, shows the user without any token, and logs out only with the CSRF token', async () => {
    const { browser, callback } = await bffSignIn(bff, provider, { returnTo: '/dashboard?tab=1#top' });
    expect(callback.status).toBe(302);
    expect(callback.headers.get('location')).toBe('/dashboard?tab=1#top');
    const cookies = callback.headers.getSetCookie().map(parseSetCookie);
    const sessionCookie = cookies.find((cookie) => cookie.name === '__Host-idt_bff');
    expect(Object.fromEntries(sessionCookie?.attributes ?? [])).toEqual({
      path: '/',
      'max-age': '86400',
      httponly: '',
      secure: '',
      samesite: 'Strict',
    });
    expect(cookies.find((cookie) => cookie.name.startsWith('__Host-idt_bff_tx_'))?.attributes.get('max-age')).toBe('0');

    const session = await sessionOf(browser, bff);
    const user = await get(browser, '/bff/user');
    expect(user.status).toBe(200);
    expect(user.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(user.body)).toEqual({
      sub: provider.admin.userId,
      name: 'Ada Admin',
      email: provider.admin.email,
      orgId: provider.admin.organizationId,
      orgName: 'Platform',
      roles: ['owner'],
      sid: session.sid,
      sessionExpiresAt: new Date(clock.now().getTime() + 86_400_000).toISOString(),
      csrfToken: session.csrfToken,
    });
    expect(session.sid).toMatch(/.+/);
    for (const token of [session.accessToken, session.refreshToken, session.idToken]) {
      expect(token).toBeTruthy();
      expect(user.body).not.toContain(token);
    }
    expect(user.body).not.toMatch(/eyJ/);

    // The API behind the BFF answers with the session's access token.
    const me = await get(browser, '/api/v1/identity/users/me');
    expect(me.status).toBe(200);
    expect(JSON.parse(me.body)).toMatchObject({ id: provider.admin.userId });

    const missing = await post(browser, '/bff/logout');
    expectBrowserProblem(missing, 403, 'Bff.CsrfInvalid');
    expect(missing.headers.getSetCookie()).toEqual([]);
    const wrong = await post(browser, '/bff/logout', { 'x-csrf-token': `${session.csrfToken}x` });
    expect(wrong.status).toBe(403);
    expect((await get(browser, '/bff/user')).status).toBe(200);

    const logout = await post(browser, '/bff/logout', { 'x-csrf-token': session.csrfToken });
    expect(logout.status).toBe(200);
    expect(logout.headers.get('cache-control')).toBe('no-store');
    const { logoutUrl } = JSON.parse(logout.body) as { logoutUrl: string };
    const url = new URL(logoutUrl);
    expect(`${url.origin}${url.pathname}`).toBe(`${provider.server.url}/connect/logout`);
    expect(url.searchParams.get('id_token_hint')).toBe(session.idToken);
    expect(url.searchParams.get('post_logout_redirect_uri')).toBe(`${bff.url}/`);
    expect(logout.headers.getSetCookie().map(parseSetCookie)).toEqual([
      expect.objectContaining({ name: '__Host-idt_bff', value: '' }),
    ]);
    expect(await bff.bff.store.read(session.id, clock.now().getTime())).toBeUndefined();
    const after = await get(browser, '/bff/user');
    expectBrowserProblem(after, 401, 'Bff.SessionMissing');

    // Logging out again: nothing to end, the cookies are cleared anyway.
    const again = await post(new Browser(), '/bff/logout');
    expect(again.status).toBe(204);
    expect(again.headers.getSetCookie().map((cookie) => parseSetCookie(cookie).name)).toEqual(['__Host-idt_bff']);
    const wrongMethod = await get(browser, '/bff/logout');
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');

    // The refresh token was revoked at the provider too (in the background).
    await vi.waitFor(async () => {
      const refresh = await provider.server.fetch('/connect/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: session.refreshToken ?? '',
          client_id: bff.client.clientId,
          client_secret: bff.client.clientSecret,
        }).toString(),
      });
      expect(refresh.status).toBe(400);
    });
  });

  it('answers /bff/user with 401 Bff.SessionMissing without a session, in-process too', async () => {
    const response = await bff.bff.fetch(new Request(`${bff.url}/bff/user`));
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.json()).toMatchObject({ code: 'Bff.SessionMissing', status: 401, type: 'about:blank' });
    const unknown = await bff.bff.fetch(new Request(`${bff.url}/bff/nothing`));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 'Http.NotFound' });
  });

  it('replaces any return path that leaves the origin with /', async () => {
    const cookies = createBffCookies(bff.config, clock);
    const returnToOf = async (value: string) => {
      const login = await bff.bff.fetch(new Request(`${bff.url}/bff/login?returnTo=${encodeURIComponent(value)}`));
      const { name, value: sealed } = parseSetCookie(login.headers.getSetCookie()[0] ?? '');
      const state = new URL(login.headers.get('location') ?? '').searchParams.get('state');
      return (await cookies.readTransaction(new Headers({ cookie: `${name}=${sealed}` }), state))?.returnTo;
    };
    for (const evil of [
      '//evil.com',
      '//evil.com/path',
      'https://evil.com',
      'http:evil.com',
      '/\\evil.com',
      '\\/evil.com',
      '/\\/evil.com',
      'javascript:alert(1)',
      '/\tevil',
      '/ok\r\nSet-Cookie: x=1',
      'evil.com',
      '',
    ]) {
      expect([evil, await returnToOf(evil)]).toEqual([evil, '/']);
    }
    expect(await returnToOf('/orders/7?tab=items#top')).toBe('/orders/7?tab=items#top');
    expect(await returnToOf('/a/../b')).toBe('/b');

    const { callback } = await bffSignIn(bff, provider, { returnTo: '//evil.com' });
    expect(callback.headers.get('location')).toBe('/');
  });

  it('refuses a callback without a transaction, with another state, posted as form_post or loaded in a frame', async () => {
    const noTx = await get(new Browser(), '/bff/callback?code=abc&state=xyz');
    expectBrowserProblem(noTx, 400, 'Bff.LoginTransactionInvalid');

    const browser = new Browser();
    const callbackUrl = await authorizeThroughBff(bff, provider, browser);
    const state = new URL(callbackUrl).searchParams.get('state') ?? '';
    // Another sign-in's state finds no transaction and leaves this one alone.
    const otherState = new URL(callbackUrl);
    otherState.searchParams.set('state', 'another-sign-in-state-0000');
    const other = await browser.request(otherState.href);
    expectBrowserProblem(other, 400, 'Bff.LoginTransactionInvalid');
    expect(other.headers.getSetCookie().filter((value) => value.includes(state.slice(0, 16)))).toEqual([]);
    // A state that names this transaction's cookie but is not its state fails, and spends the transaction.
    const wrongState = new URL(callbackUrl);
    wrongState.searchParams.set('state', `${state.slice(0, 16)}tampered`);
    const mismatch = await browser.request(wrongState.href);
    expectBrowserProblem(mismatch, 400, 'Bff.LoginTransactionInvalid');
    expect(parseSetCookie(mismatch.headers.getSetCookie()[0] ?? '')).toMatchObject({
      name: `__Host-idt_bff_tx_${state.slice(0, 16)}`,
      value: '',
    });
    // The transaction is spent: the real callback is refused too.
    expect((await browser.request(callbackUrl)).status).toBe(400);

    const framed = new Browser();
    const framedUrl = await authorizeThroughBff(bff, provider, framed);
    const inFrame = await framed.request(framedUrl, { headers: { 'sec-fetch-dest': 'iframe' } });
    expectBrowserProblem(inFrame, 400, 'Bff.LoginTransactionInvalid');

    const posted = new Browser();
    const postedUrl = new URL(await authorizeThroughBff(bff, provider, posted));
    const formPost = await posted.request(`${bff.url}/bff/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: postedUrl.searchParams.toString(),
    });
    expectBrowserProblem(formPost, 400, 'Bff.LoginTransactionInvalid');
    expect(posted.cookies(bff.url).has('__Host-idt_bff')).toBe(false);

    const replay = new Browser();
    const { callbackUrl: used } = await bffSignIn(bff, provider, { browser: replay });
    expect((await replay.request(used)).status).toBe(400);
  });

  it('sends a provider error back to the return path', async () => {
    const browser = new Browser();
    const login = await get(browser, '/bff/login?returnTo=%2Fwelcome%3Fx%3D1');
    const state = new URL(login.headers.get('location') ?? '').searchParams.get('state') ?? '';
    const denied = await get(
      browser,
      `/bff/callback?error=access_denied&error_description=membership_pending&state=${encodeURIComponent(state)}`,
    );
    expect(denied.status).toBe(302);
    expect(denied.headers.get('location')).toBe('/welcome?x=1&error=access_denied&error_description=membership_pending');
    expect([...browser.cookies(bff.url).keys()].filter((name) => name.startsWith('__Host-idt_bff_tx'))).toEqual([]);
  });

  it('lets two tabs that start signing in together both finish (one transaction cookie per sign-in)', async () => {
    const browser = new Browser();
    const loginA = await get(browser, '/bff/login?returnTo=%2Fa');
    const loginB = await get(browser, '/bff/login?returnTo=%2Fb');
    const pending = [...browser.cookies(bff.url).keys()].filter((name) => name.startsWith('__Host-idt_bff_tx_'));
    expect(pending).toHaveLength(2);
    const callbackA = await throughProvider(bff, provider, browser, loginA.headers.get('location') ?? '');
    const callbackB = await throughProvider(bff, provider, browser, loginB.headers.get('location') ?? '');
    const b = await browser.request(callbackB);
    expect([b.status, b.headers.get('location')]).toEqual([302, '/b']);
    const a = await browser.request(callbackA);
    expect([a.status, a.headers.get('location')]).toEqual([302, '/a']);
    expect([...browser.cookies(bff.url).keys()].filter((name) => name.startsWith('__Host-idt_bff_tx_'))).toEqual([]);
    expect((await sessionOf(browser, bff)).user.sub).toBe(provider.admin.userId);
  });

  it('replaces the session a browser already had when it signs in again', async () => {
    const { browser } = await bffSignIn(bff, provider);
    const first = await sessionOf(browser, bff);
    await bffSignIn(bff, provider, { browser });
    const second = await sessionOf(browser, bff);
    expect(second.id).not.toBe(first.id);
    expect(await bff.bff.store.read(first.id, clock.now().getTime())).toBeUndefined();
    expect(cookieHeader(browser, bff)).toContain('__Host-idt_bff=');
  });

  it('refuses to start when the provider advertises another issuer, naming OIDC_ISSUER', async () => {
    const env = {
      OIDC_ISSUER: `${provider.server.url}/`,
      OIDC_CLIENT_ID: bff.client.clientId,
      OIDC_CLIENT_SECRET: bff.client.clientSecret,
      OIDC_REDIRECT_URI: `${bff.url}/bff/callback`,
      BFF_API_BASE_URL: provider.server.url,
      COOKIE_PASSWORD: TEST_COOKIE_PASSWORD,
    };
    const failure = await createBff({ env }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as ConfigError).problems).toEqual([
      `OIDC_ISSUER: is "${provider.server.url}/" but the provider at ${provider.server.url}/.well-known/openid-configuration advertises "${provider.server.url}"; set OIDC_ISSUER to exactly the advertised issuer (path prefix included)`,
    ]);
    await expect(createBff({ env: { ...env, OIDC_ISSUER: 'http://127.0.0.1:9' } })).rejects.toThrow(
      /could not read the identity provider's discovery document at http:\/\/127\.0\.0\.1:9/,
    );
  });

  it('reads discovery from OIDC_METADATA_URL and sends server-to-server calls there (split horizon)', async () => {
    const internal = provider.server.url.replace('127.0.0.1', 'localhost');
    const seen: string[] = [];
    const recording = ((input: string | URL | Request, init?: RequestInit) => {
      seen.push(input instanceof Request ? input.url : String(input));
      return fetch(input, init);
    }) as typeof fetch;
    const split = await createBff({
      env: {
        OIDC_ISSUER: provider.server.url,
        OIDC_METADATA_URL: `${internal}/.well-known/openid-configuration`,
        OIDC_CLIENT_ID: bff.client.clientId,
        OIDC_CLIENT_SECRET: bff.client.clientSecret,
        OIDC_REDIRECT_URI: `${bff.url}/bff/callback`,
        BFF_API_BASE_URL: provider.server.url,
        COOKIE_PASSWORD: TEST_COOKIE_PASSWORD,
      },
      fetch: recording,
    });
    // The browser still goes to the public authorization endpoint.
    const login = await split.fetch(new Request(`${bff.url}/bff/login`));
    expect(login.headers.get('location')).toMatch(new RegExp(`^${provider.server.url}/connect/authorize\\?`));
    // A back-channel logout token makes the BFF fetch the JWKS: from the internal address.
    await split.fetch(
      new Request(`${bff.url}/bff/backchannel-logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'logout_token=eyJhbGciOiJSUzI1NiIsImtpZCI6Im5vbmUiLCJ0eXAiOiJsb2dvdXQrand0In0.e30.c2ln',
      }),
    );
    expect(seen[0]).toBe(`${internal}/.well-known/openid-configuration`);
    expect(seen.some((url) => url.startsWith(`${internal}/.well-known/jwks.json`))).toBe(true);
    expect(seen.every((url) => url.startsWith(internal))).toBe(true);
    await split.close();
  });
});
