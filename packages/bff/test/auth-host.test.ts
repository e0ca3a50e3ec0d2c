import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bffConfigFromEnv, createBff, createMemoryBffSessionStore } from '@idt/bff';
import { BFF_SESSIONS_TABLE, bffMigrations, createKnexBffSessionStore } from '@idt/bff/knex';
import { createLogger, createManualClock, type ManualClock } from '@idt/core';
import { Browser, createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLoginStates } from '../src/auth/login-state.js';
import {
  expectBrowserProblem,
  OFFLINE_BFF_ENV,
  parseSetCookie,
  startTestBff,
  startTestProvider,
  TEST_COOKIE_PASSWORD,
  type TestBff,
  type TestProvider,
  throughProvider,
} from './support.js';

/** The names of the login-transaction cookies a browser holds for a URL's host. */
const transactionCookies = (browser: Browser, url: string) =>
  [...browser.cookies(url).keys()].filter((name) => name.startsWith('__Host-idt_bff_tx_'));

describe('BFF sign-in when the browser is on another host name than the redirect URI', () => {
  let provider: TestProvider;
  beforeAll(async () => {
    provider = await startTestProvider();
  });
  afterAll(async () => {
    await provider?.close();
  });

  describe.each(testDialects())('with sessions stored on %s', (dialect) => {
    let database: TestDatabase;
    let bff: TestBff;
    let clock: ManualClock;
    const logged: Array<Record<string, unknown>> = [];

    beforeAll(async () => {
      database = await createTestDatabase(dialect, [bffMigrations]);
      clock = createManualClock();
      // The BFF listens on 127.0.0.1; its redirect URI is on localhost, as `idt demo` registers the dashboard.
      bff = await startTestBff(provider, {
        clock,
        redirectHost: 'localhost',
        store: ({ config, clock }) => createKnexBffSessionStore({ db: database.db, secrets: config.cookie.keyring, clock }),
        logger: createLogger({ level: 'debug', write: (line) => void logged.push(JSON.parse(line)) }),
      });
    });
    afterAll(async () => {
      await bff?.close();
      await database?.destroy();
    });
    beforeEach(() => {
      clock.set(Date.now());
    });

    const storedSessions = async () => Number((await database.db(BFF_SESSIONS_TABLE).count({ n: '*' }))[0]?.n ?? 0);

    it('sends a login started on 127.0.0.1 to the redirect URI’s host first, with its query, and the sign-in completes there', async () => {
      const port = new URL(bff.url).port;
      const browser = new Browser();
      const first = await browser.request(`${bff.url}/bff/login?returnTo=%2Forders%3Fpage%3D2&prompt=login`);
      expect(first.status).toBe(302);
      expect(first.headers.get('cache-control')).toBe('no-store');
      expect(first.headers.get('location')).toBe(
        `${bff.publicUrl}/bff/login?returnTo=%2Forders%3Fpage%3D2&prompt=login&fromHost=127.0.0.1%3A${port}`,
      );
      // No cookie on the host the browser came from: the transaction starts on the redirect URI's.
      expect(first.headers.getSetCookie()).toEqual([]);

      const login = await browser.request(first.headers.get('location') ?? '');
      expect(login.status).toBe(302);
      const authorize = new URL(login.headers.get('location') ?? '');
      expect(`${authorize.origin}${authorize.pathname}`).toBe(`${provider.server.url}/connect/authorize`);
      expect(authorize.searchParams.get('prompt')).toBe('login');
      expect(transactionCookies(browser, bff.url)).toEqual([]);
      expect(transactionCookies(browser, bff.publicUrl)).toHaveLength(1);

      const callback = await browser.request(await throughProvider(bff, provider, browser, authorize.href));
      expect([callback.status, callback.headers.get('location')]).toEqual([302, '/orders?page=2']);
      const user = await browser.request(`${bff.publicUrl}/bff/user`);
      expect(user.status).toBe(200);
      expect(JSON.parse(user.body)).toMatchObject({ sub: provider.admin.userId });
      expect(logged.filter((line) => JSON.stringify(line).includes('bff.login.host_unseen'))).toEqual([]);
    });

    it('answers Bff.LoginHostMismatch naming both hosts when a sign-in that started on 127.0.0.1 comes back to localhost, and writes nothing', async () => {
      const before = await storedSessions();
      const browser = new Browser();
      // A login that already went to the redirect URI's host once is never sent again (no loop behind a
      // proxy that hides the public host): here it stays on 127.0.0.1 and leaves its cookie there.
      const login = await browser.request(`${bff.url}/bff/login?fromHost=elsewhere`);
      expect(login.status).toBe(302);
      expect(transactionCookies(browser, bff.url)).toHaveLength(1);
      const again = await browser.request(`${bff.url}/bff/login?fromHost=elsewhere`);
      expect(again.status).toBe(302);
      const warnings = logged.filter((line) => JSON.stringify(line).includes('bff.login.host_unseen'));
      expect(warnings).toHaveLength(1);
      expect(JSON.stringify(warnings[0])).toContain('trustProxy');

      const callbackUrl = await throughProvider(bff, provider, browser, login.headers.get('location') ?? '');
      expect(callbackUrl.startsWith(`${bff.publicUrl}/bff/callback?`)).toBe(true);
      const callback = await browser.request(callbackUrl);
      const problem = expectBrowserProblem(callback, 400, 'Bff.LoginHostMismatch');
      expect(problem.detail).toBe(
        `The sign-in started on ${bff.url} but came back to ${bff.publicUrl}, the host of the redirect URI; the browser keeps the sign-in's cookie per host name, so it has none here. Open the app at ${bff.publicUrl} and sign in again.`,
      );
      expect(problem).not.toHaveProperty('exception');
      expect(callback.body).not.toMatch(/\bat .+\.ts:\d+/);
      // Nothing written: no session cookie, no session row.
      expect(
        callback.headers
          .getSetCookie()
          .map(parseSetCookie)
          .filter((cookie) => cookie.value !== ''),
      ).toEqual([]);
      expect(browser.cookies(bff.publicUrl).has('__Host-idt_bff')).toBe(false);
      expect(await storedSessions()).toBe(before);
    });

    it('still says Bff.LoginTransactionInvalid for an expired sign-in (10 minutes by the clock), a completed one, and a state it did not issue', async () => {
      const signInOnHome = async (browser: Browser) => {
        const login = await browser.request(`${bff.publicUrl}/bff/login`);
        expect(login.status).toBe(302);
        return throughProvider(bff, provider, browser, login.headers.get('location') ?? '');
      };

      // 9 minutes 59 seconds: the sign-in completes.
      const inTime = new Browser();
      const inTimeUrl = await signInOnHome(inTime);
      clock.advance(599_000);
      expect((await inTime.request(inTimeUrl)).status).toBe(302);
      // The same callback again: the sign-in is spent.
      const replay = expectBrowserProblem(await inTime.request(inTimeUrl), 400, 'Bff.LoginTransactionInvalid');
      expect(replay.detail).toContain('it was already completed (a reload or the back button)');

      // 10 minutes: expired, and said so (the browser still sends the cookie; its seal has expired).
      const before = await storedSessions();
      const late = new Browser();
      const lateUrl = await signInOnHome(late);
      clock.advance(600_000);
      const expired = expectBrowserProblem(await late.request(lateUrl), 400, 'Bff.LoginTransactionInvalid');
      expect(expired.detail).toBe('The sign-in transaction is older than 10 minutes and has expired; start again at /bff/login.');
      // Its cookie is cleared, no session is written.
      expect(transactionCookies(late, bff.publicUrl)).toEqual([]);
      expect(late.cookies(bff.publicUrl).has('__Host-idt_bff')).toBe(false);
      expect(await storedSessions()).toBe(before);

      // A state this BFF did not issue, or one whose facts were altered.
      const foreign = expectBrowserProblem(
        await new Browser().request(`${bff.publicUrl}/bff/callback?code=abc&state=not-one-of-ours`),
        400,
        'Bff.LoginTransactionInvalid',
      );
      expect(foreign.detail).toContain('a state this app did not issue');
      const state = new URL(lateUrl).searchParams.get('state') ?? '';
      const [random, , mac] = state.split('.');
      const forged = `${random}.${Buffer.from(JSON.stringify({ k: 'default', o: 'http://evil.example', t: clock.now().getTime() })).toString('base64url')}.${mac}`;
      const altered = expectBrowserProblem(
        await new Browser().request(`${bff.publicUrl}/bff/callback?code=abc&state=${encodeURIComponent(forged)}`),
        400,
        'Bff.LoginTransactionInvalid',
      );
      expect(altered.detail).toContain('a state this app did not issue');
      expect(await storedSessions()).toBe(before);
    });
  });

  it('compares the host a trusted proxy forwards (trustProxy), not the one it connects to', async () => {
    const listening = createServer();
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const port = (listening.address() as AddressInfo).port;
    const bff = await createBff({
      config: {
        issuer: provider.server.url,
        clientId: 'behind-a-proxy',
        clientSecret: 'not used here',
        redirectUri: `https://app.example.com/bff/callback`,
        apiBaseUrl: provider.server.url,
        cookiePassword: TEST_COOKIE_PASSWORD,
      },
      trustProxy: true,
      store: createMemoryBffSessionStore(),
    });
    listening.on('request', (req, res) => void bff.handler(req, res));
    try {
      const login = (headers: Record<string, string>) =>
        fetch(`http://127.0.0.1:${port}/bff/login?returnTo=%2F`, { headers, redirect: 'manual' });
      const proxied = await login({ 'x-forwarded-host': 'app.example.com', 'x-forwarded-proto': 'https' });
      expect(proxied.status).toBe(302);
      expect(proxied.headers.get('location')).toMatch(new RegExp(`^${provider.server.url}/connect/authorize\\?`));
      expect(proxied.headers.getSetCookie()).toHaveLength(1);
      // Reached directly, on the proxy's upstream address: sent to the public host first.
      const direct = await login({});
      expect(direct.headers.get('location')).toBe(`https://app.example.com/bff/login?returnTo=%2F&fromHost=127.0.0.1%3A${port}`);
    } finally {
      await new Promise<void>((resolve) => {
        listening.close(() => resolve());
        listening.closeAllConnections();
      });
      await bff.close();
    }
  });
});

describe('login states', () => {
  const config = bffConfigFromEnv({
    ...OFFLINE_BFF_ENV,
    COOKIE_PASSWORD: undefined,
    COOKIE_PASSWORDS: JSON.stringify({ k2: 'n'.repeat(32), default: 'o'.repeat(32) }),
  });
  const oldOnly = bffConfigFromEnv({ ...OFFLINE_BFF_ENV, COOKIE_PASSWORD: 'o'.repeat(32) });

  it('carry where and when the sign-in started, start with 22 random characters and read back under any key of the ring', () => {
    const clock = createManualClock('2026-01-01T00:00:00Z');
    const issuedUnderOld = createLoginStates(oldOnly.cookie.keyring, clock).create('http://127.0.0.1:3000');
    expect(issuedUnderOld).toMatch(/^[\w-]{22}\.[\w-]+\.[\w-]{43}$/);
    const states = createLoginStates(config.cookie.keyring, clock);
    expect(states.read(issuedUnderOld)).toEqual({
      loginOrigin: 'http://127.0.0.1:3000',
      issuedAt: Date.parse('2026-01-01T00:00:00Z'),
    });
    const fresh = states.create('https://app.example.com');
    expect(states.read(fresh)).toMatchObject({ loginOrigin: 'https://app.example.com' });
    expect(states.create('https://app.example.com').slice(0, 22)).not.toBe(fresh.slice(0, 22));
    // Under a key the ring no longer holds, or altered anywhere: not ours.
    expect(createLoginStates(oldOnly.cookie.keyring, clock).read(fresh)).toBeUndefined();
    for (const bad of [`${fresh}x`, `x${fresh}`, fresh.replace('.', '..'), '', 'a.b.c', `${fresh}.extra`, 'é'.repeat(30)]) {
      expect(states.read(bad)).toBeUndefined();
    }
  });
});
