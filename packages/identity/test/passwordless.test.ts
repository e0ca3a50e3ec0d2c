import { createTestIdt, seedTenant, seedUser, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, expectProblem, jsonInit, linkIn, mailsTo, waitForMail } from './credentials-support.js';

const LINK = 'passwordless-magic-link';
const CODE = 'passwordless-code';

describe.each(testDialects())('passwordless sign-in over HTTP on %s', (dialect) => {
  let server: TestIdt;

  const requestLink = (body: unknown) => server.fetch('/v1/identity/auth/passwordless/magic-link', jsonInit('POST', body));
  const requestCode = (body: unknown) => server.fetch('/v1/identity/auth/passwordless/code', jsonInit('POST', body));
  const verifyCode = (email: string, code: string) =>
    server.fetch('/v1/identity/auth/passwordless/code/verify', jsonInit('POST', { email, code }));
  async function expectAccepted(response: Response) {
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ succeeded: true });
  }
  async function mailedCode(email: string, already = 0): Promise<string> {
    const mail = await waitForMail(server, email, CODE, already);
    const code = /\b(\d{6})\b/.exec(mail.text)?.[1];
    if (!code) throw new Error('no code in the mail');
    return code;
  }
  const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');
  const sessionCookie = (response: Response) => (response.headers.get('set-cookie') ?? '').split(';')[0] as string;
  /** Posts a mailed link's token as its confirmation page does (same-origin form post). */
  const postLink = (link: string, headers: Record<string, string> = {}, token = new URL(link).searchParams.get('token') ?? '') =>
    server.send(`${new URL(link).origin}${new URL(link).pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(link).origin, ...headers },
      body: new URLSearchParams({ token }).toString(),
      redirect: 'manual',
    });
  const consumedAt = async (userId: string) =>
    (await server.database.db('identity_passwordless_requests').where({ user_id: userId, kind: 'link' }).first()).consumed_at;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    await seedTenant(server.database.db);
  });
  afterAll(async () => {
    await server.close();
  });

  it('signs in end to end with a magic link through the development mailer', async () => {
    const user = await seedUser(server.database.db, { email: 'ada.link@example.com', firstName: 'Ada' });
    await expectAccepted(await requestLink({ email: ' Ada.Link@Example.com ' }));
    const mail = await waitForMail(server, user.email, LINK);
    const link = linkIn(mail);
    expect(link.startsWith(`${server.url}/v1/identity/auth/passwordless/magic-link/verify?token=`)).toBe(true);
    const row = await server.database.db('identity_passwordless_requests').where({ user_id: user.id }).first();
    expect(row).toMatchObject({ kind: 'link', code_hash: null, attempts: 0, consumed_at: null });
    expect(new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()).toBe(15 * 60_000);

    // Opening the link (a browser, a mail scanner, a link preview) shows a page and consumes nothing.
    const opened = await server.send(link, { headers: { accept: 'text/html' } });
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toMatch(/^text\/html/);
    expect(opened.headers.get('content-security-policy')).toContain("form-action 'self'");
    expect(opened.headers.get('referrer-policy')).toBe('no-referrer');
    expect(opened.headers.get('cache-control')).toBe('no-store');
    expect(opened.headers.get('set-cookie')).toBeNull();
    const page = await opened.text();
    expect(page).toContain('<form method="post" action="/v1/identity/auth/passwordless/magic-link/verify">');
    expect(page).toContain(`<input type="hidden" name="token" value="${new URL(link).searchParams.get('token')}">`);
    expect(page).not.toContain('<script');
    expect((await server.send(link)).status).toBe(200);
    expect(await consumedAt(user.id)).toBeNull();
    expect(await countRows(server, 'identity_sessions', { user_id: user.id })).toBe(0);

    const response = await postLink(link);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { succeeded: boolean; userId: string; sessionId: string };
    expect(body).toEqual({ succeeded: true, userId: user.id, sessionId: expect.any(String) });
    const setCookie = response.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^idt_session=[A-Za-z0-9_-]{43}; /);
    for (const attribute of ['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/']) expect(setCookie).toContain(`; ${attribute}`);
    const maxAge = Number(/Max-Age=(\d+)/.exec(setCookie)?.[1]);
    expect(maxAge).toBeGreaterThan(86_400 - 60);
    expect(maxAge).toBeLessThanOrEqual(86_400);

    const sessions = await server.fetch('/v1/identity/sessions', { headers: { cookie: sessionCookie(response) } });
    expect(sessions.status).toBe(200);
    expect(await sessions.json()).toEqual([expect.objectContaining({ id: body.sessionId, current: true })]);
    expect(Boolean((await server.database.db('identity_users').where({ id: user.id }).first()).email_verified)).toBe(true);
    const amr = (await server.database.db('identity_sessions').where({ id: body.sessionId }).first()).amr;
    expect(JSON.parse(amr)).toEqual(['email']);

    await expectProblem(await postLink(link), 400, 'Passwordless.InvalidToken');
  });

  it('redirects to returnTo, renders a page for browsers, and refuses other return targets', async () => {
    const user = await seedUser(server.database.db);
    await expectAccepted(await requestLink({ email: user.email, returnTo: '/account?tab=security' }));
    const redirected = await postLink(linkIn(await waitForMail(server, user.email, LINK)));
    expect(redirected.status).toBe(303);
    expect(redirected.headers.get('location')).toBe('/account?tab=security');
    expect(redirected.headers.get('set-cookie')).toMatch(/^idt_session=/);

    await expectAccepted(await requestLink({ email: user.email }));
    const page = await postLink(linkIn(await waitForMail(server, user.email, LINK, 1)), { accept: 'text/html' });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('set-cookie')).toMatch(/^idt_session=/);
    expect(await page.text()).toContain('<h1>You are signed in</h1>');

    const forged = await postLink(
      `${server.url}/v1/identity/auth/passwordless/magic-link/verify`,
      { accept: 'text/html' },
      'abc.def',
    );
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain('does not work');

    for (const returnTo of ['https://evil.example/', '//evil.example', '/\\evil.example', 'account', '/a\nb']) {
      const problem = await expectProblem(await requestLink({ email: user.email, returnTo }), 400, 'Validation.Failed');
      expect(Object.keys(problem.errors as object)).toEqual(['returnTo']);
    }
  });

  it('refuses a link posted from another site, a malformed body, and consumes nothing then', async () => {
    const user = await seedUser(server.database.db);
    await expectAccepted(await requestLink({ email: user.email }));
    const link = linkIn(await waitForMail(server, user.email, LINK));
    // Login CSRF: another site posting the attacker's link must not sign the visitor in.
    await expectProblem(await postLink(link, { origin: 'https://evil.example' }), 403, 'Auth.Forbidden');
    await expectProblem(await postLink(link, { origin: 'null' }), 403, 'Auth.Forbidden');
    const crossSite = await server.send(`${server.url}/v1/identity/auth/passwordless/magic-link/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
      body: new URLSearchParams({ token: new URL(link).searchParams.get('token') ?? '' }).toString(),
    });
    await expectProblem(crossSite, 403, 'Auth.Forbidden');
    const asPage = await postLink(link, { origin: 'https://evil.example', accept: 'text/html' });
    expect(asPage.status).toBe(403);
    expect(asPage.headers.get('set-cookie')).toBeNull();
    expect(await asPage.text()).toContain('does not work here');
    // A body that is not the form, or has no token.
    const asJson = await server.send(`${server.url}/v1/identity/auth/passwordless/magic-link/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: server.url },
      body: JSON.stringify({ token: new URL(link).searchParams.get('token') }),
    });
    await expectProblem(asJson, 415, 'Http.ClientError');
    const empty = await expectProblem(await postLink(link, {}, ''), 400, 'Validation.Failed');
    expect(Object.keys(empty.errors as object)).toEqual(['token']);
    expect(await consumedAt(user.id)).toBeNull();
    expect(await countRows(server, 'identity_sessions', { user_id: user.id })).toBe(0);
    // The link still works from its own page.
    expect((await postLink(link)).status).toBe(200);
  });

  it('signs in with a mailed code, stored only as an HMAC', async () => {
    const user = await seedUser(server.database.db);
    await expectAccepted(await requestCode({ email: user.email }));
    const code = await mailedCode(user.email);
    const row = await server.database.db('identity_passwordless_requests').where({ user_id: user.id, kind: 'code' }).first();
    expect(row.code_hash).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(row)).not.toContain(code);
    expect(new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()).toBe(10 * 60_000);

    const response = await verifyCode(user.email, code);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { userId: string; sessionId: string };
    expect(body).toEqual({ succeeded: true, userId: user.id, sessionId: expect.any(String) });
    expect(response.headers.get('set-cookie')).toContain('HttpOnly; Secure; SameSite=Lax; Path=/');
    expect((await server.fetch('/v1/identity/sessions', { headers: { cookie: sessionCookie(response) } })).status).toBe(200);
    await expectProblem(await verifyCode(user.email, code), 400, 'Passwordless.InvalidCode');
  });

  it('kills a code after 5 wrong attempts, and a new code replaces the old one', async () => {
    const user = await seedUser(server.database.db);
    await expectAccepted(await requestCode({ email: user.email }));
    const code = await mailedCode(user.email);
    for (let i = 0; i < 5; i++)
      await expectProblem(await verifyCode(user.email, wrongCode(code)), 400, 'Passwordless.InvalidCode');
    await expectProblem(await verifyCode(user.email, code), 400, 'Passwordless.InvalidCode');
    expect(await countRows(server, 'identity_sessions', { user_id: user.id })).toBe(0);

    await expectAccepted(await requestCode({ email: user.email }));
    const second = await mailedCode(user.email, 1);
    await expectAccepted(await requestCode({ email: user.email }));
    const third = await mailedCode(user.email, 2);
    if (second !== third) await expectProblem(await verifyCode(user.email, second), 400, 'Passwordless.InvalidCode');
    expect((await verifyCode(user.email, third)).status).toBe(200);
  });

  it('answers the same for unknown addresses, malformed codes aside', async () => {
    await expectAccepted(await requestLink({ email: 'nobody@example.com' }));
    await expectAccepted(await requestCode({ email: 'nobody@example.com' }));
    const deactivated = await seedUser(server.database.db, { status: 'deactivated' });
    await expectAccepted(await requestCode({ email: deactivated.email }));
    await expectProblem(await verifyCode('nobody@example.com', '123456'), 400, 'Passwordless.InvalidCode');
    await expectProblem(await verifyCode(deactivated.email, '123456'), 400, 'Passwordless.InvalidCode');
    const malformed = await expectProblem(await verifyCode('nobody@example.com', '12ab'), 400, 'Validation.Failed');
    expect(Object.keys(malformed.errors as object)).toEqual(['code']);
    await expectProblem(await requestCode({ email: 'not-an-address' }), 400, 'Validation.Failed');
    await expectProblem(await server.fetch('/v1/identity/auth/passwordless/magic-link/verify'), 400, 'Validation.Failed');
    // Real I/O: mail is written in the background (not awaited, so that the answer takes no longer when the
    // address has an account); this gives a wrongly sent message time to land in the mailbox directory.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await mailsTo(server, 'nobody@example.com')).toEqual([]);
    expect(await mailsTo(server, deactivated.email)).toEqual([]);
    expect(await countRows(server, 'identity_passwordless_requests', { user_id: deactivated.id })).toBe(0);
  });

  it('refuses a link of a user deactivated since the request', async () => {
    const user = await seedUser(server.database.db);
    await expectAccepted(await requestLink({ email: user.email }));
    const link = linkIn(await waitForMail(server, user.email, LINK));
    await server.database.db('identity_users').where({ id: user.id }).update({ status: 'deactivated' });
    await expectProblem(await postLink(link), 400, 'Passwordless.InvalidToken');
    expect(await countRows(server, 'identity_sessions', { user_id: user.id })).toBe(0);
    expect(Boolean((await server.database.db('identity_users').where({ id: user.id }).first()).email_verified)).toBe(false);
  });

  it('allows 3 requests per address per 15 minutes across links and codes', async () => {
    const user = await seedUser(server.database.db);
    await expectAccepted(await requestLink({ email: user.email }));
    await expectAccepted(await requestCode({ email: user.email }));
    await expectAccepted(await requestLink({ email: user.email.toUpperCase() }));
    for (const refused of [await requestCode({ email: user.email }), await requestLink({ email: user.email })]) {
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(800);
      expect(retryAfter).toBeLessThanOrEqual(900);
      await expectProblem(refused, 429, 'RateLimit.Exceeded');
    }
    expect(await countRows(server, 'identity_passwordless_requests', { user_id: user.id })).toBe(3);
    // Unknown addresses are counted the same way.
    for (let i = 0; i < 3; i++) await expectAccepted(await requestCode({ email: 'ghost@example.com' }));
    await expectProblem(await requestCode({ email: 'ghost@example.com' }), 429, 'RateLimit.Exceeded');
  });

  it('lets exactly one of several concurrent verifications win', async () => {
    const user = await seedUser(server.database.db);
    await expectAccepted(await requestLink({ email: user.email }));
    const link = linkIn(await waitForMail(server, user.email, LINK));
    const linkResults = await Promise.all(Array.from({ length: 5 }, () => postLink(link)));
    expect(linkResults.map((response) => response.status).sort()).toEqual([200, 400, 400, 400, 400]);

    await expectAccepted(await requestCode({ email: user.email }));
    const code = await mailedCode(user.email);
    const codeResults = await Promise.all(Array.from({ length: 4 }, () => verifyCode(user.email, code)));
    expect(codeResults.map((response) => response.status).sort()).toEqual([200, 400, 400, 400]);
    expect(await countRows(server, 'identity_sessions', { user_id: user.id })).toBe(2);
  });
});
