import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { IngestedLogEvent } from '@idt/core';
import {
  bootstrapAdmin,
  freePort,
  launchChromium,
  registerClient,
  startTestServer,
  type TestAdmin,
  type TestServer,
  withoutChromium,
} from '@idt/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Dashboard, startDashboard } from '../src/index.js';

const SHOTS = join(import.meta.dirname, '..', '..', '..', 'test-results', 'dashboard');
/** A JWT (access or ID token) anywhere in a string. */
const JWT = /eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{16,}/;

/** Everything the page received from the dashboard origin, bodies included, to search for tokens. */
function recordBodies(page: Page, origin: string): { bodies: string[]; read: () => Promise<unknown> } {
  const bodies: string[] = [];
  const reads: Array<Promise<unknown>> = [];
  page.on('response', (response) => {
    if (!response.url().startsWith(origin)) return;
    bodies.push(`${response.url()} ${JSON.stringify(response.headers())}`);
    reads.push(
      response.text().then(
        (text) => bodies.push(text),
        () => undefined,
      ),
    );
  });
  // Resolves once every body received so far is read (a body still streaming is read when it ends).
  return { bodies, read: () => Promise.all(reads) };
}

/**
 * The console errors and uncaught exceptions of a page, with the page's URL when they happened. Left
 * out: Chromium's note of the 401 of `GET /bff/user` on a signed-out dashboard, which is how the page
 * learns that nobody is signed in (Chromium notes every 4xx answer to a script's request).
 */
function watchConsole(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const signedOut = / 401 /.test(message.text()) && new URL(message.location().url).pathname === '/bff/user';
    if (!signedOut) errors.push(`${page.url()}: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`));
  return errors;
}

/** Follows the provider's pages (sign-in form, consent, organization) until the browser is back on the dashboard. */
async function signInThrough(page: Page, dashboard: Dashboard, email: string, password: string): Promise<void> {
  for (let step = 0; step < 6 && !page.url().startsWith(dashboard.url); step++) {
    if (await page.locator('input[name="password"]').count()) {
      await page.screenshot({ path: join(SHOTS, 'sign-in.png') });
      await page.fill('input[name="email"]', email);
      await page.fill('input[name="password"]', password);
      await Promise.all([page.waitForNavigation(), page.locator('form[action$="/login"] button[type="submit"]').first().click()]);
    } else if (await page.locator('form[action$="/consent"]').count()) {
      await Promise.all([page.waitForNavigation(), page.locator('form[action$="/consent"] button[value="approve"]').click()]);
    } else if (await page.locator('form[action$="/organization"]').count()) {
      await Promise.all([page.waitForNavigation(), page.locator('form[action$="/organization"] button').first().click()]);
    } else {
      throw new Error(`Unexpected page at ${page.url()}:\n${(await page.content()).slice(0, 2000)}`);
    }
  }
  await page.waitForURL(`${dashboard.url}/`);
}

describe.skipIf(withoutChromium)('the example dashboard in headless Chromium', () => {
  let server: TestServer;
  let admin: TestAdmin;
  let dashboard: Dashboard;
  let browser: Browser;
  const logged: IngestedLogEvent[] = [];

  beforeAll(async () => {
    server = await startTestServer({ env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' } });
    admin = await bootstrapAdmin(server);
    const port = await freePort();
    // The redirect URI is on localhost, as `idt demo` registers it; the server listens on 127.0.0.1.
    const origin = `http://localhost:${port}`;
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Dashboard',
      redirectUris: [`${origin}/bff/callback`],
      postLogoutRedirectUris: [`${origin}/`],
      // Back-channel only: the second test proves the provider's logout token alone ends the BFF session.
      backchannelLogoutUri: `${origin}/bff/backchannel-logout`,
      scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'notifications.read'],
    });
    dashboard = await startDashboard(
      {
        env: {
          OIDC_ISSUER: server.url,
          OIDC_CLIENT_ID: client.clientId,
          OIDC_CLIENT_SECRET: client.clientSecret,
          OIDC_REDIRECT_URI: `${origin}/bff/callback`,
          OIDC_POST_LOGOUT_REDIRECT_URI: `${origin}/`,
          OIDC_SCOPES: 'openid profile email roles offline_access notifications.read',
          BFF_API_BASE_URL: server.url,
          COOKIE_PASSWORD: 'a dashboard cookie password of 32+ chars',
        },
        logSink: { write: (events) => void logged.push(...events) },
      },
      port,
    );
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    await server?.close();
  });

  async function signedInPage(start = dashboard.url): Promise<{
    context: BrowserContext;
    page: Page;
    received: ReturnType<typeof recordBodies>;
    consoleErrors: string[];
  }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const consoleErrors = watchConsole(page);
    const received = recordBodies(page, dashboard.url);
    await page.goto(start);
    await page.locator('#sign-in').click();
    await signInThrough(page, dashboard, admin.email, admin.password);
    await page.locator('#profile-email').getByText(admin.email).waitFor();
    return { context, page, received, consoleErrors };
  }

  it('starts on 127.0.0.1, prints and lands on the redirect URI’s host', async () => {
    expect(dashboard.url).toBe(new URL(dashboard.bff.config.redirectUri).origin);
    expect(dashboard.url).toMatch(/^http:\/\/localhost:\d+$/);
    expect(dashboard.listening).toBe(dashboard.url.replace('localhost', '127.0.0.1'));
  });

  it('signs in, shows the profile, receives a notification through the hub, holds no token, and signs out', async () => {
    // Opened on 127.0.0.1: the sign-in moves to the redirect URI's host (localhost) and ends there.
    const { context, page, received, consoleErrors } = await signedInPage(dashboard.listening);
    expect(page.url()).toBe(`${dashboard.url}/`);
    expect(await page.locator('#profile-org').textContent()).toBe('Platform');
    expect(await page.locator('#profile-roles').textContent()).toContain('owner');
    await page.locator('#live.live').waitFor();

    // A notification created through the API arrives over the hub, proxied by the BFF.
    const created = await server.fetch('/v1/notifications', {
      method: 'POST',
      headers: { authorization: `Bearer ${await admin.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        userId: admin.userId,
        type: 'SystemNotification',
        title: 'Deploy finished',
        message: 'v2 is live.',
      }),
    });
    expect(created.status).toBe(201);
    await page.locator('#notification-list li', { hasText: 'Deploy finished' }).waitFor({ timeout: 5_000 });
    await page.screenshot({ path: join(SHOTS, 'signed-in.png'), fullPage: true });
    // The page's browser logger reaches /bff/logs (its 5 s timer flushes), stamped with the signed-in user.
    await expect
      .poll(() => logged.find((entry) => entry.event === 'dashboard.notification_received')?.userId, {
        timeout: 10_000,
        interval: 100,
      })
      .toBe(admin.userId);

    // No token in the page's storage, its cookies (the session cookie is HttpOnly) or anything it received.
    // Evaluated in the page (a string, so the test compiles without the DOM library).
    const storage = (await page.evaluate(
      '({ cookie: document.cookie, local: JSON.stringify({ ...localStorage }), session: JSON.stringify({ ...sessionStorage }) })',
    )) as { cookie: string; local: string; session: string };
    expect(storage.cookie).not.toMatch(JWT);
    expect(storage.local).toBe('{}');
    expect(storage.session).toBe('{}');
    await received.read();
    expect(received.bodies.length).toBeGreaterThan(3);
    for (const body of received.bodies) expect(body).not.toMatch(JWT);
    const cookies = await context.cookies(dashboard.url);
    const session = cookies.find((cookie) => cookie.name.startsWith('__Host-'));
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/' });
    for (const cookie of cookies) expect(cookie.value).not.toMatch(JWT);

    // Sign out: the BFF ends its session and sends the browser to the provider's logout, which may ask to
    // confirm before it sends the browser back. The navigation back is awaited from before the click (the
    // round trip can end before a wait started after it), and every wait is bounded, so a hang names its step.
    const back = page.waitForNavigation({ url: `${dashboard.url}/`, timeout: 15_000 });
    await page.locator('#sign-out').click();
    const confirm = page.locator('form button[value="yes"], form [name="logout"]').first();
    const asked = confirm.waitFor({ timeout: 15_000 }).then(
      () => 'asked' as const,
      () => undefined,
    );
    if ((await Promise.race([back.then(() => 'back' as const), asked])) === 'asked') {
      await page.locator('form button').first().click();
    }
    await back;
    await page.locator('#sign-in').waitFor();
    expect(await page.locator('#sign-out').isVisible()).toBe(false);
    await page.screenshot({ path: join(SHOTS, 'signed-out.png'), fullPage: true });
    expect((await page.request.get(`${dashboard.url}/bff/user`)).status()).toBe(401);
    // No page on the way (the dashboard, the sign-in host's pages, the logout) logged a console error.
    expect(consoleErrors).toEqual([]);
    await context.close();
  });

  it('ends a session the provider logged out through back-channel logout alone', async () => {
    const { context, page, consoleErrors } = await signedInPage();
    expect((await page.request.get(`${dashboard.url}/bff/user`)).status()).toBe(200);
    // Log out at the provider directly: the dashboard is not told by the browser, only by the logout token.
    await page.goto(`${server.url}/connect/logout`);
    if (await page.locator('form button').count()) {
      await Promise.all([page.waitForNavigation(), page.locator('form button').first().click()]);
    }
    await expect
      .poll(async () => (await page.request.get(`${dashboard.url}/bff/user`)).status(), { timeout: 10_000, interval: 100 })
      .toBe(401);
    await page.goto(dashboard.url);
    await page.locator('#sign-in').waitFor();
    expect(consoleErrors).toEqual([]);
    await context.close();
  });

  it('answers the icon a browser asks for beside a problem document of the BFF', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const consoleErrors = watchConsole(page);
    // The browser fetches the icon itself: only the DevTools protocol sees that request.
    const iconAnswers: number[] = [];
    const devtools = await context.newCDPSession(page);
    await devtools.send('Network.enable');
    devtools.on('Network.responseReceived', (event) => {
      if (new URL(event.response.url).pathname === '/favicon.ico') iconAnswers.push(event.response.status);
    });
    const response = await page.goto(`${dashboard.url}/bff/callback?code=x&state=not-one-of-ours`);
    expect(response?.status()).toBe(400);
    expect(await page.textContent('body')).toContain('Bff.LoginTransactionInvalid');
    await expect.poll(() => iconAnswers, { timeout: 10_000 }).toEqual([200]);
    // Chromium notes the document's own 400; nothing else.
    expect(consoleErrors.filter((line) => !line.includes('/bff/callback?code=x'))).toEqual([]);
    await page.goto(dashboard.url);
    await page.locator('#sign-in').waitFor();
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toBe('/favicon.svg');
    expect((await page.request.get(`${dashboard.url}/favicon.svg`)).headers()['content-type']).toBe('image/svg+xml');
    await context.close();
  });
});
