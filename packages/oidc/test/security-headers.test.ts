import {
  Browser,
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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';
const SIGNED_OUT = 'https://rp.example.com/signed-out';

/** The directives of a content security policy, by name. */
function csp(response: { headers: Headers }): Map<string, string[]> {
  const value = response.headers.get('content-security-policy') ?? '';
  return new Map(value.split(/;\s*/).map((part) => [part.split(' ')[0] ?? '', part.split(' ').slice(1)]));
}

/** What every page idt renders on the sign-in host must carry. */
function expectLockedDownPage(page: { status: number; headers: Headers; body: string }, formAction: string[]) {
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(page.body).toContain('<html lang="en">');
  expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  expect(page.body).not.toMatch(/\son[a-z]+="/);
  const policy = csp(page);
  expect(policy.get('script-src')).toEqual(["'self'"]);
  expect(policy.get('form-action')).toEqual(formAction);
  expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
  expect(page.headers.get('x-frame-options')).toBe('DENY');
  expect(page.headers.get('cache-control')).toBe('no-store');
}

describe.each(testDialects())('security headers on %s', (dialect) => {
  let server: TestIdt;
  let admin: TestAdmin;
  let client: Awaited<ReturnType<typeof registerClient>>;
  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    admin = await bootstrapAdmin(server);
    client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Headers',
      redirectUris: [REDIRECT],
      postLogoutRedirectUris: [SIGNED_OUT],
      scopes: ['openid', 'users.read'],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('serves its own page for a logout without a session: no inline script, framing refused, forms kept home', async () => {
    const page = await new Browser({}, server.send).navigate(`${server.url}/connect/logout`);
    expect(page.status).toBe(200);
    expectLockedDownPage(page, ["'self'", server.origin]);
    expect(page.body).toContain('data-autosubmit');
    expect(page.body).toContain('/connect/assets/autosubmit.js');
    expect(page.body).not.toContain('Submitting Callback');
  });

  it('continues a logout without a session to the registered post-logout redirect, and allows only that origin', async () => {
    const browser = new Browser({}, server.send);
    const url = `${server.url}/connect/logout?client_id=${client.clientId}&post_logout_redirect_uri=${encodeURIComponent(SIGNED_OUT)}&state=s1`;
    const page = await browser.navigate(url);
    expectLockedDownPage(page, ["'self'", server.origin, 'https://rp.example.com']);
    const done = await browser.submit({ form: 'logout', follow: false });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`${SIGNED_OUT}?state=s1`);
  });

  it('shows the signed-out page after a logout without a redirect', async () => {
    const browser = new Browser({}, server.send);
    await browser.navigate(`${server.url}/connect/logout`);
    const done = await browser.submit({ form: 'logout' });
    expect(done.status).toBe(200);
    expect(done.body).toContain('You are signed out');
    expectLockedDownPage(done, ["'self'"]);
  });

  it('lets the sign-in form and the logout confirmation reach only their relying party', async () => {
    const config = await discover(server, client);
    const verifier = oidcClient.randomPKCECodeVerifier();
    const browser = new Browser({}, server.send);
    const page = await browser.navigate(
      oidcClient.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT,
        scope: 'openid users.read',
        code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      }).href,
    );
    expectLockedDownPage(page, ["'self'", server.origin, 'http://127.0.0.1:9']);

    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid users.read',
      email: admin.email,
      password: admin.password,
    });
    const tokens = await redeemCode(config, result);
    const confirm = await result.browser.navigate(
      oidcClient.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: SIGNED_OUT }).href,
    );
    expect(confirm.body).toContain('Sign out?');
    expectLockedDownPage(confirm, ["'self'", server.origin, 'https://rp.example.com']);
  });

  it('renders provider errors under the same policy', async () => {
    const page = await new Browser({}, server.send).navigate(
      `${server.url}/connect/authorize?client_id=nobody&response_type=code&scope=openid`,
    );
    expect(page.status).toBe(400);
    expectLockedDownPage(page, ["'self'"]);
  });

  it('sends no HSTS over http, and keeps credentialed API answers and errors out of caches', async () => {
    const token = await admin.token();
    const me = await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(me.headers.get('cache-control')).toBe('no-store');
    expect(me.headers.get('strict-transport-security')).toBeNull();
    const missing = await server.fetch('/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('cache-control')).toBe('no-store');
    const discovery = await server.fetch('/.well-known/openid-configuration');
    expect(discovery.headers.get('strict-transport-security')).toBeNull();
  });
});

describe('HSTS when the issuer is https', () => {
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt({ config: { issuer: 'https://id.example.test', trustProxy: true } });
  });
  afterAll(async () => {
    await server?.close();
  });

  const https = { 'x-forwarded-proto': 'https', host: 'id.example.test' };

  it('is on every answer of the node handler: API, errors (here the setup gate’s 503), provider, sign-in pages and assets', async () => {
    for (const path of [
      '/health/live',
      '/v1/nothing-here',
      '/.well-known/openid-configuration',
      '/connect/logout',
      '/connect/assets/idt.css',
    ]) {
      const response = await server.fetch(path, { headers: https });
      expect(response.headers.get('strict-transport-security'), path).toBe('max-age=31536000');
    }
  });

  it('is on every answer of the Fetch entry too', async () => {
    for (const path of ['/health/live', '/v1/nothing-here', '/.well-known/jwks.json', '/connect/logout']) {
      const response = await server.idt.fetch(new Request(`https://id.example.test${path}`));
      expect(response.headers.get('strict-transport-security'), path).toBe('max-age=31536000');
    }
  });
});
