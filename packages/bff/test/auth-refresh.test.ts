import { createBff } from '@idt/bff';
import { bffMigrations, createKnexBffSessionStore } from '@idt/bff/knex';
import { createManualClock, type ManualClock } from '@idt/core';
import { connectTestDatabase, createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  bffSignIn,
  cookieHeader,
  expectBrowserProblem,
  sessionOf,
  startTestBff,
  startTestProvider,
  type TestBff,
  type TestProvider,
} from './support.js';

/** The provider's access-token lifetime: 15 minutes (SPEC 5.3). */
const ACCESS_TOKEN_MS = 900_000;

describe('BFF token refresh against the reference provider', () => {
  let provider: TestProvider;
  let bff: TestBff;
  let clock: ManualClock;
  beforeAll(async () => {
    provider = await startTestProvider();
    clock = createManualClock();
    bff = await startTestBff(provider, { clock, logoutUris: false });
  });
  afterAll(async () => {
    await bff?.close();
    await provider?.close();
  });
  beforeEach(() => {
    clock.set(Date.now());
    bff.failTokenEndpoint(false);
  });

  it('refreshes once for 20 concurrent requests within 60 seconds of expiry and stores the rotated tokens', async () => {
    const { browser } = await bffSignIn(bff, provider);
    const before = await sessionOf(browser, bff);
    const headers = new Headers({ cookie: cookieHeader(browser, bff) });
    // expires_in is 900 or, across a second boundary at the provider, 899: go by what was stored.
    clock.advance(before.accessTokenExpiresAt - clock.now().getTime() - 61_000);
    const hits = bff.tokenRequests();
    expect((await bff.bff.sessions.current(headers)).session?.accessToken).toBe(before.accessToken);
    expect(bff.tokenRequests()).toBe(hits);

    clock.advance(2_000);
    const results = await Promise.all(Array.from({ length: 20 }, () => bff.bff.sessions.current(headers)));
    expect(bff.tokenRequests() - hits).toBe(1);
    const accessTokens = new Set(results.map((result) => result.session?.accessToken));
    expect(accessTokens.size).toBe(1);
    expect(accessTokens.has(before.accessToken)).toBe(false);
    const stored = await bff.bff.store.read(before.id, clock.now().getTime());
    expect(stored?.accessToken).toBe(results[0]?.session?.accessToken);
    expect(stored?.refreshToken).not.toBe(before.refreshToken);
    expect(stored?.accessTokenExpiresAt).toBeGreaterThanOrEqual(clock.now().getTime() + ACCESS_TOKEN_MS - 1_000);
    expect(stored?.accessTokenExpiresAt).toBeLessThanOrEqual(clock.now().getTime() + ACCESS_TOKEN_MS);

    // The refreshed token works at the API through the proxy.
    const me = await browser.request(`${bff.url}/api/v1/identity/users/me`);
    expect(me.status).toBe(200);
    expect(bff.tokenRequests() - hits).toBe(1);
  });

  it('refreshes once for 20 parallel API calls through the proxy with an expiring session, and every call succeeds', async () => {
    const { browser } = await bffSignIn(bff, provider);
    const before = await sessionOf(browser, bff);
    const cookie = cookieHeader(browser, bff);
    clock.advance(before.accessTokenExpiresAt - clock.now().getTime() - 30_000);
    const hits = bff.tokenRequests();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`${bff.url}/api/v1/identity/users/me`, { headers: { cookie } })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(bff.tokenRequests() - hits).toBe(1);
    const after = await sessionOf(browser, bff);
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
  });

  it('ends the session when the provider refuses the refresh token', async () => {
    const { browser } = await bffSignIn(bff, provider);
    const session = await sessionOf(browser, bff);
    const revoked = await provider.server.fetch('/connect/revoke', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${bff.client.clientId}:${bff.client.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: session.refreshToken ?? '', token_type_hint: 'refresh_token' }).toString(),
    });
    expect(revoked.status).toBe(200);
    clock.advance(ACCESS_TOKEN_MS);
    const user = await browser.request(`${bff.url}/bff/user`);
    expectBrowserProblem(user, 401, 'Bff.SessionRefreshFailed');
    expect(user.headers.getSetCookie()).toEqual([expect.stringMatching(/^__Host-idt_bff=; Path=\/; Max-Age=0;/)]);
    expect(await bff.bff.store.read(session.id, clock.now().getTime())).toBeUndefined();
  });

  it('keeps the session when the provider cannot be reached, and answers 503 once the token has expired', async () => {
    const { browser } = await bffSignIn(bff, provider);
    const session = await sessionOf(browser, bff);
    bff.failTokenEndpoint(true);
    clock.advance(ACCESS_TOKEN_MS - 30_000);
    expect((await browser.request(`${bff.url}/bff/user`)).status).toBe(200);
    clock.advance(30_000);
    const user = await browser.request(`${bff.url}/bff/user`);
    expectBrowserProblem(user, 503, 'Bff.UpstreamUnavailable');
    expect(user.headers.getSetCookie()).toEqual([]);
    expect(await bff.bff.store.read(session.id, clock.now().getTime())).toBeDefined();
    bff.failTokenEndpoint(false);
    expect((await browser.request(`${bff.url}/bff/user`)).status).toBe(200);
    expect((await sessionOf(browser, bff)).accessToken).not.toBe(session.accessToken);
  });

  describe.each(testDialects())('two BFF instances sharing a knex store on %s', (dialect) => {
    let database: TestDatabase;
    let second: TestDatabase;
    let shared: TestBff;
    beforeAll(async () => {
      database = await createTestDatabase(dialect, [bffMigrations]);
      second = connectTestDatabase(database);
      shared = await startTestBff(provider, {
        clock,
        logoutUris: false,
        store: ({ config }) => createKnexBffSessionStore({ db: database.db, secrets: config.cookie.keyring, lockPollMs: 5 }),
      });
    });
    afterAll(async () => {
      await shared?.close();
      await second?.destroy();
      await database?.destroy();
    });

    it('redeem the refresh token once between them', async () => {
      let otherHits = 0;
      const other = await createBff({
        config: shared.config,
        clock,
        store: ({ config }) => createKnexBffSessionStore({ db: second.db, secrets: config.cookie.keyring, lockPollMs: 5 }),
        fetch: ((input: string | URL | Request, init?: RequestInit) => {
          if (String(input instanceof Request ? input.url : input).endsWith('/connect/token')) otherHits += 1;
          return fetch(input, init);
        }) as typeof fetch,
      });
      const { browser } = await bffSignIn(shared, provider);
      const before = await sessionOf(browser, shared);
      const headers = new Headers({ cookie: cookieHeader(browser, shared) });
      expect((await other.sessions.current(headers)).session?.id).toBe(before.id);
      clock.advance(ACCESS_TOKEN_MS - 30_000);
      const hits = shared.tokenRequests();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, index) => (index % 2 ? other : shared.bff).sessions.current(headers)),
      );
      expect(shared.tokenRequests() - hits + otherHits).toBe(1);
      const tokens = new Set(results.map((result) => result.session?.accessToken));
      expect(tokens.size).toBe(1);
      expect(tokens.has(before.accessToken)).toBe(false);
      expect(tokens.has(undefined)).toBe(false);
      await other.close();
    });
  });
});
