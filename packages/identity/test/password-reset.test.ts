import { createManualClock } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import {
  bearer,
  bootstrapAdmin,
  createTestIdt,
  mintAccessToken,
  registerUser,
  seedUser,
  startTestServer,
  type TestHost,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, expectProblem, jsonInit, linkIn, mailsTo, waitForMail } from './credentials-support.js';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet lantern orbit meadow';
const LINK = 'password-reset-link';

const post = (server: TestHost, path: string, body: unknown, headers: Record<string, string> = {}) =>
  server.fetch(path, jsonInit('POST', body, headers));
const requestReset = (server: TestHost, email: unknown) => post(server, '/v1/identity/auth/password-reset', { email });
const confirm = (server: TestHost, token: string, newPassword: unknown) =>
  post(server, '/v1/identity/auth/password-reset/confirm', { token, newPassword });
const tokenOf = (link: string) => new URL(link).searchParams.get('token') as string;

/** Asks for a link for `email` and returns it from the mail catcher. */
async function resetLink(server: TestServer, email: string): Promise<string> {
  const already = (await mailsTo(server, email, LINK)).length;
  expect((await requestReset(server, email)).status).toBe(202);
  return linkIn(await waitForMail(server, email, LINK, already));
}

describe.each(testDialects())('forgotten passwords over HTTP on %s', (dialect) => {
  let server: TestServer;
  const clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  let counter = 0;
  const fresh = async (prefix: string) => {
    const email = `${prefix}-${++counter}-${dialect}@example.com`;
    return { email, id: await registerUser(server, email, PASSWORD) };
  };
  const signInWorks = (email: string, password: string) =>
    server.idt.services.identity.signIn.authenticate(email, password).then((id) => id !== undefined);

  beforeAll(async () => {
    server = await startTestServer({ dialect, clock, env: { IDT_PASSWORD_RESET_IP_MAX_REQUESTS: '100000' } });
    await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('mails a single-use link that sets the password and ends every session and token', async () => {
    const { db } = server.database;
    const user = await fresh('ada');
    const sessions = server.idt.services.identity.credentials.sessions;
    const before = await sessions.start(user.id, { amr: ['pwd'] });
    const token = await mintAccessToken(server, { sub: user.id, sid: before.session.id });
    const looseToken = await mintAccessToken(server, { sub: user.id });
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(looseToken) })).status).toBe(200);

    const response = await requestReset(server, user.email.toUpperCase());
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ succeeded: true });
    const mail = await waitForMail(server, user.email, LINK);
    const link = linkIn(mail);
    expect(link.startsWith(`${server.url}/connect/password-reset?token=`)).toBe(true);
    const secret = tokenOf(link);
    // Stored only as a hash; never in the outbox.
    const row = await db('identity_password_resets').where({ user_id: user.id }).first();
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(secret.split('.')[1]);
    const events = await db('core_outbox_events').where({ type: 'UserPasswordResetRequestedEvent' });
    expect(JSON.stringify(events)).not.toContain(secret.split('.')[1]);
    expect(events.map((event) => JSON.parse(event.payload))).toContainEqual({
      userId: user.id,
      resetId: row.id,
      expiresAt: new Date(clock.now().getTime() + 3_600_000).toISOString(),
    });

    expect((await confirm(server, secret, NEW_PASSWORD)).status).toBe(204);
    expect(await signInWorks(user.email, PASSWORD)).toBe(false);
    expect(await signInWorks(user.email, NEW_PASSWORD)).toBe(true);
    expect(Boolean((await db('identity_users').where({ id: user.id }).first()).email_verified)).toBe(true);
    // Every session and access token of the user ended.
    expect(await sessions.list(user.id)).toEqual([]);
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(token) })).status).toBe(401);
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(looseToken) })).status).toBe(401);
    clock.advance(1000);
    const after = await mintAccessToken(server, { sub: user.id });
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(after) })).status).toBe(200);

    // The link works once.
    await expectProblem(await confirm(server, secret, 'another fine passphrase here'), 400, 'PasswordReset.InvalidToken');
    expect(await signInWorks(user.email, NEW_PASSWORD)).toBe(true);

    // The event, the notice mail and the in-app alert.
    const reset = await db('core_outbox_events').where({ type: 'UserPasswordResetEvent' });
    expect(reset.map((event) => JSON.parse(event.payload))).toContainEqual({
      userId: user.id,
      email: user.email,
      resetAt: expect.stringMatching(/Z$/),
      by: 'link',
    });
    const notice = await waitForMail(server, user.email, 'password-reset-notice');
    expect(notice.subject).toBe('Your password was reset');
    await server.idt.infrastructure.events.dispatchPending();
    const alerts = await db('notifications').where({ user_id: user.id, type: 'SecurityAlert' });
    expect(alerts.map((alert) => alert.title)).toContain('Your password was reset');
  });

  it('expires the link after one hour on the manual clock', async () => {
    const user = await fresh('late');
    const link = await resetLink(server, user.email);
    clock.advance(3_600_000);
    await expectProblem(await confirm(server, tokenOf(link), NEW_PASSWORD), 400, 'PasswordReset.TokenExpired');
    expect(await countRows(server, 'identity_password_resets', { user_id: user.id })).toBe(0);
    await expectProblem(await confirm(server, tokenOf(link), NEW_PASSWORD), 400, 'PasswordReset.InvalidToken');
    expect(await signInWorks(user.email, PASSWORD)).toBe(true);
  });

  it('refuses forged, replaced and another user’s tokens, changing nothing', async () => {
    const alice = await fresh('alice');
    const bob = await fresh('bob');
    const first = tokenOf(await resetLink(server, alice.email));
    const second = tokenOf(await resetLink(server, alice.email));
    const bobs = tokenOf(await resetLink(server, bob.email));
    // A newer link replaces the older one.
    await expectProblem(await confirm(server, first, NEW_PASSWORD), 400, 'PasswordReset.InvalidToken');
    const [aliceId = '', aliceMac = ''] = second.split('.');
    const [bobId = '', bobMac = ''] = bobs.split('.');
    for (const forged of [
      `${bobId}.${aliceMac}`,
      `${aliceId}.${bobMac}`,
      `${aliceId}.${aliceMac.slice(0, -2)}AA`,
      'garbage',
      `${aliceId}`,
      'x'.repeat(512),
    ]) {
      await expectProblem(await confirm(server, forged, NEW_PASSWORD), 400, 'PasswordReset.InvalidToken');
    }
    await expectProblem(await confirm(server, 'x'.repeat(513), NEW_PASSWORD), 400, 'Validation.Failed');
    expect(await signInWorks(alice.email, PASSWORD)).toBe(true);
    expect(await signInWorks(bob.email, PASSWORD)).toBe(true);
    // Bob's token sets Bob's password, never Alice's.
    expect((await confirm(server, bobs, NEW_PASSWORD)).status).toBe(204);
    expect(await signInWorks(alice.email, PASSWORD)).toBe(true);
    expect(await signInWorks(bob.email, NEW_PASSWORD)).toBe(true);
  });

  it('applies the password policy and leaves the link usable after a refusal', async () => {
    const user = await fresh('grace');
    const token = tokenOf(await resetLink(server, user.email));
    const refusals: Array<[unknown, number, string, string?]> = [
      ['short', 422, 'Identity.PasswordRejected', 'at least 12 characters'],
      ['password1234', 422, 'Identity.PasswordRejected', 'one of the most common passwords'],
      ['aaaaaaaaaaaaaaaa', 422, 'Identity.PasswordRejected', 'too easy to guess'],
      [`${user.email.split('@')[0]} and more words`, 422, 'Identity.PasswordRejected', 'your e-mail address'],
      ['x'.repeat(10 * 1024), 400, 'Validation.Failed'],
      ['é'.repeat(257), 422, 'Identity.PasswordRejected', 'at most 256 characters'],
      [42, 400, 'Validation.Failed'],
    ];
    for (const [password, status, code, reason] of refusals) {
      const body = await expectProblem(await confirm(server, token, password), status, code);
      if (reason) {
        expect((body.reasons as string[]).join(' ')).toContain(reason);
        expect(body.errors).toEqual({ newPassword: body.reasons });
      }
    }
    expect(await signInWorks(user.email, PASSWORD)).toBe(true);
    // NFKC: the full-width form is the same password as the ASCII one.
    const fullWidth = 'ｖｉｏｌｅｔ ｌａｎｔｅｒｎ ｏｒｂｉｔ ｍｅａｄｏｗ';
    expect((await confirm(server, token, fullWidth)).status).toBe(204);
    expect(await signInWorks(user.email, NEW_PASSWORD)).toBe(true);
    expect(await signInWorks(user.email, fullWidth)).toBe(true);
  });

  it('answers the same whether or not the address has an account, and limits each address to 3 per 15 minutes', async () => {
    const user = await fresh('same');
    const deactivated = await seedUser(server.database.db, { status: 'deactivated' });
    const unknown = `nobody-${dialect}@example.com`;
    const answers = [];
    for (const email of [user.email, unknown, deactivated.email]) {
      const response = await requestReset(server, email);
      answers.push({ status: response.status, body: await response.text(), cache: response.headers.get('cache-control') });
    }
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
    await server.idt.infrastructure.events.dispatchPending();
    expect(await mailsTo(server, unknown)).toEqual([]);
    expect(await mailsTo(server, deactivated.email)).toEqual([]);

    const limited = [];
    for (const email of [user.email, unknown]) {
      expect((await requestReset(server, email)).status).toBe(202);
      expect((await requestReset(server, email)).status).toBe(202);
      const refused = await requestReset(server, email);
      const body = await expectProblem(refused, 429, 'RateLimit.Exceeded');
      limited.push({ retryAfter: refused.headers.get('retry-after'), detail: body.detail });
    }
    expect(limited[0]).toEqual(limited[1]);
    clock.advance(15 * 60_000);
    expect((await requestReset(server, user.email)).status).toBe(202);
    await expectProblem(await requestReset(server, 'not an address'), 400, 'Validation.Failed');
  });
});

describe.each(testDialects())('password change over HTTP on %s', (dialect) => {
  let server: TestServer;
  const clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);

  beforeAll(async () => {
    server = await startTestServer({ dialect, clock });
    await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  const change = (token: string, body: unknown) => post(server, '/v1/identity/auth/change-password', body, bearer(token));

  it('needs the current password, applies the policy, and ends only the other sessions', async () => {
    const email = `change-${dialect}@example.com`;
    const userId = await registerUser(server, email, PASSWORD);
    const sessions = server.idt.services.identity.credentials.sessions;
    const current = await sessions.start(userId, { amr: ['pwd'] });
    const other = await sessions.start(userId, { amr: ['pwd'] });
    const token = await mintAccessToken(server, { sub: userId, sid: current.session.id });
    const otherToken = await mintAccessToken(server, { sub: userId, sid: other.session.id });

    await expectProblem(
      await change(token, { currentPassword: 'not my password', newPassword: NEW_PASSWORD }),
      400,
      'PasswordChange.WrongPassword',
    );
    const weak = await expectProblem(
      await change(token, { currentPassword: PASSWORD, newPassword: 'password1234' }),
      422,
      'Identity.PasswordRejected',
    );
    expect(weak.reasons).toEqual([expect.stringContaining('common')]);
    await expectProblem(await change(token, { currentPassword: PASSWORD }), 400, 'Validation.Failed');
    expect((await sessions.list(userId)).length).toBe(2);

    expect((await change(token, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })).status).toBe(204);
    expect((await sessions.list(userId)).map((session) => session.id)).toEqual([current.session.id]);
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(token) })).status).toBe(200);
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(otherToken) })).status).toBe(401);
    expect(await server.idt.services.identity.signIn.authenticate(email, NEW_PASSWORD)).toBe(userId);
    expect(await server.idt.services.identity.signIn.authenticate(email, PASSWORD)).toBeUndefined();

    const notice = await waitForMail(server, email, 'password-changed-notice');
    expect(notice.subject).toBe('Your password was changed');
    const changed = await server.database.db('core_outbox_events').where({ type: 'UserPasswordChangedEvent' });
    expect(changed.map((event) => JSON.parse(event.payload))).toContainEqual({
      userId,
      email,
      changedAt: expect.stringMatching(/Z$/),
    });
    const revoked = await server.database.db('core_outbox_events').where({ type: 'UserSessionRevokedEvent' });
    expect(revoked.map((event) => JSON.parse(event.payload))).toContainEqual(
      expect.objectContaining({ sessionId: other.session.id, reason: 'password-changed' }),
    );
  });

  it('lists the routes in the OpenAPI document and the events in the AsyncAPI catalog', async () => {
    const openapi = (await (await server.fetch('/openapi/v1.json')).json()) as { paths: Record<string, any> };
    expect(openapi.paths['/v1/identity/auth/password-reset']?.post.operationId).toBe('requestPasswordReset');
    expect(openapi.paths['/v1/identity/auth/password-reset/confirm']?.post.operationId).toBe('confirmPasswordReset');
    expect(openapi.paths['/v1/identity/auth/change-password']?.post.operationId).toBe('changePassword');
    // The module's events are what the AsyncAPI catalog lists.
    expect(server.idt.services.identity.events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['UserPasswordResetRequestedEvent', 'UserPasswordResetEvent', 'UserPasswordChangedEvent']),
    );
  });

  it('refuses anonymous callers and limits attempts to 5 per 15 minutes', async () => {
    await expectProblem(
      await post(server, '/v1/identity/auth/change-password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }),
      401,
      'Auth.Unauthenticated',
    );
    const email = `tries-${dialect}@example.com`;
    const userId = await registerUser(server, email, PASSWORD);
    const token = await mintAccessToken(server, { sub: userId });
    for (let attempt = 0; attempt < 5; attempt++) {
      await expectProblem(
        await change(token, { currentPassword: `wrong ${attempt}`, newPassword: NEW_PASSWORD }),
        400,
        'PasswordChange.WrongPassword',
      );
    }
    await expectProblem(await change(token, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD }), 429, 'RateLimit.Exceeded');
    clock.advance(15 * 60_000);
    const fresh = await mintAccessToken(server, { sub: userId });
    expect((await change(fresh, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })).status).toBe(204);
  });
});

describe('password reset requests per client address', () => {
  it('limits one client address, whatever the e-mail addresses', async () => {
    const server = await createTestIdt({ env: { IDT_PASSWORD_RESET_IP_MAX_REQUESTS: '2' } });
    try {
      await bootstrapAdmin(server);
      expect((await requestReset(server, 'one@example.com')).status).toBe(202);
      expect((await requestReset(server, 'two@example.com')).status).toBe(202);
      const refused = await requestReset(server, 'three@example.com');
      await expectProblem(refused, 429, 'RateLimit.Exceeded');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });

  it('answers 503 when no module mails the links', async () => {
    const server = await createTestIdt({ modules: [identity(), oidc()] as const });
    try {
      await bootstrapAdmin(server as unknown as TestHost);
      await expectProblem(await requestReset(server as unknown as TestHost, 'one@example.com'), 503, 'PasswordReset.Unavailable');
    } finally {
      await server.close();
    }
  });
});
