import { createManualClock, type ManualClock } from '@idt/core';
import {
  Browser,
  type BrowserResponse,
  bootstrapAdmin,
  parseForms,
  registerUser,
  seedMembership,
  seedOrganization,
  startTestServer,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PASSWORD = 'correct horse battery staple';
const RECOVERY_CODE = /<li><code>([0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4})<\/code><\/li>/g;

/** The page obeys the sign-in pages' CSP: no inline script or style. */
function expectNoInlineCode(page: BrowserResponse) {
  expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
  expect(page.headers.get('cache-control')).toBe('no-store');
  expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)/);
  expect(page.body).not.toMatch(/\sstyle=|<style/);
}

describe.each(testDialects())('the account page’s two-step verification on %s', (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  let counter = 0;

  beforeAll(async () => {
    clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
    server = await startTestServer({ dialect, clock });
    await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  const identity = () => server.idt.services.identity;
  const page = (path = '') => `${server.url}/connect/account/two-step${path}`;
  const codeFor = (secret: string) => generate({ secret, epoch: Math.floor(clock.now().getTime() / 1000) });

  /** A registered user signed in in a browser of their own (a sign-in session and its cookie). */
  async function signedIn(prefix: string) {
    const email = `${prefix}-${++counter}-${dialect}@example.com`;
    const id = await registerUser(server, email, PASSWORD);
    const sessions = identity().credentials.sessions;
    const { cookieValue } = await sessions.start(id, { amr: ['pwd'] });
    const browser = new Browser({}, server.send);
    browser.cookies(server.url).set(sessions.cookieName, cookieValue);
    return { id, email, browser };
  }

  it('sets up an authenticator app, shows the recovery codes once, makes new ones and removes the app', async () => {
    const { id, browser } = await signedIn('ada');
    const account = await browser.request(`${server.url}/connect/account`);
    expect(account.status).toBe(200);
    expect(account.body).toContain('href="/connect/account/two-step"');

    const overview = await browser.request(page());
    expect(overview.status).toBe(200);
    expectNoInlineCode(overview);
    expect(overview.body).toContain('<dt>Authenticator app</dt><dd>Off</dd>');
    // Signed in just now: no "confirm it's you" fields.
    expect(overview.body).not.toContain('Confirm it');

    const setUp = await browser.submit({ form: '/two-step/begin' });
    expect(setUp.status).toBe(200);
    expectNoInlineCode(setUp);
    expect(setUp.body).toMatch(/<img class="qr" src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]+" alt="[^"]+"/);
    const qr = /src="data:image\/svg\+xml;base64,([^"]+)"/.exec(setUp.body)?.[1] as string;
    expect(Buffer.from(qr, 'base64').toString('utf8')).toMatch(/^<svg/);
    expect(setUp.body).toContain('autocomplete="one-time-code"');
    expect(setUp.body).toContain('inputmode="numeric"');
    expect(setUp.body).toContain('<label for="totp-code">');
    const secret = (/id="totp-secret">([A-Z2-7 ]+)</.exec(setUp.body)?.[1] ?? '').replace(/ /g, '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);

    // A wrong code, a 7-digit code: the form again with an error summary, nothing set up.
    const good = await codeFor(secret);
    const wrong = await browser.submit({ form: '/two-step/confirm', fields: { code: good === '000000' ? '111111' : '000000' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('id="error-summary"');
    expect(wrong.body).toContain('did not match');
    const long = await browser.submit({ form: '/two-step/confirm', fields: { code: `${good}7` } });
    expect(long.status).toBe(400);
    expect(long.body).toContain('Enter the 6 digits');
    expect((await identity().factors.status(id)).totp).toBe(false);

    const on = await browser.submit({ form: '/two-step/confirm', fields: { code: good } });
    expect(on.status).toBe(200);
    expectNoInlineCode(on);
    const codes = [...on.body.matchAll(RECOVERY_CODE)].map((match) => match[1] as string);
    expect(codes).toHaveLength(10);
    expect(await identity().factors.status(id)).toEqual({ totp: true, recoveryCodesLeft: 10, passkeys: 0 });

    // Shown once: the overview never shows them again.
    const after = await browser.request(page());
    expect(after.body).toContain('<dt>Authenticator app</dt><dd>On</dd>');
    expect(after.body).toContain('10 unused');
    for (const code of codes) expect(after.body).not.toContain(code);

    // More than 5 minutes later, changes ask "confirm it's you".
    clock.advance(5 * 60_000 + 1000);
    const stale = await browser.request(page());
    expect(stale.body).toContain('<legend>Confirm it');
    expect(stale.body).toContain('autocomplete="current-password"');
    const refused = await browser.submit({ form: '/two-step/recovery-codes' });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('id="error-summary"');
    const wrongPassword = await browser.submit({
      form: '/two-step/recovery-codes',
      fields: { password: 'not the password at all' },
    });
    expect(wrongPassword.status).toBe(403);
    const fresh = await browser.submit({ form: '/two-step/recovery-codes', fields: { password: PASSWORD } });
    expect(fresh.status).toBe(200);
    const newCodes = [...fresh.body.matchAll(RECOVERY_CODE)].map((match) => match[1] as string);
    expect(newCodes).toHaveLength(10);
    expect(await identity().factors.useRecoveryCode(id, codes[0] as string)).toBe('wrong');
    expect(await identity().factors.useRecoveryCode(id, newCodes[0] as string)).toBe('ok');

    // Removing the app with a code as the proof.
    await browser.request(page());
    clock.advance(30_000);
    const removed = await browser.submit({
      form: '/two-step/remove',
      fields: { reauthCode: await codeFor(secret) },
      follow: false,
    });
    expect(removed.status).toBe(303);
    expect(removed.headers.get('location')).toBe('/connect/account/two-step?done=removed');
    const done = await browser.request(page('?done=removed'));
    expect(done.body).toContain('The authenticator app was removed');
    expect(done.body).toContain('<dt>Authenticator app</dt><dd>Off</dd>');
    expect(await identity().factors.status(id)).toEqual({ totp: false, recoveryCodesLeft: 0, passkeys: 0 });
  });

  it('refuses to remove the last factor of a member of an organization that requires MFA', async () => {
    const { id, browser } = await signedIn('mfa');
    const organization = await seedOrganization(server.database.db, { name: `Strict ${counter}` });
    await seedMembership(server.database.db, { userId: id, organizationId: organization.id, roles: ['user'] });
    await server.database.db('identity_organizations').where({ id: organization.id }).update({ require_mfa: true });
    const begun = await identity().factors.beginTotp(id, '');
    await identity().factors.confirmTotp(id, begun.enrolmentId, await codeFor(begun.secret));

    await browser.request(page());
    const refused = await browser.submit({ form: '/two-step/remove' });
    expect(refused.status).toBe(422);
    expect(refused.body).toContain('requires two-step verification');
    expect((await identity().factors.status(id)).totp).toBe(true);
  });

  it('refuses forged, foreign and signed-out requests, changing nothing', async () => {
    const { id, browser } = await signedIn('csrf');
    await browser.request(page());
    const forged = await browser.submit({ form: '/two-step/begin', fields: { csrf: 'forged.token' } });
    expect(forged.status).toBe(403);
    expect(forged.body).toContain('Nothing was changed');
    expect(Number((await server.database.db('identity_totp_enrolments').where({ user_id: id }).count({ n: '*' }))[0]?.n)).toBe(0);

    const csrf = parseForms((await browser.request(page())).body, page())[0]?.fields.csrf as string;
    const foreign = await browser.request(page('/begin'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: new URLSearchParams({ csrf }).toString(),
    });
    expect(foreign.status).toBe(403);
    // Chromium posts same-origin forms with `Origin: null` under `Referrer-Policy: no-referrer`.
    const post = (headers: Record<string, string>) =>
      browser.request(page('/begin'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ csrf }).toString(),
      });
    expect((await post({ origin: 'null', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post({ origin: 'null' })).status).toBe(403);
    const sameSite = await post({ origin: 'null', 'sec-fetch-site': 'same-origin' });
    expect(sameSite.status).toBe(200);
    expect(sameSite.body).toContain('id="totp-secret"');

    const anonymous = new Browser({}, server.send);
    expect((await anonymous.request(page())).status).toBe(401);
    const anonymousPost = await anonymous.request(page('/remove'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'csrf=x',
    });
    expect(anonymousPost.status).toBe(401);
    expect((await browser.request(page('/remove'))).status).toBe(405);
    expect((await browser.request(page('/nope'))).status).toBe(404);
    const confirmLate = await browser.request(page('/confirm'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(server.url).origin },
      body: new URLSearchParams({ csrf, enrolment: 'gone', code: '123456' }).toString(),
    });
    expect(confirmLate.status).toBe(400);
    expect(confirmLate.body).toContain('expired');
  });
});
