import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  bootstrapAdmin,
  type CallbackPage,
  consoleProblems,
  launchChromium,
  registerClient,
  startCallbackPage,
  startTestServer,
  type TestAdmin,
  type TestServer,
  withoutChromium,
} from '@idt/testing';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SHOTS = join(import.meta.dirname, '..', '..', '..', 'test-results', 'oidc-pages');

describe.skipIf(withoutChromium)('the landing, error and account pages in headless Chromium', () => {
  let server: TestServer;
  let admin: TestAdmin;
  let browser: Browser;
  let authorizeUrl: string;
  // The relying party's callback: a bare page on a loopback port.
  let relyingParty: CallbackPage;
  let REDIRECT: string;

  beforeAll(async () => {
    relyingParty = await startCallbackPage();
    REDIRECT = relyingParty.url;
    server = await startTestServer({ env: { IDT_ENVIRONMENT: 'Development' } });
    admin = await bootstrapAdmin(server);
    // What `idt demo` registers: a first-party application with a localhost redirect URI.
    await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      {
        kind: 'application',
        name: 'Dashboard',
        redirectUris: ['http://localhost:3000/bff/callback'],
        scopes: ['openid', 'profile', 'email'],
      },
      { firstParty: true },
    );
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Reports',
      redirectUris: [REDIRECT],
      scopes: ['openid', 'profile', 'email', 'offline_access'],
    });
    const url = new URL(`${server.url}/connect/authorize`);
    url.search = new URLSearchParams({
      client_id: client.clientId,
      response_type: 'code',
      scope: 'openid profile email offline_access',
      redirect_uri: REDIRECT,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'browser-test',
      prompt: 'consent',
    }).toString();
    authorizeUrl = url.href;
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await relyingParty?.close();
  });

  it('renders the Development landing page', async () => {
    const page = await browser.newPage();
    const violations = consoleProblems(page);
    await page.goto(`${server.url}/`);
    await page.getByRole('heading', { name: 'idt is running' }).waitFor();
    expect(await page.getByRole('link', { name: 'API reference' }).getAttribute('href')).toBe('/scalar');
    expect(await page.getByRole('link', { name: 'Sign in to Dashboard' }).getAttribute('href')).toContain('/connect/authorize?');
    await page.screenshot({ path: join(SHOTS, 'landing.png'), fullPage: true });
    expect(violations).toEqual([]);
    await page.close();
  });

  it('renders a provider error in the sign-in layout with the code and the trace id', async () => {
    const page = await browser.newPage();
    const violations = consoleProblems(page);
    const response = await page.goto(
      `${server.url}/connect/authorize?client_id=nobody&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(REDIRECT)}`,
    );
    expect(response?.status()).toBe(400);
    await page.getByRole('heading', { name: 'Sign-in problem' }).waitFor();
    expect(await page.locator('.facts').textContent()).toContain('invalid_client');
    expect(await page.locator('.facts').textContent()).toMatch(/Trace id[0-9a-f]{32}/);
    await page.screenshot({ path: join(SHOTS, 'error.png'), fullPage: true });
    expect(violations).toEqual([]);
    await page.close();
  });

  it('answers the icon browsers ask for, so a problem document shown in the browser logs no console error', async () => {
    const icon = await fetch(`${server.url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(await icon.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = consoleProblems(page);
    // The browser fetches the icon itself: only the DevTools protocol sees that request.
    const iconAnswers: number[] = [];
    const devtools = await context.newCDPSession(page);
    await devtools.send('Network.enable');
    devtools.on('Network.responseReceived', (event) => {
      if (new URL(event.response.url).pathname === '/favicon.ico') iconAnswers.push(event.response.status);
    });
    const response = await page.goto(`${server.url}/v1/no-such-thing`);
    expect(response?.status()).toBe(404);
    await expect.poll(() => iconAnswers, { timeout: 10_000 }).toEqual([200]);
    expect(problems).toEqual([]);
    // idt's own pages name their icon inline, which works under a path prefix too.
    await page.goto(`${server.url}/`);
    await page.getByRole('heading', { name: 'idt is running' }).waitFor();
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('lists the OpenID endpoints in the API reference (Scalar)', { timeout: 90_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems = consoleProblems(page);
    await page.goto(`${server.url}/scalar`);
    const group = page.getByText('OpenID Connect', { exact: true }).filter({ visible: true }).first();
    await group.waitFor({ timeout: 60_000 });
    await group.click();
    await page.getByText('Start a sign-in (authorization code with PKCE)').filter({ visible: true }).first().waitFor();
    // The tag's introduction: how to get a token.
    await page.getByText('npx idt token --from service.env').filter({ visible: true }).first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, 'scalar-openid.png') });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('signs in, allows the application, and shows the account page', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const violations = consoleProblems(page);
    await page.goto(authorizeUrl);
    await page.fill('input[name="email"]', admin.email);
    await page.fill('input[name="password"]', admin.password);
    await Promise.all([page.waitForNavigation(), page.locator('form[action$="/login"] button[type="submit"]').click()]);
    await page.locator('form[action$="/consent"]').waitFor();
    expect(await page.getByRole('link', { name: 'your account' }).getAttribute('href')).toBe('/connect/account');
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(REDIRECT)),
      page.locator('form[action$="/consent"] button[value="approve"]').click(),
    ]);

    await page.goto(`${server.url}/connect/account`);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    expect(await page.locator('.facts').first().textContent()).toContain(admin.email);
    expect(await page.getByRole('button', { name: /Withdraw access of Reports/ }).count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'account.png'), fullPage: true });

    // The withdraw button works in a real browser (CSRF token, Post/Redirect/Get).
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: /Withdraw access of Reports/ }).click()]);
    await page.getByText('Access withdrawn.').waitFor();
    await page.screenshot({ path: join(SHOTS, 'account-withdrawn.png'), fullPage: true });
    expect(violations).toEqual([]);
    await context.close();
  });
});
