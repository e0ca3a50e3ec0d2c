import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createManualClock } from '@idt/core';
import { type MailboxMessage, readMailbox } from '@idt/core/mail';
import {
  type AxeFinding,
  axe,
  bootstrapAdmin,
  type CallbackPage,
  fits,
  inlineCode,
  lastDocument,
  launchChromium,
  openTab,
  startCallbackPage,
  startTestServer,
  type TestServer,
  tabTo,
  tenantWithTokens,
  withoutChromium,
} from '@idt/testing';
import { generateSync } from 'otplib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordUser, register, unique } from './clients-support.js';

/**
 * The account-security pages of issue 49 in headless Chromium, at 360 and
 * 1440 px: a screenshot of each (test-results/account-security-pages), axe-core
 * with no serious or critical violation, no console or CSP message, no
 * sideways scroll at 360 px, and the page's main control reached and used
 * with the keyboard.
 */

const SHOTS = join(import.meta.dirname, '..', '..', '..', 'test-results', 'account-security-pages');
const WIDTHS = [360, 1440] as const;
const NEW_PASSWORD = 'violet lantern orbit meadow';
describe.skipIf(withoutChromium)('the account-security pages in headless Chromium', () => {
  const clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  let server: TestServer;
  let browser: Browser;
  let relyingParty: CallbackPage;
  let REDIRECT: string;
  /** The platform's first-party application (no consent page). */
  let appClientId: string;
  /** An application of an organization that requires two-step verification. */
  let mfaPortalId: string;
  /** An application of an organization that requires verified addresses. */
  let verifiedPortalId: string;
  /** Every axe finding (any impact), by page and width, written next to the screenshots. */
  const report: Record<string, AxeFinding[]> = {};

  const seconds = () => Math.floor(clock.now().getTime() / 1000);
  /** The TOTP code of `secret` at the manual clock's time. */
  const totp = (secret: string) => generateSync({ secret, epoch: seconds() });
  const factors = () =>
    (
      server.idt.services.identity as unknown as {
        factors: {
          beginTotp(userId: string, label: string): Promise<{ enrolmentId: string; secret: string }>;
          confirmTotp(userId: string, enrolmentId: string, code: string): Promise<unknown>;
        };
      }
    ).factors;

  /** An application registered in a new organization whose security policy is `policy`. */
  async function portalOf(policy: { requireMfa?: boolean; requireVerifiedEmail?: boolean }): Promise<string> {
    const tenant = await tenantWithTokens(server, unique('Strict'));
    const organizationId = tenant.organization.id;
    await server.database.db('identity_organizations').where({ id: organizationId }).update({ enrollment_policy: 'open' });
    const response = await server.fetch(`/v1/identity/organizations/${organizationId}/security-policy`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tenant.tokens.owner}`, 'content-type': 'application/json' },
      body: JSON.stringify(policy),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    const portal = await register(server, tenant.tokens.admin, organizationId, {
      kind: 'application',
      name: unique('Portal'),
      redirectUris: [REDIRECT],
      scopes: ['openid', 'email', 'profile'],
    });
    return portal.clientId;
  }

  beforeAll(async () => {
    relyingParty = await startCallbackPage();
    REDIRECT = relyingParty.url;
    // localhost, not 127.0.0.1: a passkey relying party id cannot be an IP address, so the passkey button shows.
    server = await startTestServer({
      hostname: 'localhost',
      clock,
      env: { IDT_PASSWORD_RESET_IP_MAX_REQUESTS: '100000' },
    });
    await bootstrapAdmin(server);
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: 'Reports', redirectUris: [REDIRECT], scopes: ['openid', 'email', 'profile'] },
      { firstParty: true },
    );
    appClientId = registration.client.clientId;
    mfaPortalId = await portalOf({ requireMfa: true });
    verifiedPortalId = await portalOf({ requireVerifiedEmail: true });
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    writeFileSync(join(SHOTS, 'axe-findings.json'), `${JSON.stringify(report, null, 2)}\n`);
    await browser?.close();
    await server?.close();
    await relyingParty?.close();
  });

  /** The authorization URL of a client (a fixed PKCE challenge: the code is never redeemed here). */
  function authorizeUrl(clientId: string): string {
    const url = new URL(`${server.url}/connect/authorize`);
    url.search = new URLSearchParams({
      client_id: clientId,
      response_type: 'code',
      scope: 'openid email profile',
      redirect_uri: REDIRECT,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'account-security-pages',
    }).toString();
    return url.href;
  }

  /**
   * Looks at the page at each width: a full-page screenshot, axe-core (no serious or critical
   * violation), and no sideways scroll at 360 px. Leaves the viewport at 360 px.
   */
  async function inspect(page: Page, name: string) {
    const csp = lastDocument(page)?.headers()['content-security-policy'] ?? '';
    expect(csp, `${name}: the page's CSP`).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(await inlineCode(page), `${name}: inline scripts or style attributes`).toBe(0);
    const looks: Array<{ width: number; scheme: 'light' | 'dark' }> = [
      ...WIDTHS.map((width) => ({ width, scheme: 'light' as const })),
      // The dark scheme (prefers-color-scheme) has colors of its own: contrast checked there too.
      { width: 360, scheme: 'dark' },
    ];
    for (const { width, scheme } of looks) {
      const label = `${name}-${width}${scheme === 'dark' ? '-dark' : ''}`;
      await page.emulateMedia({ colorScheme: scheme });
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(SHOTS, `${label}.png`), fullPage: true });
      if (width === 360) expect(await fits(page), `${label} scrolls sideways`).toBe(true);
      const { violations, passed } = await axe(page);
      report[label] = violations;
      expect(passed, `${label}: axe checked nothing`).toBeGreaterThan(10);
      const grave = violations.filter((finding) => finding.impact === 'serious' || finding.impact === 'critical');
      expect(grave, label).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 360, height: 900 });
  }

  /** Waits (polling, up to 5 s) for the first mail of `template` to `to`. */
  async function mailTo(to: string, template: string): Promise<MailboxMessage> {
    const deadline = Date.now() + 5000;
    for (;;) {
      await server.idt.infrastructure.events.dispatchPending();
      const messages = (await readMailbox(join(server.database.dataDir, 'mail'), { to }).catch(() => [])).filter(
        (message) => message.headers['x-idt-template'] === template,
      );
      if (messages[0]) return messages[0];
      if (Date.now() > deadline) throw new Error(`No ${template} mail reached ${to}`);
      // Real I/O: the next look at the mailbox directory.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('the sign-in page, the forgotten-password form and its answer', { timeout: 60_000 }, async () => {
    const user = await passwordUser(server, 'forgot');
    const { context, page, problems } = await openTab(browser);
    await page.goto(authorizeUrl(appClientId));
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    await page.getByRole('link', { name: 'Forgot your password?' }).waitFor();
    await inspect(page, 'sign-in');

    // The link by keyboard: Tab to it, Enter follows it.
    await page.locator('body').focus();
    await tabTo(page, 'a[href$="/forgot"]');
    await Promise.all([page.waitForURL(/\/forgot$/), page.keyboard.press('Enter')]);
    await page.getByRole('heading', { name: 'Reset your password' }).waitFor();
    await inspect(page, 'forgot-password');

    await tabTo(page, '#email');
    await page.keyboard.type(user.email);
    await Promise.all([page.waitForURL(/\/forgot$/), page.keyboard.press('Enter')]);
    await page.getByRole('heading', { name: 'Check your e-mail' }).waitFor();
    await inspect(page, 'forgot-password-sent');
    await tabTo(page, 'a[href*="/interaction/"]');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('the password reset page from the mail, with a refused password, then done', { timeout: 60_000 }, async () => {
    const user = await passwordUser(server, 'reset');
    const asked = await server.fetch('/v1/identity/auth/password-reset', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: user.email }),
    });
    expect(asked.status).toBe(202);
    const link = /https?:\/\/\S+/.exec((await mailTo(user.email, 'password-reset-link')).text)?.[0] as string;
    expect(link).toContain('/connect/password-reset?token=');
    const { context, page, problems } = await openTab(browser);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await inspect(page, 'password-reset');

    // A common password, typed and sent with the keyboard: refused, the form again with its message.
    await tabTo(page, '#password');
    await page.keyboard.type('password1234');
    await page.keyboard.press('Tab');
    await page.keyboard.type('password1234');
    await Promise.all([page.waitForLoadState('load'), page.waitForResponse(/password-reset/), page.keyboard.press('Enter')]);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('one of the most common passwords');
    await inspect(page, 'password-reset-refused');

    await page.fill('#password', NEW_PASSWORD);
    await page.fill('#confirm', NEW_PASSWORD);
    await tabTo(page, 'button[type="submit"]');
    await Promise.all([page.waitForResponse(/password-reset/), page.keyboard.press('Space')]);
    await page.getByRole('heading', { name: 'Your password is changed' }).waitFor();
    await inspect(page, 'password-reset-done');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('the second step by keyboard (TOTP), its wrong-code state, then the account pages', { timeout: 90_000 }, async () => {
    const user = await passwordUser(server, 'totp');
    const begun = await factors().beginTotp(user.id, 'test');
    await factors().confirmTotp(user.id, begun.enrolmentId, totp(begun.secret));
    clock.advance(30_000);
    const { context, page, problems } = await openTab(browser);
    await page.goto(authorizeUrl(appClientId));
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    // Sign-in → second factor with the keyboard only.
    await page.locator('body').focus();
    await tabTo(page, '#email');
    await page.keyboard.type(user.email);
    await page.keyboard.press('Tab');
    expect(await page.locator('#password:focus').count()).toBe(1);
    await page.keyboard.type(user.password);
    await Promise.all([page.waitForURL(/\/login$/), page.keyboard.press('Enter')]);
    await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
    await inspect(page, 'second-factor');

    const right = totp(begun.secret);
    await tabTo(page, '#code');
    await page.keyboard.type(right === '000000' ? '111111' : '000000');
    await Promise.all([page.waitForURL(/\/second-factor$/), page.keyboard.press('Enter')]);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('That code is not right.');
    // focus.js moves the focus to the error summary, so a screen reader reads it first.
    expect(await page.locator('#error-summary:focus').count()).toBe(1);
    await inspect(page, 'second-factor-wrong-code');

    await tabTo(page, '#code');
    await page.keyboard.type(right);
    await tabTo(page, 'form:has(#code) button[type="submit"]', 3);
    await Promise.all([page.waitForURL((url) => url.href.startsWith(REDIRECT)), page.keyboard.press('Space')]);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();

    // The account pages of the signed-in user.
    await page.goto(`${server.url}/connect/account/password`);
    await page.getByRole('heading', { name: 'Change your password' }).waitFor();
    await inspect(page, 'account-password');
    await tabTo(page, '#current-password');
    await page.keyboard.type('not my password at all');
    await page.keyboard.press('Tab');
    await page.keyboard.type(NEW_PASSWORD);
    await page.keyboard.press('Tab');
    await page.keyboard.type(NEW_PASSWORD);
    await Promise.all([page.waitForResponse(/\/connect\/account\/password/), page.keyboard.press('Enter')]);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('The current password is wrong.');
    await inspect(page, 'account-password-wrong');

    await page.goto(`${server.url}/connect/account/two-step`);
    await page.getByRole('heading', { name: 'Two-step verification', level: 1 }).waitFor();
    await inspect(page, 'account-two-step');
    await tabTo(page, 'button[type="submit"]');

    await page.goto(`${server.url}/connect/account/passkeys`);
    await page.getByRole('heading', { name: 'Passkeys', level: 1 }).waitFor();
    await inspect(page, 'account-passkeys');
    await tabTo(page, 'button[type="submit"]');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('the enrolment page of an organization that requires two-step verification, and its wrong-code state', {
    timeout: 60_000,
  }, async () => {
    const user = await passwordUser(server, 'enrol');
    const { context, page, problems } = await openTab(browser);
    await page.goto(authorizeUrl(mfaPortalId));
    await page.fill('#email', user.email);
    await page.fill('#password', user.password);
    await Promise.all([page.waitForURL(/\/login$/), page.locator('form[action$="/login"] button[type="submit"]').click()]);
    await page.getByRole('heading', { name: 'Set up two-step verification' }).waitFor();
    expect(await page.locator('img.qr').getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
    await inspect(page, 'mfa-enrolment');

    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s+/g, '');
    const right = totp(secret);
    await tabTo(page, '#totp-code');
    await page.keyboard.type(right === '000000' ? '111111' : '000000');
    await Promise.all([page.waitForURL(/\/enrol$/), page.keyboard.press('Enter')]);
    await page.getByRole('alert').waitFor();
    await inspect(page, 'mfa-enrolment-wrong-code');

    await tabTo(page, '#totp-code');
    await page.keyboard.type(right);
    await Promise.all([page.waitForURL(/\/enrol$/), page.keyboard.press('Enter')]);
    await page.locator('ul.codes').waitFor();
    await inspect(page, 'mfa-enrolment-recovery-codes');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('the verified-e-mail gate and its "new link sent" state', { timeout: 60_000 }, async () => {
    const user = await passwordUser(server, 'gate');
    await mailTo(user.email, 'email-verification-link');
    const { context, page, problems } = await openTab(browser);
    await page.goto(authorizeUrl(verifiedPortalId));
    await page.fill('#email', user.email);
    await page.fill('#password', user.password);
    await Promise.all([page.waitForURL(/\/login$/), page.locator('form[action$="/login"] button[type="submit"]').click()]);
    await page.getByRole('heading', { name: 'Verify your e-mail address' }).waitFor();
    await inspect(page, 'verify-email-gate');

    await tabTo(page, 'form[action$="/resend-verification"] button');
    await Promise.all([page.waitForURL(/\/resend-verification$/), page.keyboard.press('Space')]);
    await page.getByRole('status').filter({ hasText: 'We sent you a new link' }).waitFor();
    await inspect(page, 'verify-email-gate-sent');
    expect(problems).toEqual([]);
    await context.close();
  });
});
