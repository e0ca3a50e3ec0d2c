import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createManualClock } from '@idt/core';
import { type MailboxMessage, readMailbox } from '@idt/core/mail';
import {
  Browser,
  type BrowserResponse,
  bootstrapAdmin,
  consoleProblems,
  discover,
  launchChromium,
  oidcClient,
  startTestServer,
  type TestClient,
  type TestServer,
  tenantWithTokens,
  testDialects,
  withoutChromium,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordUser, REDIRECT_URI, register, unique } from './clients-support.js';

const SCOPE = 'openid email profile';
const TEMPLATE = 'email-verification-link';
const SHOTS = join(import.meta.dirname, '..', '..', '..', 'test-results', 'oidc-pages');

/** A test server with a first-party, organization-less client, as the sign-in tests use. */
async function startWithClient(dialect: 'sqlite' | 'postgres', env: Record<string, string> = {}) {
  const clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  const server = await startTestServer({ dialect, clock, env });
  await bootstrapAdmin(server);
  const registration = await server.idt.services.oidc.clients.register(
    { userId: null, platformAdmin: true },
    null,
    { kind: 'application', name: unique('Console'), redirectUris: [REDIRECT_URI], scopes: ['openid', 'email', 'profile'] },
    { firstParty: true },
  );
  const client: TestClient = { clientId: registration.client.clientId, clientSecret: registration.clientSecret, record: {} };
  return { server, clock, client, config: await discover(server, client) };
}

/** The verification mails to `to`, oldest first, once more than `already` arrived (the outbox delivers them). */
async function verificationMails(server: TestServer, to: string, already = 0): Promise<MailboxMessage[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    await server.idt.infrastructure.events.dispatchPending();
    const messages = (await readMailbox(join(server.database.dataDir, 'mail'), { to }).catch(() => [])).filter(
      (message) => message.headers['x-idt-template'] === TEMPLATE,
    );
    if (messages.length > already) return messages;
    if (Date.now() > deadline) throw new Error(`No verification mail reached ${to}`);
    // Real I/O: the next look at the mailbox directory.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The link of the newest verification mail to `to`. */
async function latestLink(server: TestServer, to: string, already = 0): Promise<string> {
  const link = /https?:\/\/\S+/.exec((await verificationMails(server, to, already)).at(-1)?.text ?? '')?.[0];
  if (!link) throw new Error('No link in the verification mail');
  return link;
}

/** Opens the authorization URL in `browser`; the first page and the PKCE values. */
async function authorize(config: oidcClient.Configuration, browser: Browser) {
  const verifier = oidcClient.randomPKCECodeVerifier();
  const state = oidcClient.randomState();
  const url = oidcClient.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  return { page: await browser.navigate(url.href), verifier, state };
}

/** Signs in with a password through the real pages; the page the sign-in ended on and the PKCE values. */
async function passwordSignIn(config: oidcClient.Configuration, server: TestServer, user: { email: string; password: string }) {
  const browser = new Browser({}, server.send);
  const flow = await authorize(config, browser);
  let page = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
  if (page.body.includes('/consent"')) page = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
  return { browser, flow, page };
}

/** Redeems the code of a finished sign-in; the id token's claims and the userinfo answer. */
async function claimsOf(config: oidcClient.Configuration, done: BrowserResponse, flow: { verifier: string; state: string }) {
  const callback = new URL(done.url);
  expect(callback.searchParams.get('code'), done.body.slice(0, 800)).toBeTruthy();
  const tokens = await oidcClient.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: flow.verifier,
    expectedState: flow.state,
  });
  const id = tokens.claims() as Record<string, unknown>;
  const userinfo = (await oidcClient.fetchUserInfo(config, tokens.access_token, String(id.sub))) as Record<string, unknown>;
  return { id, userinfo };
}

/** Opens a verification link as a mail scanner would (GET only), then as the person (the page's button). */
async function verifyThroughPage(server: TestServer, link: string) {
  const browser = new Browser({}, server.send);
  const page = await browser.navigate(link);
  expect(page.status).toBe(200);
  expect(page.body).toContain('<h1>Verify your e-mail address</h1>');
  return browser.submit({ form: '/connect/verify-email' });
}

describe.each(testDialects())('verified e-mail addresses in sign-in on %s', (dialect) => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;

  beforeAll(async () => {
    setup = await startWithClient(dialect);
  });
  afterAll(async () => {
    await setup?.server.close();
  });

  it('puts email_verified beside email in the id token and userinfo, false until the link is used', async () => {
    const { server, config } = setup;
    const user = await passwordUser(server, 'claims');
    const before = await passwordSignIn(config, server, user);
    const unverified = await claimsOf(config, before.page, before.flow);
    expect(unverified.id).toMatchObject({ sub: user.id, email: user.email, email_verified: false });
    expect(unverified.userinfo).toMatchObject({ sub: user.id, email: user.email, email_verified: false });

    const link = await latestLink(server, user.email);
    // Mail scanners fetch links: opening the page uses nothing.
    const scanner = new Browser({}, server.send);
    for (let i = 0; i < 2; i++) {
      const page = await scanner.navigate(link);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(page.headers.get('cache-control')).toContain('no-store');
      expect(page.body).not.toMatch(/<script>|style="/);
    }
    const done = await verifyThroughPage(server, link);
    expect(done.status).toBe(200);
    expect(done.body).toContain('<h1>Your e-mail address is verified</h1>');

    const after = await passwordSignIn(config, server, user);
    const verified = await claimsOf(config, after.page, after.flow);
    expect(verified.id).toMatchObject({ sub: user.id, email: user.email, email_verified: true });
    expect(verified.userinfo).toMatchObject({ sub: user.id, email: user.email, email_verified: true });

    // Used once: the page now says the link does not work, and the button is gone.
    const again = await new Browser({}, server.send).navigate(link);
    expect(again.status).toBe(400);
    expect(again.body).toContain('This link does not work');
    expect(again.body).not.toContain('name="token"');
  });

  it('holds the sign-in to an organization that requires verified addresses until the member verifies', async () => {
    const { server } = setup;
    const tenant = await tenantWithTokens(server, unique('Verified Only'));
    const organizationId = tenant.organization.id;
    await server.database.db('identity_organizations').where({ id: organizationId }).update({ enrollment_policy: 'open' });
    const policy = await server.fetch(`/v1/identity/organizations/${organizationId}/security-policy`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tenant.tokens.owner}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requireVerifiedEmail: true }),
    });
    expect(policy.status, await policy.clone().text()).toBe(200);
    const portal = await register(server, tenant.tokens.admin, organizationId, {
      kind: 'application',
      name: unique('Portal'),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'email', 'profile'],
    });
    const portalConfig = await discover(server, portal);
    const user = await passwordUser(server, 'org-gate');
    const first = await latestLink(server, user.email);

    // The platform's own client asks nothing of the address.
    const elsewhere = await passwordSignIn(setup.config, server, user);
    expect(new URL(elsewhere.page.url).searchParams.get('code')).toBeTruthy();

    const { browser, page } = await passwordSignIn(portalConfig, server, user);
    expect(page.status).toBe(403);
    expect(page.body).toContain('<h1>Verify your e-mail address</h1>');
    expect(page.body).toContain(user.email);
    expect(new URL(page.url).searchParams.get('code')).toBeNull();

    const resent = await browser.submit({ form: '/resend-verification' });
    expect(resent.status).toBe(200);
    expect(resent.body).toContain('We sent you a new link');
    const second = await latestLink(server, user.email, 1);
    expect(second).not.toBe(first);
    // The new link replaced the registration's.
    const stale = await new Browser({}, server.send).navigate(first);
    expect(stale.status).toBe(400);
    expect(stale.body).toContain('This link does not work');
    const used = await verifyThroughPage(server, second);
    expect(used.body).toContain('<h1>Your e-mail address is verified</h1>');

    const flow = await authorize(portalConfig, browser);
    let done = flow.page;
    if (done.body.includes('/login"')) {
      done = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    }
    if (done.body.includes('/consent"')) done = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    const claims = await claimsOf(portalConfig, done, flow);
    expect(claims.id).toMatchObject({ sub: user.id, email_verified: true });
  });

  it('refuses the resend form without a sign-in the gate stopped', async () => {
    const { server, config } = setup;
    const browser = new Browser({}, server.send);
    const { page } = await authorize(config, browser);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const action = (/action="([^"]*\/login)"/.exec(page.body)?.[1] ?? '').replace(/\/login$/, '/resend-verification');
    const forged = await browser.request(new URL(action, server.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.origin },
      body: new URLSearchParams({ csrf }).toString(),
    });
    expect(forged.status).toBe(400);
    expect(forged.body).not.toContain('We sent you a new link');
  });

  // Last of its suite: it moves the clock a day ahead, past the lifetime of the tokens oidc-provider issues.
  it('refuses expired, forged and malformed links on the confirm page, changing nothing', async () => {
    const { server, clock } = setup;
    const user = await passwordUser(server, 'expired');
    const link = await latestLink(server, user.email);
    const token = new URL(link).searchParams.get('token') ?? '';
    const browser = new Browser({}, server.send);
    for (const bad of ['', 'garbage', `${token.split('.')[0]}.AAAA`, `${token}x`, 'a'.repeat(600)]) {
      const page = await browser.navigate(`${server.url}/connect/verify-email?token=${encodeURIComponent(bad)}`);
      expect(page.status).toBe(400);
      expect(page.body).toContain('This link does not work');
    }
    const invalidUtf8 = await server.fetch('/connect/verify-email?token=%FF');
    expect(invalidUtf8.status).toBe(400);
    const forged = await server.fetch('/connect/verify-email', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${encodeURIComponent(`${token.split('.')[0]}.AAAA`)}`,
    });
    expect(forged.status).toBe(400);
    const wrongType = await server.fetch('/connect/verify-email', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    });
    expect(wrongType.status).toBe(415);
    expect((await server.fetch('/connect/verify-email', { method: 'DELETE' })).status).toBe(405);

    clock.advance(24 * 3_600_000);
    const expired = await browser.navigate(link);
    expect(expired.status).toBe(400);
    expect(expired.body).toContain('This link has expired');
    const posted = await server.fetch('/connect/verify-email', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(posted.status).toBe(400);
    expect(await server.idt.services.identity.verification.email.isVerified(user.id)).toBe(false);
  });
});

describe.each(testDialects())('IDT_REQUIRE_VERIFIED_EMAIL on %s', (dialect) => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;

  beforeAll(async () => {
    setup = await startWithClient(dialect, { IDT_REQUIRE_VERIFIED_EMAIL: 'true' });
  });
  afterAll(async () => {
    await setup?.server.close();
  });

  it('stops every sign-in of an unverified address at the page that offers a new link, rate-limited', async () => {
    const { server, config } = setup;
    const user = await passwordUser(server, 'global');
    await latestLink(server, user.email);
    const { browser, page } = await passwordSignIn(config, server, user);
    expect(page.status).toBe(403);
    expect(page.body).toContain('<h1>Verify your e-mail address</h1>');
    expect(page.body).toContain('/resend-verification"');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.body).not.toMatch(/<script>|style="/);
    const sessions = await server.database.db('identity_sessions').where({ user_id: user.id });
    expect(sessions).toHaveLength(0);

    for (let sent = 1; sent <= 3; sent++) {
      const resent = await browser.submit({ form: '/resend-verification' });
      expect(resent.status).toBe(200);
      await verificationMails(server, user.email, sent);
    }
    const limited = await browser.submit({ form: '/resend-verification' });
    expect(limited.status).toBe(429);
    expect(limited.body).toContain('There is a problem');
    expect(limited.body).toContain('try again in 15 minutes');

    const link = await latestLink(server, user.email, 3);
    const verified = await verifyThroughPage(server, link);
    expect(verified.status).toBe(200);
    const again = await passwordSignIn(config, server, user);
    const claims = await claimsOf(config, again.page, again.flow);
    expect(claims.id).toMatchObject({ sub: user.id, email_verified: true });
    expect(claims.userinfo).toMatchObject({ email_verified: true });
  });

  it('says so when the address was verified meanwhile', async () => {
    const { server, config } = setup;
    const user = await passwordUser(server, 'meanwhile');
    const link = await latestLink(server, user.email);
    const { browser, page } = await passwordSignIn(config, server, user);
    expect(page.status).toBe(403);
    await verifyThroughPage(server, link);
    const answer = await browser.submit({ form: '/resend-verification' });
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('Your e-mail address is verified. Sign in again to continue.');
  });
});

describe.skipIf(withoutChromium)('the verified-e-mail pages in headless Chromium at 360 px', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;
  let browser: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    setup = await startWithClient('sqlite', { IDT_REQUIRE_VERIFIED_EMAIL: 'true' });
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await setup?.server.close();
  });

  it('shows the gate, sends a new link, and verifies with the confirm page’s button, without console problems', async () => {
    const { server, config } = setup;
    const user = await passwordUser(server, 'chromium');
    await latestLink(server, user.email);
    const page = await browser.newPage({ viewport: { width: 360, height: 740 } });
    const problems = consoleProblems(page);
    // Evaluated in the page (a string: the test's own types have no DOM).
    const fits = () => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: SCOPE,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'verified-email',
    });
    await page.goto(url.href);
    await page.getByLabel('E-mail address').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Verify your e-mail address' }).waitFor();
    expect(await fits()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'verify-email-gate.png'), fullPage: true });

    await page.getByRole('button', { name: 'Send a new link' }).click();
    await page.getByRole('status').filter({ hasText: 'We sent you a new link' }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'verify-email-gate-sent.png'), fullPage: true });

    const link = await latestLink(server, user.email, 1);
    await page.goto(link);
    await page.getByRole('button', { name: 'Verify my e-mail address' }).waitFor();
    expect(await fits()).toBe(true);
    await page.screenshot({ path: join(SHOTS, 'verify-email-confirm.png'), fullPage: true });
    await page.getByRole('button', { name: 'Verify my e-mail address' }).click();
    await page.getByRole('heading', { name: 'Your e-mail address is verified' }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'verify-email-done.png'), fullPage: true });

    await page.goto(link);
    await page.getByRole('heading', { name: 'This link does not work' }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'verify-email-used.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });
});
