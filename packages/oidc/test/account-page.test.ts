import {
  Browser,
  bootstrapAdmin,
  createTestIdt,
  discover,
  expectJson,
  type oidcClient,
  parseForms,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  signIn,
  type TestAdmin,
  type TestClient,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** The session id of the list entry marked "This browser". */
function currentSessionId(html: string): string {
  const match = /<strong>This browser<\/strong>[\s\S]*?name="session" value="([^"]+)"/.exec(html);
  if (!match?.[1]) throw new Error(`no current session on:\n${html.slice(0, 2000)}`);
  return match[1];
}

function sessionIds(html: string, base: string): string[] {
  return parseForms(html, base)
    .filter((form) => form.action.endsWith('/connect/account/sessions/revoke'))
    .map((form) => form.fields.session as string);
}

describe.each(testDialects())('the account page on %s', (dialect) => {
  let server: TestIdt;
  let admin: TestAdmin;
  let client: TestClient;
  let config: oidcClient.Configuration;
  let browser: Browser;
  let refreshToken: string;
  let consentPageHtml: string;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    admin = await bootstrapAdmin(server);
    // Not first-party: it asks for consent, which the account page can withdraw.
    client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Reports <beta>',
      redirectUris: [REDIRECT],
      scopes: ['openid', 'profile', 'email', 'offline_access'],
    });
    config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid profile email offline_access',
      email: admin.email,
      password: admin.password,
      parameters: { prompt: 'consent' },
    });
    browser = result.browser;
    consentPageHtml = result.pages.find((page) => page.body.includes('/consent"'))?.body ?? '';
    const tokens = await redeemCode(config, result);
    refreshToken = tokens.refresh_token as string;
  });
  afterAll(async () => {
    await server?.close();
  });

  const account = () => `${server.url}/connect/account`;

  it('is linked from the consent page where the promise is made', () => {
    expect(consentPageHtml).toContain('You can withdraw this later from <a href="/connect/account"');
  });

  it('asks a visitor without a sign-in session to sign in, and changes nothing on a POST', async () => {
    const page = await server.send(account());
    expect(page.status).toBe(401);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('Sign in to see your account');
    const post = await server.send(`${account()}/consents/withdraw`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client: client.clientId, csrf: 'x' }).toString(),
    });
    expect(post.status).toBe(401);
  });

  it('shows the profile, the sessions and the consents, escaped, under the page security headers', async () => {
    const page = await browser.request(account());
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.body).toContain('Ada Admin');
    expect(page.body).toContain(admin.email);
    expect(page.body).toContain('Reports &lt;beta&gt;');
    expect(page.body).not.toContain('Reports <beta>');
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page.body).toContain('<strong>This browser</strong>');
    const forms = parseForms(page.body, page.url);
    expect(forms.some((form) => form.action.endsWith('/connect/account/consents/withdraw'))).toBe(true);
    expect(forms.some((form) => form.action.endsWith('/connect/account/email'))).toBe(true);
  });

  it('refuses a POST without the CSRF token of this session, and changes nothing', async () => {
    await browser.request(account());
    const forged = await browser.submit({ form: '/consents/withdraw', fields: { csrf: 'forged.token' }, follow: false });
    expect(forged.status).toBe(403);
    expect(forged.body).toContain('Nothing was changed');
    // A token of another session does not work either.
    const other = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid',
      email: admin.email,
      password: admin.password,
    });
    const otherPage = await other.browser.request(account());
    const otherCsrf = parseForms(otherPage.body, otherPage.url)[0]?.fields.csrf as string;
    await browser.request(account());
    const crossed = await browser.submit({ form: '/consents/withdraw', fields: { csrf: otherCsrf }, follow: false });
    expect(crossed.status).toBe(403);
    const consents = await expectJson(
      await server.fetch('/v1/identity/consents', { headers: { authorization: `Bearer ${await admin.token()}` } }),
    );
    expect(consents.map((consent: { clientId: string }) => consent.clientId)).toContain(client.clientId);
  });

  it('revokes another session: that browser is signed out, this one stays', async () => {
    const second = await signIn(config, { redirectUri: REDIRECT, scope: 'openid', email: admin.email, password: admin.password });
    const secondId = currentSessionId((await second.browser.request(account())).body);
    const page = await browser.request(account());
    expect(sessionIds(page.body, page.url)).toContain(secondId);

    const unknown = await browser.submit({ form: '/sessions/revoke', fields: { session: 'no-such-session' }, follow: false });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toContain('That session is not one of yours or has already ended.');

    await browser.request(account());
    const revoked = await browser.submit({ form: '/sessions/revoke', fields: { session: secondId }, follow: false });
    expect(revoked.status).toBe(303);
    expect(revoked.headers.get('location')).toBe('/connect/account?done=session-revoked');
    const after = await browser.navigate(`${server.url}${revoked.headers.get('location')}`);
    expect(after.status).toBe(200);
    expect(after.body).toContain('The session was signed out.');
    expect(sessionIds(after.body, after.url)).not.toContain(secondId);
    expect((await second.browser.request(account())).status).toBe(401);
  });

  it('withdraws a consent: the refresh token stops working and the page says so', async () => {
    expect((await refreshTokenRequest(server, client, refreshToken)).status).toBe(200);
    // The successor within the leeway is the same family; withdrawing ends the family.
    await browser.request(account());
    const unknown = await browser.submit({ form: '/consents/withdraw', fields: { client: 'nobody' }, follow: false });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toContain('You have not allowed that application.');

    await browser.request(account());
    const withdrawn = await browser.submit({ form: '/consents/withdraw' });
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body).toContain('Access withdrawn.');
    expect(withdrawn.body).toContain('You have not allowed any application yet.');
    const refused = await refreshTokenRequest(server, client, refreshToken);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('asks for an e-mail change, and refuses a malformed or unchanged address with a message', async () => {
    await browser.request(account());
    const malformed = await browser.submit({
      form: '/connect/account/email',
      fields: { email: 'not an address' },
      follow: false,
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toContain('Enter a valid e-mail address.');
    expect(malformed.body).toContain('value="not an address"');

    const same = await browser.submit({ form: '/connect/account/email', fields: { email: admin.email }, follow: false });
    expect(same.status).toBe(400);
    expect(same.body).toContain('That is already your e-mail address.');

    const asked = await browser.submit({ form: '/connect/account/email', fields: { email: 'ada.new@example.com' } });
    expect(asked.status).toBe(200);
    expect(asked.body).toContain('a confirmation link is on its way');
    // Unchanged until the link is opened.
    expect(asked.body).toContain(admin.email);
  });

  it('answers 405 for other methods and a page for unknown account paths', async () => {
    expect((await browser.request(account(), { method: 'POST' })).status).toBe(405);
    expect((await browser.request(`${account()}/email`)).status).toBe(405);
    const unknown = await browser.request(`${account()}/nothing`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('text/html');
  });

  it('works with a fresh browser too (the cookie is all it needs)', async () => {
    const fresh = new Browser({}, server.send);
    expect((await fresh.request(account())).status).toBe(401);
  });
});
