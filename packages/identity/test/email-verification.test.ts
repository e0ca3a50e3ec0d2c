import { createManualClock } from '@idt/core';
import { bearer, createTestIdt, mintAccessToken, seedTenant, seedUser, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, jsonInit, linkIn, mailsTo, waitForMail } from './credentials-support.js';

const TEMPLATE = 'email-verification-link';
const PASSWORD = 'correct horse battery staple';

describe.each(testDialects())('verified e-mail addresses over HTTP on %s', (dialect) => {
  let server: TestIdt;
  // Link expiry and the resend window read this clock.
  const clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  let serial = 0;

  const register = (email: string) =>
    server.fetch(
      '/v1/identity/auth/register',
      jsonInit('POST', { email, password: PASSWORD, firstName: 'Vera', lastName: 'Ified' }),
    );
  const confirm = (token: unknown) => server.fetch('/v1/identity/auth/verify-email', jsonInit('POST', { token }));
  const resend = (body: unknown, headers: Record<string, string> = {}) =>
    server.fetch(
      '/v1/identity/auth/verify-email/resend',
      body === undefined ? { method: 'POST', headers } : jsonInit('POST', body, headers),
    );
  const tokenOf = (link: string) => new URL(link).searchParams.get('token') as string;
  const verifiedFlag = async (userId: string) =>
    Boolean((await server.database.db('identity_users').where({ id: userId }).first('email_verified')).email_verified);
  async function registered(): Promise<{ userId: string; email: string; link: string }> {
    const email = `vera.${++serial}@example.com`;
    const response = await register(email);
    expect(response.status, await response.clone().text()).toBe(201);
    const { userId } = (await response.json()) as { userId: string };
    const link = linkIn(await waitForMail(server, email, TEMPLATE));
    return { userId, email, link };
  }

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    // Seeding an owner ends setup mode.
    await seedTenant(server.database.db);
  });
  afterAll(async () => {
    await server.close();
  });

  it('mails a single-use link after registration; the token is stored only as a hash', async () => {
    const { db } = server.database;
    const { userId, email, link } = await registered();
    const url = new URL(link);
    expect(`${url.origin}${url.pathname}`).toBe(`${server.url}/connect/verify-email`);
    const row = await db('identity_email_verifications').where({ user_id: userId }).first();
    expect(row).toMatchObject({ email, consumed_at: null });
    const token = tokenOf(link);
    expect(token).toMatch(new RegExp(`^${row.id}\\.[A-Za-z0-9_-]{43}$`));
    const { createHash } = await import('node:crypto');
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    const mac = token.split('.')[1] as string;
    expect(JSON.stringify(await db('identity_email_verifications'))).not.toContain(mac);
    const [event] = (await db('core_outbox_events').where({ type: 'UserEmailVerificationRequestedEvent' })).filter((event) =>
      String(JSON.stringify(event.payload)).includes(userId),
    );
    expect(JSON.stringify(event.payload)).not.toContain(mac);
    const payload = typeof event.payload === 'string' ? JSON.parse(event.payload) : event.payload;
    expect(payload).toEqual({ userId, verificationId: row.id, email, expiresAt: expect.stringMatching(/Z$/) });
    expect(new Date(payload.expiresAt).getTime()).toBe(clock.now().getTime() + 86_400_000);
    const mail = (await mailsTo(server, email, TEMPLATE))[0];
    expect(mail?.subject).toBe('Verify your e-mail address');
    expect(mail?.html).toContain('verify your e-mail address');

    expect(await verifiedFlag(userId)).toBe(false);
    const response = await confirm(token);
    expect(response.status).toBe(204);
    expect(await verifiedFlag(userId)).toBe(true);
    const me = await server.fetch('/v1/identity/users/me', { headers: bearer(await mintAccessToken(server, { sub: userId })) });
    expect(((await me.json()) as { emailVerified: boolean }).emailVerified).toBe(true);
    const verified = await db('core_outbox_events').where({ type: 'UserEmailVerifiedEvent' });
    expect(verified.map((row) => (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload))).toContainEqual({
      userId,
      email,
      verifiedAt: clock.now().toISOString(),
    });
    // Single use.
    await expectProblem(await confirm(token), 400, 'EmailVerification.InvalidToken');
    expect(await server.idt.services.identity.verification.email.isVerified(userId)).toBe(true);
  });

  it('stops working after 24 hours', async () => {
    const { userId, link } = await registered();
    clock.advance(86_400_000 - 1000);
    expect(await server.idt.services.identity.verification.email.inspect(tokenOf(link))).toBe('valid');
    clock.advance(1000);
    expect(await server.idt.services.identity.verification.email.inspect(tokenOf(link))).toBe('expired');
    await expectProblem(await confirm(tokenOf(link)), 400, 'EmailVerification.TokenExpired');
    // Expired links are deleted: the next try is just invalid.
    await expectProblem(await confirm(tokenOf(link)), 400, 'EmailVerification.InvalidToken');
    expect(await verifiedFlag(userId)).toBe(false);
  });

  it('refuses forged, malformed and foreign tokens without changing anything', async () => {
    const { userId, link } = await registered();
    const token = tokenOf(link);
    const [id, mac] = token.split('.') as [string, string];
    const forged = `${id}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const bad of [forged, `${id}`, 'garbage', `00000000-0000-4000-8000-000000000000.${mac}`, ' ', '\u0000']) {
      await expectProblem(await confirm(bad), 400, bad === '\u0000' ? 'Validation.Failed' : 'EmailVerification.InvalidToken');
    }
    await expectProblem(await confirm('x'.repeat(513)), 400, 'Validation.Failed');
    await expectProblem(await confirm(42), 400, 'Validation.Failed');
    const extra = await server.fetch('/v1/identity/auth/verify-email', jsonInit('POST', { token, other: 1 }));
    await expectProblem(extra, 400, 'Validation.Failed');
    // Another token purpose (an e-mail change link's MAC) is no verification token.
    const { createTokenMac } = await import('@idt/identity');
    await expectProblem(
      await confirm(createTokenMac('not the server secret').issue('email-verification', id)),
      400,
      'EmailVerification.InvalidToken',
    );
    expect(await verifiedFlag(userId)).toBe(false);
    expect(await server.idt.services.identity.verification.email.inspect(token)).toBe('valid');
  });

  it('lets exactly one of two concurrent uses win', async () => {
    const { userId, link } = await registered();
    const results = await Promise.all([confirm(tokenOf(link)), confirm(tokenOf(link))]);
    expect(results.map((response) => response.status).sort()).toEqual([204, 400]);
    expect(await verifiedFlag(userId)).toBe(true);
  });

  it('refuses a link once the account uses another address', async () => {
    const { userId, link } = await registered();
    await server.database
      .db('identity_users')
      .where({ id: userId })
      .update({ email: `moved.${serial}@example.com` });
    await expectProblem(await confirm(tokenOf(link)), 400, 'EmailVerification.InvalidToken');
    expect(await verifiedFlag(userId)).toBe(false);
  });

  it('resends for the signed-in user: the new link replaces the old, limited per address', async () => {
    const { userId, email, link: first } = await registered();
    const { authorization } = bearer(await mintAccessToken(server, { sub: userId }));
    const headers = { authorization } as Record<string, string>;
    const accepted = await resend(undefined, headers);
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toEqual({ succeeded: true });
    const second = linkIn(await waitForMail(server, email, TEMPLATE, 1));
    expect(second).not.toBe(first);
    await expectProblem(await confirm(tokenOf(first)), 400, 'EmailVerification.InvalidToken');
    expect((await resend({}, headers)).status).toBe(202);
    const third = linkIn(await waitForMail(server, email, TEMPLATE, 2));
    expect((await resend(undefined, headers)).status).toBe(202);
    const fourth = linkIn(await waitForMail(server, email, TEMPLATE, 3));
    const limited = await resend(undefined, headers);
    await expectProblem(limited, 429, 'RateLimit.Exceeded');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    await expectProblem(await confirm(tokenOf(third)), 400, 'EmailVerification.InvalidToken');
    expect((await confirm(tokenOf(fourth))).status).toBe(204);
    clock.advance(15 * 60_000);
    await expectProblem(await resend(undefined, headers), 409, 'EmailVerification.AlreadyVerified');
  });

  it('resends by address with the same answer whatever the address', async () => {
    const { db } = server.database;
    const { userId, email } = await registered();
    const verifiedUser = await seedUser(db, { email: `verified.${serial}@example.com` });
    await db('identity_users').where({ id: verifiedUser.id }).update({ email_verified: true });
    const deactivated = await seedUser(db, { email: `gone.${serial}@example.com` });
    await db('identity_users').where({ id: deactivated.id }).update({ status: 'deactivated' });
    const answers = [];
    for (const address of [` ${email.toUpperCase()} `, 'nobody.here@example.com', verifiedUser.email, deactivated.email]) {
      const response = await resend({ email: address });
      answers.push({ status: response.status, body: await response.json() });
    }
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
    expect(answers[0]).toEqual({ status: 202, body: { succeeded: true } });
    await waitForMail(server, email, TEMPLATE, 1);
    await server.idt.infrastructure.events.dispatchPending();
    for (const address of ['nobody.here@example.com', verifiedUser.email, deactivated.email]) {
      expect(await mailsTo(server, address, TEMPLATE)).toEqual([]);
    }
    // Counted per address whether or not an account uses it.
    for (let i = 0; i < 2; i++) expect((await resend({ email: 'nobody.here@example.com' })).status).toBe(202);
    await expectProblem(await resend({ email: 'nobody.here@example.com' }), 429, 'RateLimit.Exceeded');
    expect(await verifiedFlag(userId)).toBe(false);
  });

  it('refuses bad resend bodies, and an anonymous call without an address', async () => {
    for (const body of [{ email: 'not an address' }, { email: 42 }, { email: 'a@example.com', extra: true }, [], 'x']) {
      await expectProblem(await resend(body), 400, 'Validation.Failed');
    }
    await expectProblem(await resend(undefined), 401, 'Auth.Unauthenticated');
    await expectProblem(await resend({}), 401, 'Auth.Unauthenticated');
    const malformed = await server.fetch('/v1/identity/auth/verify-email/resend', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"email":',
    });
    await expectProblem(malformed, 400, 'Http.ClientError');
  });

  it('records one link when the registration event is delivered twice', async () => {
    const { db } = server.database;
    const user = await seedUser(db, { email: `twice.${++serial}@example.com` });
    const verification = server.idt.services.identity.verification.email;
    expect(await verification.request(user.id, { ifNoneWorking: true })).toBe('requested');
    expect(await verification.request(user.id, { ifNoneWorking: true })).toBe('pending');
    expect(await db('identity_email_verifications').where({ user_id: user.id })).toHaveLength(1);
    await db('identity_users').where({ id: user.id }).update({ email_verified: true });
    expect(await verification.request(user.id)).toBe('verified');
    expect(await verification.request('00000000-0000-4000-8000-000000000000')).toBe('inactive');
  });

  it('documents its routes and events', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as { paths: Record<string, any> };
    expect(document.paths['/v1/identity/auth/verify-email/resend']?.post.operationId).toBe('resendEmailVerification');
    expect(document.paths['/v1/identity/auth/verify-email']?.post.operationId).toBe('confirmEmailVerification');
    const events = server.idt.services.identity.events.map((event) => event.type);
    expect(events).toEqual(expect.arrayContaining(['UserEmailVerificationRequestedEvent', 'UserEmailVerifiedEvent']));
  });
});
