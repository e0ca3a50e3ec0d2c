import { join } from 'node:path';
import { createManualClock, type ManualClock } from '@idt/core';
import { type MailboxMessage, readMailbox } from '@idt/core/mail';
import { Browser, bootstrapAdmin, registerUser, startTestServer, type TestServer, testDialects } from '@idt/testing';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet lantern orbit meadow';
const USER_AGENT = 'AuditFacts/1.0 (page test; +https://example.com/idt)';
/** The address a trusted proxy names in `x-forwarded-for` (TEST-NET-3). */
const FORWARDED_IP = '203.0.113.42';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

interface AuditRow {
  action: string;
  organization_id: string | null;
  actor_type: string;
  actor_id: string | null;
  target_type: string | null;
  target_id: string | null;
  outcome: string;
  ip: string | null;
  user_agent: string | null;
  trace_id: string | null;
}

/**
 * The account changes made on `@idt/oidc`'s server-rendered pages (the
 * password reset page a mailed link opens, the account pages' password,
 * two-step, session and e-mail forms) are recorded with the page request's
 * facts: the client address (the forwarded one behind the trusted proxy),
 * the browser's user agent and the `traceparent`'s trace id. The actor is
 * the user.
 */
describe.each(testDialects())('the request facts of account changes on the pages on %s', (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  let counter = 0;

  beforeAll(async () => {
    clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
    // Behind a trusted proxy: the first `x-forwarded-for` entry is the client.
    server = await startTestServer({ dialect, clock, env: { IDT_TRUST_PROXY: 'true' } });
    await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  const identity = () => server.idt.services.identity;
  const account = (path = '') => `${server.url}/connect/account${path}`;
  const codeFor = (secret: string) => generate({ secret, epoch: Math.floor(clock.now().getTime() / 1000) });

  /** The one record of `action` about `userId` (as actor), with the parts this test checks. */
  async function recordOf(action: string, userId: string): Promise<AuditRow> {
    const rows = (await server.database
      .db('core_audit_events')
      .where({ action, actor_id: userId })
      .orderBy('seq', 'asc')) as AuditRow[];
    expect(rows, `${action} records of ${userId}`).toHaveLength(1);
    return rows[0] as AuditRow;
  }

  /** A browser that sends the test's user agent and trace, and (`forwarded`) comes through the trusted proxy. */
  function browserOf(options: { forwarded?: boolean; traced?: boolean } = {}): Browser {
    return new Browser(
      {
        'user-agent': USER_AGENT,
        ...(options.forwarded ? { 'x-forwarded-for': `${FORWARDED_IP}, 10.0.0.1` } : {}),
        ...(options.traced === false ? {} : { traceparent: TRACEPARENT }),
      },
      server.send,
    );
  }

  /** A registered user with a sign-in session whose cookie `browser` holds (signed in just now). */
  async function signedIn(prefix: string, browser: Browser) {
    const email = `${prefix}-${++counter}-${dialect}@example.com`;
    const id = await registerUser(server, email, PASSWORD);
    const { sessions } = identity().credentials;
    const { cookieValue } = await sessions.start(id, { amr: ['pwd'] });
    browser.cookies(server.url).set(sessions.cookieName, cookieValue);
    return { id, email };
  }

  /** Waits (polling, up to 5 s) for the first mail of `template` to `to`. */
  async function mailTo(to: string, template: string): Promise<MailboxMessage> {
    const deadline = Date.now() + 5000;
    for (;;) {
      await server.idt.infrastructure.events.dispatchPending();
      const found = (await readMailbox(join(server.database.dataDir, 'mail'), { to })).find(
        (message) => message.headers['x-idt-template'] === template,
      );
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`No ${template} mail reached ${to}`);
      // Real I/O: the next look at the mailbox directory.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('records a reset on the password reset page with the forwarded client address, the user agent and the trace id', async () => {
    const email = `reset-${++counter}-${dialect}@example.com`;
    const userId = await registerUser(server, email, PASSWORD);
    await identity().passwords.reset.request({ email });
    const link = /https?:\/\/\S+/.exec((await mailTo(email, 'password-reset-link')).text)?.[0] as string;
    expect(link.startsWith(`${server.url}/connect/password-reset?token=`)).toBe(true);

    const browser = browserOf({ forwarded: true });
    const form = await browser.navigate(link);
    expect(form.status).toBe(200);
    // A refused password changes nothing and records nothing.
    const refused = await browser.submit({ fields: { password: 'password1234', confirm: 'password1234' } });
    expect(refused.status).toBe(422);
    expect(await server.database.db('core_audit_events').where({ action: 'identity.password.reset', actor_id: userId })).toEqual(
      [],
    );

    await browser.navigate(link);
    const done = await browser.submit({ fields: { password: NEW_PASSWORD, confirm: NEW_PASSWORD } });
    expect(done.status).toBe(200);
    expect(done.body).toContain('Your password is changed');
    expect(await recordOf('identity.password.reset', userId)).toMatchObject({
      organization_id: null,
      actor_type: 'user',
      target_type: 'user',
      target_id: userId,
      outcome: 'success',
      ip: FORWARDED_IP,
      user_agent: USER_AGENT,
      trace_id: TRACE_ID,
    });
  });

  it('records a password change on the account page with the peer address when no proxy names one', async () => {
    const browser = browserOf();
    const { id } = await signedIn('change', browser);
    expect((await browser.request(account('/password'))).status).toBe(200);
    const changed = await browser.submit({
      fields: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD },
      follow: false,
    });
    expect(changed.status).toBe(303);
    expect(await recordOf('identity.password.changed', id)).toMatchObject({
      actor_type: 'user',
      target_id: id,
      ip: '127.0.0.1',
      user_agent: USER_AGENT,
      trace_id: TRACE_ID,
    });
  });

  it('records the two-step changes on the account page (app added, new recovery codes, app removed) with the request’s facts', async () => {
    const browser = browserOf({ forwarded: true });
    const { id } = await signedIn('two-step', browser);
    const facts = { actor_type: 'user', target_id: id, ip: FORWARDED_IP, user_agent: USER_AGENT, trace_id: TRACE_ID };

    await browser.request(account('/two-step'));
    const setUp = await browser.submit({ form: '/two-step/begin' });
    const secret = (/id="totp-secret">([A-Z2-7 ]+)</.exec(setUp.body)?.[1] ?? '').replace(/ /g, '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const on = await browser.submit({ form: '/two-step/confirm', fields: { code: await codeFor(secret) } });
    expect(on.status).toBe(200);
    expect(await recordOf('identity.totp.added', id)).toMatchObject(facts);

    await browser.request(account('/two-step'));
    const codes = await browser.submit({ form: '/two-step/recovery-codes' });
    expect(codes.status).toBe(200);
    expect(codes.body).toContain('Your new recovery codes');
    expect(await recordOf('identity.recoveryCodes.regenerated', id)).toMatchObject(facts);

    await browser.request(account('/two-step'));
    const removed = await browser.submit({ form: '/two-step/remove', follow: false });
    expect(removed.status).toBe(303);
    expect((await identity().factors.status(id)).totp).toBe(false);
    expect(await recordOf('identity.totp.removed', id)).toMatchObject(facts);
  });

  it('records a session revoked and an e-mail change asked for on the account page with the request’s facts; no trace id without a traceparent', async () => {
    const browser = browserOf({ forwarded: true, traced: false });
    const { id } = await signedIn('sessions', browser);
    const other = await identity().credentials.sessions.start(id, { amr: ['pwd'] });

    const page = await browser.request(account());
    expect(page.body).toContain(`value="${other.session.id}"`);
    const revoked = await browser.submit({
      form: '/sessions/revoke',
      fields: { session: other.session.id },
      follow: false,
    });
    expect(revoked.status).toBe(303);
    expect(await recordOf('identity.session.revoked', id)).toMatchObject({
      target_id: other.session.id,
      ip: FORWARDED_IP,
      user_agent: USER_AGENT,
      trace_id: null,
    });

    await browser.request(account());
    const asked = await browser.submit({
      form: '/connect/account/email',
      fields: { email: `moved-${counter}-${dialect}@example.com` },
      follow: false,
    });
    expect(asked.status).toBe(303);
    expect(await recordOf('identity.emailChange.requested', id)).toMatchObject({
      target_id: id,
      ip: FORWARDED_IP,
      user_agent: USER_AGENT,
      trace_id: null,
    });
  });
});
