import { join } from 'node:path';
import { type MailboxMessage, readMailbox } from '@idt/core/mail';
import {
  Browser,
  bootstrapAdmin,
  createSkippingClock,
  discover,
  type oidcClient,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  registerUser,
  seedMembership,
  signIn,
  startTestServer,
  type TestAdmin,
  type TestClient,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet lantern orbit meadow';
const SCOPE = 'openid email offline_access';

/** Waits (polling, up to 5 s) for the `count`-th mail of `template` to `to`. */
async function mailTo(server: TestServer, to: string, template: string, count = 1): Promise<MailboxMessage> {
  const deadline = Date.now() + 5000;
  for (;;) {
    await server.idt.infrastructure.events.dispatchPending();
    const messages = (await readMailbox(join(server.database.dataDir, 'mail'), { to })).filter(
      (message) => message.headers['x-idt-template'] === template,
    );
    if (messages.length >= count) return messages[count - 1] as MailboxMessage;
    if (Date.now() > deadline) throw new Error(`No ${template} mail reached ${to}`);
    // Real I/O: the next look at the mailbox directory.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const linkIn = (message: MailboxMessage) => /https?:\/\/\S+/.exec(message.text)?.[0] as string;

describe.each(testDialects())('the password pages on %s', (dialect) => {
  let server: TestServer;
  let admin: TestAdmin;
  let client: TestClient;
  let config: oidcClient.Configuration;
  const clock = createSkippingClock();

  /** Opens a fresh sign-in in a new browser and follows the "Forgot your password?" link. */
  async function forgotPage(browser = new Browser()) {
    const url = new URL(`${server.url}/connect/authorize`);
    for (const [name, value] of Object.entries({
      client_id: client.clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: SCOPE,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      prompt: 'login consent',
    })) {
      url.searchParams.set(name, value);
    }
    const signInPage = await browser.navigate(url.href);
    expect(signInPage.status).toBe(200);
    const forgot = /<a href="([^"]+\/forgot)">Forgot your password\?<\/a>/.exec(signInPage.body)?.[1];
    expect(forgot).toBeDefined();
    const page = await browser.navigate(new URL(forgot as string, signInPage.url).href);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<h1>Reset your password</h1>');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    return { browser, page };
  }

  /** A self-registered user who is a member of the application's organization. */
  async function member(email: string): Promise<string> {
    const userId = await registerUser(server, email, PASSWORD);
    await seedMembership(server.database.db, { userId, organizationId: admin.organizationId });
    return userId;
  }

  beforeAll(async () => {
    server = await startTestServer({ dialect, clock, env: { IDT_PASSWORD_RESET_IP_MAX_REQUESTS: '100000' } });
    admin = await bootstrapAdmin(server);
    client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Reset app',
      redirectUris: [REDIRECT],
      scopes: ['openid', 'email', 'offline_access'],
    });
    config = await discover(server, client);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('resets a password end to end through the pages: same answer for any address, link single use, every token ends', async () => {
    const email = `reset-${dialect}@example.com`;
    await member(email);
    const first = await signIn(config, { redirectUri: REDIRECT, scope: SCOPE, email, password: PASSWORD });
    if (first.callback.searchParams.has('error')) throw new Error(first.callback.href);
    const tokens = await redeemCode(config, first);
    const refreshToken = tokens.refresh_token as string;
    expect(refreshToken).toBeTruthy();
    const account = `${server.url}/connect/account`;
    expect((await first.browser.request(account)).status).toBe(200);

    // The same page, status and wording whatever the address.
    const known = await forgotPage();
    const answer = await known.browser.submit({ form: '/forgot', fields: { email } });
    const stranger = await forgotPage();
    const unknown = await stranger.browser.submit({ form: '/forgot', fields: { email: `nobody-${dialect}@example.com` } });
    expect(answer.status).toBe(200);
    expect(unknown.status).toBe(200);
    const neutral = (body: string, address: string) =>
      body.replaceAll(address, 'ADDRESS').replace(/\/interaction\/[^/"]+/g, '/interaction/ID');
    expect(neutral(unknown.body, `nobody-${dialect}@example.com`)).toBe(neutral(answer.body, email));
    expect(answer.body).toContain('a link to choose a new password is on its way');

    const link = linkIn(await mailTo(server, email, 'password-reset-link'));
    expect(link.startsWith(`${server.url}/connect/password-reset?token=`)).toBe(true);
    const browser = new Browser();
    const form = await browser.navigate(link);
    expect(form.status).toBe(200);
    expect(form.body).toContain('autocomplete="new-password"');
    expect(form.headers.get('referrer-policy')).toBe('no-referrer');
    expect(form.headers.get('cache-control')).toBe('no-store');

    // Refusals show the form again and change nothing.
    const mismatch = await browser.submit({ fields: { password: NEW_PASSWORD, confirm: 'something else entirely' } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body).toContain('The two passwords are not the same.');
    await browser.navigate(link);
    const common = await browser.submit({ fields: { password: 'password1234', confirm: 'password1234' } });
    expect(common.status).toBe(422);
    expect(common.body).toContain('one of the most common passwords');
    await browser.navigate(link);
    const huge = 'x'.repeat(10 * 1024);
    const tooLong = await browser.submit({ fields: { password: huge, confirm: huge } });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body).toContain('at most 256 characters');
    const token = new URL(link).searchParams.get('token') as string;
    const invalidUtf8 = await fetch(`${server.url}/connect/password-reset`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.origin },
      body: `token=${encodeURIComponent(token)}&password=%FF%FEabcdefghijklmn&confirm=%FF%FEabcdefghijklmn`,
    });
    expect(invalidUtf8.status).toBe(400);
    expect(await invalidUtf8.text()).toContain('characters that are not allowed');
    const crossSite = await fetch(`${server.url}/connect/password-reset`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: new URLSearchParams({ token, password: NEW_PASSWORD, confirm: NEW_PASSWORD }).toString(),
    });
    expect(crossSite.status).toBe(403);
    expect(await server.idt.services.identity.signIn.authenticate(email, PASSWORD)).toBeDefined();

    await browser.navigate(link);
    const done = await browser.submit({ fields: { password: NEW_PASSWORD, confirm: NEW_PASSWORD } });
    expect(done.status).toBe(200);
    expect(done.body).toContain('Your password is changed');

    // Single use.
    const again = await new Browser().navigate(link);
    expect(again.status).toBe(400);
    expect(again.body).toContain('This link does not work');

    // Every session, refresh-token family and access token of the user ended.
    await server.idt.infrastructure.events.dispatchPending();
    expect((await first.browser.request(account)).status).toBe(401);
    expect((await refreshTokenRequest(server, client, refreshToken)).status).toBe(400);
    const api = await fetch(`${server.url}/v1/identity/sessions`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(api.status).toBe(401);
    expect((await mailTo(server, email, 'password-reset-notice')).subject).toBe('Your password was reset');

    // The old password no longer signs in; the new one does.
    clock.advance(2000);
    await expect(signIn(config, { redirectUri: REDIRECT, scope: SCOPE, email, password: PASSWORD })).rejects.toThrow();
    const later = await signIn(config, { redirectUri: REDIRECT, scope: SCOPE, email, password: NEW_PASSWORD });
    expect((await redeemCode(config, later)).access_token).toBeTruthy();
  });

  it('refuses an expired link after one hour, and limits requests per address', async () => {
    const email = `late-${dialect}@example.com`;
    await member(email);
    const { browser } = await forgotPage();
    expect((await browser.submit({ form: '/forgot', fields: { email } })).status).toBe(200);
    const link = linkIn(await mailTo(server, email, 'password-reset-link'));
    clock.advance(3_600_000);
    const expired = await new Browser().navigate(link);
    expect(expired.status).toBe(400);
    expect(expired.body).toContain('This link has expired');

    // A new window (the clock moved an hour): three requests per address, the fourth refused, for any address.
    for (const address of [email, `ghost-${dialect}@example.com`]) {
      for (let i = 0; i < 3; i++) {
        const { browser: next } = await forgotPage();
        expect((await next.submit({ form: '/forgot', fields: { email: address } })).status).toBe(200);
      }
      const { browser: last } = await forgotPage();
      const limited = await last.submit({ form: '/forgot', fields: { email: address } });
      expect(limited.status).toBe(429);
      expect(limited.body).toContain('Too many reset requests');
    }
    const { browser: bad } = await forgotPage();
    expect((await bad.submit({ form: '/forgot', fields: { email: 'not an address' } })).status).toBe(400);
  });

  it('changes the password from the account page and signs out the other sessions', async () => {
    const email = `change-${dialect}@example.com`;
    await member(email);
    const here = await signIn(config, { redirectUri: REDIRECT, scope: SCOPE, email, password: PASSWORD });
    const there = await signIn(config, { redirectUri: REDIRECT, scope: SCOPE, email, password: PASSWORD });
    const account = `${server.url}/connect/account`;
    const accountPage = await here.browser.request(account);
    expect(accountPage.body).toContain('href="/connect/account/password">Change your password</a>');

    expect((await new Browser().request(`${account}/password`)).status).toBe(401);
    const page = await here.browser.request(`${account}/password`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('autocomplete="current-password"');

    const wrong = await here.browser.submit({
      fields: { currentPassword: 'not my password at all', newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('The current password is wrong.');
    const weak = await here.browser.submit({
      fields: {
        currentPassword: PASSWORD,
        newPassword: `${email.split('@')[0]} is me`,
        confirmPassword: `${email.split('@')[0]} is me`,
      },
    });
    expect(weak.status).toBe(422);
    expect(weak.body).toContain('cannot contain your e-mail address');
    const forged = await here.browser.submit({
      fields: { csrf: 'forged', currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD },
    });
    expect(forged.status).toBe(403);

    await here.browser.request(`${account}/password`);
    const changed = await here.browser.submit({
      fields: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toContain('Your password is changed. Your other sessions were signed out.');
    await server.idt.infrastructure.events.dispatchPending();
    expect((await here.browser.request(account)).status).toBe(200);
    expect((await there.browser.request(account)).status).toBe(401);
    expect((await mailTo(server, email, 'password-changed-notice')).subject).toBe('Your password was changed');
    expect(await server.idt.services.identity.signIn.authenticate(email, NEW_PASSWORD)).toBeDefined();
  });
});
