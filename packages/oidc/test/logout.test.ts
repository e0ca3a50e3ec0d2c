import { createPublicKey, verify } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Browser,
  bootstrapAdmin,
  discover,
  oidcClient,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  registerUser,
  seedMembership,
  signIn,
  startTestServer,
  type TestAdmin,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/**
 * Back-channel delivery limits small enough that the slow-receiver case takes
 * well under a second: 250 ms per attempt, one retry 150 ms later, within a 3 s
 * budget (left wide, so that a loaded machine still gets its retry in).
 */
const LIMITS = { perClientTimeoutMs: 250, retryDelayMs: 150, overallTimeoutMs: 3000 } as const;

const REDIRECT = 'http://127.0.0.1:9/callback';
const SIGNED_OUT = 'http://127.0.0.1:9/signed-out';

interface Receiver {
  readonly url: string;
  readonly received: Array<{ at: number; token: string }>;
  /** Per-request behaviour: `ok`, `fail` (500) or `slow` (never answers: the notifier's per-attempt timeout gives up). */
  plan: Array<'ok' | 'fail' | 'slow'>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const receiver = { received, plan: [] as Receiver['plan'] } as Receiver & { server: Server };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      received.push({ at: Date.now(), token: new URLSearchParams(body).get('logout_token') ?? '' });
      const behaviour = receiver.plan.shift() ?? 'ok';
      if (behaviour === 'fail') {
        res.writeHead(500).end();
      } else if (behaviour === 'slow') {
        // No answer; the connection is dropped by the notifier's timeout or by close().
      } else {
        res.writeHead(200).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/backchannel`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

/** Polls until `check` answers: back-channel logout reaches the receiver over HTTP, from the event bus in the background. */
async function waitFor<T>(check: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    // Real I/O: the next look at the receiver, which an asynchronous delivery reaches.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Resolves once no back-channel logout delivery is pending (each handler run has finished: delivered or given up). */
async function backchannelSettled(server: TestServer): Promise<void> {
  await vi.waitFor(
    async () => {
      const pending = await server.database
        .db('core_outbox_deliveries')
        .where({ handler: 'oidc.backchannel-logout' })
        .whereNot({ status: 'delivered' });
      expect(pending).toEqual([]);
    },
    { timeout: 15_000, interval: 25 },
  );
}

function parts(token: string) {
  const [h = '', p = '', s = ''] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(p, 'base64url').toString()),
    data: Buffer.from(`${h}.${p}`),
    signature: Buffer.from(s, 'base64url'),
  };
}

describe.each(testDialects())('logout on %s', (dialect) => {
  let server: TestServer;
  let admin: TestAdmin;
  let receiver: Receiver;
  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' },
      modules: { oidc: { backchannelLimits: LIMITS } },
    });
    admin = await bootstrapAdmin(server);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  async function appWithLogout(extra: Record<string, unknown> = {}) {
    return registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: `Logout ${Math.random().toString(36).slice(2, 8)}`,
      redirectUris: [REDIRECT],
      postLogoutRedirectUris: [SIGNED_OUT],
      backchannelLogoutUri: receiver.url,
      frontchannelLogoutUri: 'https://rp.example.com/frontchannel-logout',
      scopes: ['openid', 'offline_access', 'users.read'],
      ...extra,
    });
  }

  async function login(
    client: Awaited<ReturnType<typeof appWithLogout>>,
    browser?: Browser,
    email = admin.email,
    password = admin.password,
  ) {
    const config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid offline_access users.read',
      email,
      password,
      ...(browser ? { browser } : {}),
    });
    const tokens = await redeemCode(config, result);
    return { config, tokens, browser: result.browser };
  }

  it('ends the session everywhere: front-channel page, back-channel token, refresh and access refused', async () => {
    const client = await appWithLogout();
    const { config, tokens, browser } = await login(client);
    const sid = tokens.claims()?.sid as string;
    const before = receiver.received.length;
    const url = oidcClient.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token ?? '',
      post_logout_redirect_uri: SIGNED_OUT,
      state: 'bye',
    });
    const confirm = await browser.navigate(url.href);
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('data-autosubmit');
    expect(confirm.body).not.toMatch(/<script>(?!<\/script>)/);
    expect(confirm.headers.get('content-security-policy')).toContain("script-src 'self'");
    const interstitial = await browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    expect(interstitial.status).toBe(200);
    const frame = /<iframe src="([^"]+)"/.exec(interstitial.body)?.[1]?.replace(/&amp;/g, '&') ?? '';
    const frameUrl = new URL(frame);
    expect(frameUrl.origin + frameUrl.pathname).toBe('https://rp.example.com/frontchannel-logout');
    expect(frameUrl.searchParams.get('iss')).toBe(server.url);
    expect(frameUrl.searchParams.get('sid')).toBe(sid);
    expect(interstitial.body).toContain(`${SIGNED_OUT}?state=bye`);
    expect(interstitial.headers.get('content-security-policy')).toContain('frame-src https://rp.example.com');

    const delivery = await waitFor(() => receiver.received.length > before && receiver.received[before]);
    const logoutToken = parts(delivery.token);
    expect(logoutToken.header).toMatchObject({ typ: 'logout+jwt', alg: 'RS256' });
    expect(logoutToken.payload).toMatchObject({
      iss: server.url,
      aud: client.clientId,
      sub: admin.userId,
      sid,
      events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
    });
    expect(logoutToken.payload).not.toHaveProperty('nonce');
    expect(typeof logoutToken.payload.iat).toBe('number');
    const jwks = (await (await server.fetch('/.well-known/jwks.json')).json()) as { keys: Array<{ kid: string }> };
    const jwk = jwks.keys.find((key) => key.kid === logoutToken.header.kid);
    expect(verify('sha256', logoutToken.data, createPublicKey({ key: jwk as never, format: 'jwk' }), logoutToken.signature)).toBe(
      true,
    );

    const refreshed = await refreshTokenRequest(server, client, tokens.refresh_token ?? '');
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' });
    const api = await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(api.status).toBe(401);
    expect(api.headers.get('www-authenticate')).toMatch(/invalid_token/);
    const session = await server.database.db('identity_sessions').where({ id: sid }).first();
    expect(session.revoked_at).toBeTruthy();
  });

  it('takes RP-initiated logout by a form POST as by GET (RP-Initiated Logout 1.0 section 2)', async () => {
    const client = await appWithLogout();
    const { config, tokens, browser } = await login(client);
    const sid = tokens.claims()?.sid as string;
    const endpoint = oidcClient.buildEndSessionUrl(config, {});
    const form = new URLSearchParams({
      id_token_hint: tokens.id_token ?? '',
      post_logout_redirect_uri: SIGNED_OUT,
      state: 'posted',
    });
    const confirm = await browser.request(`${endpoint.origin}${endpoint.pathname}?state=ignored`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('data-autosubmit');
    const interstitial = await browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    expect(interstitial.status).toBe(200);
    expect(interstitial.body).toContain(`${SIGNED_OUT}?state=posted`);
    const session = await server.database.db('identity_sessions').where({ id: sid }).first();
    expect(session.revoked_at).toBeTruthy();

    const unsafe = await browser.request(`${endpoint.origin}${endpoint.pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'state=a%00b',
    });
    expect(unsafe.status).toBe(400);
  });

  it('retries a failing receiver once after the retry delay', async () => {
    const client = await appWithLogout({ frontchannelLogoutUri: null });
    const { config, tokens, browser } = await login(client);
    const before = receiver.received.length;
    receiver.plan = ['fail', 'ok'];
    await browser.navigate(oidcClient.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '' }).href);
    await browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    await waitFor(() => receiver.received.length >= before + 2);
    const [first, second] = receiver.received.slice(before);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(LIMITS.retryDelayMs - 10);
    expect(first?.token).toBe(second?.token);
    await backchannelSettled(server);
    expect(receiver.received.length).toBe(before + 2);
  });

  it('gives up on a slow receiver after one retry, within the overall budget', async () => {
    const client = await appWithLogout({ frontchannelLogoutUri: null });
    const { config, tokens, browser } = await login(client);
    const before = receiver.received.length;
    receiver.plan = ['slow', 'slow', 'ok'];
    await browser.navigate(oidcClient.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '' }).href);
    await browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    await waitFor(() => receiver.received.length >= before + 2);
    // The handler has returned: the notifier gave up, and no third attempt can come.
    await backchannelSettled(server);
    const attempts = receiver.received.slice(before);
    expect(attempts).toHaveLength(2);
    expect(receiver.plan).toEqual(['ok']);
    // The second attempt follows the first one's timeout and the retry delay, and starts within the budget.
    const gap = (attempts[1]?.at ?? 0) - (attempts[0]?.at ?? 0);
    expect(gap).toBeGreaterThanOrEqual(LIMITS.perClientTimeoutMs + LIMITS.retryDelayMs - 50);
    expect(gap).toBeLessThan(LIMITS.overallTimeoutMs);
    receiver.plan = [];
  });

  it('ends the single sign-on session when the session is revoked through the API, and notifies', async () => {
    const client = await appWithLogout({ frontchannelLogoutUri: null });
    const { tokens, browser, config } = await login(client);
    const sid = tokens.claims()?.sid as string;
    const before = receiver.received.length;
    const revoked = await server.fetch(`/v1/identity/sessions/${sid}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(revoked.status).toBe(204);
    const delivery = await waitFor(() => receiver.received.length > before && receiver.received[before]);
    expect(parts(delivery.token).payload.sid).toBe(sid);
    expect(
      (await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${tokens.access_token}` } })).status,
    ).toBe(401);
    // The browser's single sign-on session is gone: authorizing again asks for the password.
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(oidcClient.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: 's',
    });
    const page = await browser.navigate(url.href);
    expect(page.status).toBe(200);
    expect(page.body).toContain('/login"');
  });

  it('revokes the oldest session on the sixth sign-in and notifies its clients', async () => {
    const email = `six-${dialect}@example.com`;
    const password = 'correct horse battery staple';
    const userId = await registerUser(server, email, password);
    await seedMembership(server.database.db, { userId, organizationId: admin.organizationId });
    const client = await appWithLogout({ frontchannelLogoutUri: null });
    const logins = [];
    for (let index = 0; index < 5; index++) logins.push(await login(client, new Browser(), email, password));
    const oldest = logins[0];
    const oldestSid = oldest?.tokens.claims()?.sid as string;
    const before = receiver.received.length;
    const sixth = await login(client, new Browser(), email, password);
    expect(sixth.tokens.claims()?.sid).not.toBe(oldestSid);
    const delivery = await waitFor(() =>
      receiver.received.slice(before).find((entry) => parts(entry.token).payload.sid === oldestSid),
    );
    expect(parts(delivery.token).payload.sub).toBeTruthy();
    const active = await server.database
      .db('identity_sessions')
      .where({ user_id: parts(delivery.token).payload.sub })
      .whereNull('revoked_at');
    expect(active).toHaveLength(5);
    const evicted = await server.database.db('identity_sessions').where({ id: oldestSid }).first();
    expect(evicted.revoked_reason).toBe('evicted');
    expect(
      (await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${oldest?.tokens.access_token}` } }))
        .status,
    ).toBe(401);
    expect(
      (await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${sixth.tokens.access_token}` } })).status,
    ).toBe(200);
  });
  it('ends every session and refresh token of a deactivated user, and notifies', async () => {
    const email = `deactivated-${dialect}@example.com`;
    const password = 'correct horse battery staple';
    const userId = await registerUser(server, email, password);
    await seedMembership(server.database.db, { userId, organizationId: admin.organizationId });
    const client = await appWithLogout({ frontchannelLogoutUri: null });
    const { tokens } = await login(client, new Browser(), email, password);
    const sid = tokens.claims()?.sid as string;
    const before = receiver.received.length;
    const deactivated = await server.fetch(`/v1/identity/users/${userId}/deactivate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await admin.token()}` },
    });
    expect(deactivated.status).toBe(200);
    const delivery = await waitFor(() =>
      receiver.received.slice(before).find((entry) => parts(entry.token).payload.sub === userId),
    );
    expect(parts(delivery.token).payload.sid).toBe(sid);
    expect(
      (await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${tokens.access_token}` } })).status,
    ).toBe(401);
    const refreshed = await refreshTokenRequest(server, client, tokens.refresh_token ?? '');
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({ error: 'invalid_grant' });
  });
});

describe('back-channel logout to private hosts is refused unless allowed', () => {
  let server: TestServer;
  let admin: TestAdmin;
  let receiver: Receiver;
  beforeAll(async () => {
    server = await startTestServer({ env: { IDT_LOG_LEVEL: 'silent' } });
    admin = await bootstrapAdmin(server);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('does not call a loopback receiver', async () => {
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Private',
      redirectUris: [REDIRECT],
      backchannelLogoutUri: receiver.url,
      scopes: ['openid'],
    });
    const config = await discover(server, client);
    const result = await signIn(config, { redirectUri: REDIRECT, scope: 'openid', email: admin.email, password: admin.password });
    const tokens = await redeemCode(config, result);
    await result.browser.navigate(oidcClient.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '' }).href);
    await result.browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    await server.idt.infrastructure.events.dispatchPending();
    // Once the handler has run (whoever dispatched it), a request it made would already have reached the receiver.
    await backchannelSettled(server);
    expect(receiver.received).toHaveLength(0);
    const delivery = await server.database.db('core_outbox_deliveries').where({ handler: 'oidc.backchannel-logout' }).first();
    expect(delivery.status).toBe('delivered');
  });
});
