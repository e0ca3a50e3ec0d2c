import { createManualClock, type ManualClock } from '@idt/core';
import {
  Browser,
  bootstrapAdmin,
  createTestIdt,
  discover,
  oidcClient,
  redeemCode,
  registerClient,
  seedOrganization,
  signIn,
  type TestAdmin,
  type TestClient,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';
const RIGHT = 'correct horse battery staple';
const WRONG = 'not the password at all';

/** A client_secret_post token request: the client names itself in the form body. */
function clientCredentials(server: TestIdt, client: TestClient, headers: Record<string, string> = {}) {
  return server.fetch('/connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      scope: 'users.read',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }).toString(),
  });
}

/** Registers a client on an organization through the clients service (as a platform administrator would). */
async function clientOf(server: TestIdt, organizationId: string, input: Record<string, unknown>): Promise<TestClient> {
  const registration = await server.idt.services.oidc.clients.register(
    { userId: null, platformAdmin: true },
    organizationId,
    input,
  );
  return { clientId: registration.client.clientId, clientSecret: registration.clientSecret, record: {} };
}

describe.each(testDialects())('sign-in and client lockouts on %s', (dialect) => {
  // The lockout windows read this clock; it starts on a whole second, as oidc-provider's own timestamps do.
  const clock: ManualClock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  let server: TestIdt;
  let admin: TestAdmin;
  let client: TestClient;
  let config: oidcClient.Configuration;
  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    admin = await bootstrapAdmin(server);
    client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Lockout App',
      redirectUris: [REDIRECT],
      scopes: ['openid', 'email'],
    });
    config = await discover(server, client);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Opens the sign-in page of a new authorization request in a new browser. */
  async function openSignIn() {
    const browser = new Browser({}, server.send);
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(oidcClient.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: 'state-1',
    });
    const page = await browser.navigate(url.href);
    expect(page.body).toContain('/login"');
    return browser;
  }

  const password = (browser: Browser, given: string) =>
    browser.submit({ form: '/login', fields: { email: admin.email, password: given } });

  /** A finished sign-in: the browser left for the client with a code. */
  const signedIn = (response: { status: number; url: string }) =>
    response.status >= 300 && response.status < 400 && new URL(response.url).searchParams.has('code');

  it('lets 20 correct sign-ins in a row succeed, locks after 10 wrong passwords, and lifts the lock after 15 minutes', async () => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const result = await signIn(config, { redirectUri: REDIRECT, scope: 'openid email', email: admin.email, password: RIGHT });
      expect(result.callback.searchParams.get('error')).toBeNull();
      if (attempt === 19) expect((await redeemCode(config, result)).claims()?.sub).toBe(admin.userId);
    }

    const browser = await openSignIn();
    for (let attempt = 0; attempt < 10; attempt++) expect((await password(browser, WRONG)).status).toBe(400);
    const locked = await password(browser, RIGHT);
    expect(locked.status).toBe(429);
    expect(locked.body).toContain('Too many failed attempts for this address. Wait 15 minutes');
    // Refused without counting: the window still holds ten failures.
    expect((await password(browser, RIGHT)).status).toBe(429);
    const row = await server.database.db('core_rate_limit_counters').where('key', `sign-in:${admin.email}`).first();
    expect(Number(row.count)).toBe(10);

    clock.advance(15 * 60_000 - 1);
    expect((await password(browser, RIGHT)).status).toBe(429);
    clock.advance(1);
    expect(signedIn(await password(browser, RIGHT))).toBe(true);
  });

  it('forgets the failures of an address on a correct sign-in: 9 wrong, 1 right, 9 wrong does not lock', async () => {
    const first = await openSignIn();
    for (let attempt = 0; attempt < 9; attempt++) expect((await password(first, WRONG)).status).toBe(400);
    expect(signedIn(await password(first, RIGHT))).toBe(true);
    const second = await openSignIn();
    for (let attempt = 0; attempt < 9; attempt++) expect((await password(second, WRONG)).status).toBe(400);
    expect(signedIn(await password(second, RIGHT))).toBe(true);
    expect(await server.database.db('core_rate_limit_counters').where('key', `sign-in:${admin.email}`)).toEqual([]);
  });

  it('forgets the failures of a client on a successful authentication: 4 + 1 + 4 does not lock, 5 do', async () => {
    const service = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Lockout Service',
      scopes: ['users.read'],
    });
    const wrong = { ...service, clientSecret: 'wrong' };
    const failures = async (count: number) => {
      for (let attempt = 0; attempt < count; attempt++) expect((await clientCredentials(server, wrong)).status).toBe(401);
    };
    await failures(4);
    expect((await clientCredentials(server, service)).status).toBe(200);
    await failures(4);
    expect(server.idt.services.oidc.lockout.isLocked(service.clientId)).toBe(false);
    expect((await clientCredentials(server, service)).status).toBe(200);

    await failures(5);
    expect(server.idt.services.oidc.lockout.isLocked(service.clientId)).toBe(true);
    const refused = await clientCredentials(server, service);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: 'invalid_client' });
    clock.advance(5 * 60_000);
    expect((await clientCredentials(server, service)).status).toBe(200);
  });
});

describe.each(testDialects())('the auth rate limit of the provider endpoints on %s', (dialect) => {
  const AUTH_LIMIT = 30;
  const clock: ManualClock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt({
      dialect,
      clock,
      env: { IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: String(AUTH_LIMIT), IDT_RATE_LIMIT_AUTH_WINDOW_SECONDS: '60' },
    });
    await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function expectRefusal(response: Response, traceId?: string) {
    expect(response.status).toBe(429);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
    const retryAfter = Number(response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: `Too many requests; retry in ${retryAfter} seconds.`,
      code: 'RateLimit.Exceeded',
      traceId: traceId ?? expect.stringMatching(/^[0-9a-f]{32}$/),
      error: 'rate_limit_exceeded',
      error_description: `Too many requests; retry in ${retryAfter} seconds.`,
    });
  }

  it('counts client_secret_post token requests for the client organization, not the shared address', async () => {
    const a = await seedOrganization(server.database.db, { name: 'Alpha' });
    const b = await seedOrganization(server.database.db, { name: 'Beta' });
    const service = { kind: 'service-account', name: 'Reporting', scopes: ['users.read'] };
    const alpha = await clientOf(server, a.id, service);
    const alphaOther = await clientOf(server, a.id, { ...service, name: 'Exports' });
    const beta = await clientOf(server, b.id, service);

    for (let request = 0; request < AUTH_LIMIT; request++) {
      expect((await clientCredentials(server, alpha)).status).toBe(200);
      if (request % 10 === 0) expect((await clientCredentials(server, beta)).status).toBe(200);
    }
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await expectRefusal(await clientCredentials(server, alpha, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` }), traceId);
    // The same organization's window, whatever the client and the authentication method.
    await expectRefusal(await clientCredentials(server, alphaOther));
    const basic = `Basic ${Buffer.from(`${alpha.clientId}:${alpha.clientSecret}`).toString('base64')}`;
    await expectRefusal(
      await server.fetch('/connect/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
        body: 'grant_type=client_credentials&scope=users.read',
      }),
    );
    for (const endpoint of ['/connect/revoke', '/connect/introspect']) {
      await expectRefusal(
        await server.fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: 'x', client_id: alpha.clientId, client_secret: alpha.clientSecret }).toString(),
        }),
      );
    }
    // Organization B, from the same address, keeps its own window.
    for (let request = 0; request < 3; request++) expect((await clientCredentials(server, beta)).status).toBe(200);

    clock.advance(60_000);
    expect((await clientCredentials(server, alpha)).status).toBe(200);
  });

  it('counts authorization requests for the organization of their client_id', async () => {
    const c = await seedOrganization(server.database.db, { name: 'Gamma' });
    const d = await seedOrganization(server.database.db, { name: 'Delta' });
    const app = { kind: 'application', name: 'Portal', redirectUris: [REDIRECT], scopes: ['openid'] };
    const gamma = await clientOf(server, c.id, app);
    const delta = await clientOf(server, d.id, app);
    const params = (clientId: string) =>
      new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        state: 'state-1',
      });
    const authorize = (clientId: string) => server.fetch(`/connect/authorize?${params(clientId)}`, { redirect: 'manual' });

    for (let request = 0; request < AUTH_LIMIT; request++) {
      expect((await authorize(gamma.clientId)).status).toBe(303);
      if (request % 10 === 0) expect((await authorize(delta.clientId)).status).toBe(303);
    }
    await expectRefusal(await authorize(gamma.clientId));
    await expectRefusal(
      await server.fetch('/connect/authorize', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: params(gamma.clientId).toString(),
        redirect: 'manual',
      }),
    );
    expect((await authorize(delta.clientId)).status).toBe(303);
    // An id that names no client counts for the caller's address, which has its own window.
    expect((await authorize('no-such-client')).status).not.toBe(429);
  });
});
