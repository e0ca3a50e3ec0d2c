import { createManualClock } from '@idt/core';
import {
  bearer,
  createTestIdt,
  mintAccessToken,
  seedMembership,
  seedTenant,
  seedUser,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, expectProblem, jsonInit, linkIn, mailsTo, waitForMail } from './credentials-support.js';

const CONFIRMATION = 'email-change-confirmation';
const NOTICE = 'email-changed-notice';

describe.each(testDialects())('e-mail change over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let tenant: Awaited<ReturnType<typeof seedTenant>>;
  // Link expiry reads this clock.
  const clock = createManualClock();

  const change = (headers: Record<string, string>, newEmail: unknown) =>
    server.fetch('/v1/identity/auth/change-email', jsonInit('POST', { newEmail }, headers));
  const asUser = async (userId: string) => ({ authorization: `Bearer ${await mintAccessToken(server, { sub: userId })}` });
  async function expectShort(response: Response, status: number, error?: string) {
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(error ? { succeeded: false, error } : { succeeded: true });
  }
  async function requestLink(userId: string, newEmail: string): Promise<string> {
    const already = (await mailsTo(server, newEmail, CONFIRMATION)).length;
    await expectShort(await change(await asUser(userId), newEmail), 200);
    return linkIn(await waitForMail(server, newEmail, CONFIRMATION, already));
  }

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    tenant = await seedTenant(server.database.db);
  });
  afterAll(async () => {
    await server.close();
  });

  it('works end to end through the development mailer', async () => {
    const { db } = server.database;
    const user = await seedUser(db, { email: 'grace@old.example', firstName: 'Grace' });
    await seedMembership(db, { userId: user.id, organizationId: tenant.organization.id });
    const token = await mintAccessToken(server, { sub: user.id, org_id: tenant.organization.id });

    await expectShort(await change(bearer(token), ' Grace@New.Example '), 200);
    const pending = await db('identity_email_changes').where({ user_id: user.id }).first();
    expect(pending).toMatchObject({ new_email: 'grace@new.example', consumed_at: null });
    const event = (await db('core_outbox_events').where({ type: 'UserEmailChangeRequestedEvent' })).find((row) =>
      String(row.payload).includes(user.id),
    );
    const payload = JSON.parse(event.payload) as Record<string, string>;
    expect(payload).toEqual({
      userId: user.id,
      changeId: pending.id,
      newEmail: 'grace@new.example',
      expiresAt: expect.stringMatching(/Z$/),
    });
    // A day from now, by the server's clock.
    expect(new Date(payload.expiresAt as string).getTime()).toBe(clock.now().getTime() + 86_400_000);

    const mail = await waitForMail(server, 'grace@new.example', CONFIRMATION);
    const link = linkIn(mail);
    const url = new URL(link);
    expect(`${url.origin}${url.pathname}`).toBe(`${server.url}/v1/identity/auth/confirm-email-change`);
    expect(url.searchParams.get('userId')).toBe(user.id);
    expect(url.searchParams.get('newEmail')).toBe('grace@new.example');
    expect(url.searchParams.get('token')).toMatch(new RegExp(`^${pending.id}\\.[A-Za-z0-9_-]{43}$`));
    // The token is derived, never stored or published.
    const token2 = url.searchParams.get('token') as string;
    expect(JSON.stringify(await db('identity_email_changes'))).not.toContain(token2.split('.')[1]);
    expect(event.payload).not.toContain(token2.split('.')[1]);

    await expectShort(await server.send(link), 200);
    const updated = await db('identity_users').where({ id: user.id }).first();
    expect(updated).toMatchObject({ email: 'grace@new.example', username: 'grace@new.example' });
    expect(Boolean(updated.email_verified)).toBe(true);
    const changed = await db('core_outbox_events').where({ type: 'UserEmailChangedEvent' });
    expect(changed.map((row) => JSON.parse(row.payload))).toContainEqual({
      userId: user.id,
      oldEmail: 'grace@old.example',
      newEmail: 'grace@new.example',
    });
    const notice = await waitForMail(server, 'grace@old.example', NOTICE);
    expect(notice.text).toContain('grace@new.example');

    // Existing tokens stay valid, and replaying the link fails.
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(token) })).status).toBe(200);
    await expectShort(await server.send(link), 400, 'invalid_token');
  });

  it('answers token_expired after 24 hours and clears the pending change', async () => {
    const user = await seedUser(server.database.db);
    const link = await requestLink(user.id, `late-${user.id.slice(-6)}@example.com`);
    clock.advance(86_400_000);
    await expectShort(await server.send(link), 400, 'token_expired');
    expect(await countRows(server, 'identity_email_changes', { user_id: user.id })).toBe(0);
    await expectShort(await server.send(link), 400, 'invalid_token');
    expect((await server.database.db('identity_users').where({ id: user.id }).first()).email).toBe(user.email);
  });

  it('refuses forged, mismatched, superseded and incomplete links with invalid_token', async () => {
    const user = await seedUser(server.database.db);
    const first = await requestLink(user.id, `first-${user.id.slice(-6)}@example.com`);
    const second = await requestLink(user.id, `second-${user.id.slice(-6)}@example.com`);
    await expectShort(await server.send(first), 400, 'invalid_token');

    const url = new URL(second);
    const variants = [
      (u: URL) => u.searchParams.set('token', `${u.searchParams.get('token')?.slice(0, -2)}AA`),
      (u: URL) => u.searchParams.set('userId', tenant.user.id),
      (u: URL) => u.searchParams.set('newEmail', 'someone@else.example'),
      (u: URL) => u.searchParams.delete('token'),
      (u: URL) => u.searchParams.set('token', 'garbage'),
    ];
    for (const mutate of variants) {
      const copy = new URL(url);
      mutate(copy);
      await expectShort(await server.send(copy), 400, 'invalid_token');
    }
    await expectShort(await server.send(second), 200);
  });

  it('lets only the first of two users claiming one address confirm it', async () => {
    const first = await seedUser(server.database.db);
    const second = await seedUser(server.database.db);
    const wanted = `contested-${first.id.slice(-6)}@example.com`;
    await expectShort(await change(await asUser(first.id), wanted), 200);
    await server.idt.infrastructure.events.dispatchPending();
    await expectShort(await change(await asUser(second.id), wanted), 200);
    const links = await Promise.all(
      [first, second].map(async (user) => {
        const row = await server.database.db('identity_email_changes').where({ user_id: user.id }).first();
        return server.idt.services.identity.credentials.emailChange.confirmationLink({
          id: row.id,
          userId: user.id,
          newEmail: wanted,
        });
      }),
    );
    await expectShort(await server.send(links[0] as string), 200);
    await expectShort(await server.send(links[1] as string), 400, 'invalid_token');
    expect((await server.database.db('identity_users').where({ id: second.id }).first()).email).toBe(second.email);
  });

  it('renders a small HTML page when the browser asks for HTML', async () => {
    const user = await seedUser(server.database.db);
    const link = await requestLink(user.id, `page-${user.id.slice(-6)}@example.com`);
    const accept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const page = await server.send(link, { headers: { accept } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<html lang="en">');
    expect(html).toMatch(/<h1>Your e-mail address is changed<\/h1>/);
    const again = await server.send(link, { headers: { accept } });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('This link does not work');
  });

  it('limits requests per user with a window anchored at the first request', async () => {
    const user = await seedUser(server.database.db);
    const headers = await asUser(user.id);
    for (let i = 0; i < 3; i++) await expectShort(await change(headers, `n${i}-${user.id.slice(-6)}@example.com`), 200);
    const refused = await change(headers, `n4-${user.id.slice(-6)}@example.com`);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    await expectShort(refused, 429, 'rate_limited');
    // Another user has their own window.
    await expectShort(await change(await asUser(tenant.owner.id), `fresh-${user.id.slice(-6)}@example.com`), 200);
  });

  it('answers same_email, Validation.Failed for a malformed address, and unauthorized without a signed-in user', async () => {
    const user = await seedUser(server.database.db, { email: 'same@example.com' });
    await expectShort(await change(await asUser(user.id), 'SAME@example.com'), 400, 'same_email');
    const problem = await expectProblem(await change(await asUser(user.id), 'not-an-address'), 400, 'Validation.Failed');
    expect(Object.keys(problem.errors as object)).toEqual(['newEmail']);
    expect(await countRows(server, 'identity_email_changes', { user_id: user.id })).toBe(0);

    await expectShort(await change({}, 'x@example.com'), 401, 'unauthorized');
    await expectShort(await change({ authorization: 'Bearer nonsense' }, 'x@example.com'), 401, 'unauthorized');
    const expired = await mintAccessToken(server, { sub: user.id }, { expiresIn: -600 });
    await expectShort(await change(bearer(expired), 'x@example.com'), 401, 'unauthorized');
    const service = await mintAccessToken(server, { sub: 'sa-robot', client_id: 'sa-robot' });
    await expectShort(await change(bearer(service), 'x@example.com'), 401, 'unauthorized');
  });

  it('answers 200 for an address another account uses, changing nothing and notifying that address', async () => {
    const user = await seedUser(server.database.db);
    const taken = tenant.admin.email;
    await expectShort(await change(await asUser(user.id), taken), 200);
    expect(await countRows(server, 'identity_email_changes', { user_id: user.id })).toBe(0);
    const notice = await waitForMail(server, taken, 'email-change-address-in-use');
    expect(notice.text).toContain('nothing has changed');
    expect(await mailsTo(server, taken, CONFIRMATION)).toEqual([]);
  });

  it('accepts the session cookie from the sign-in origin and refuses it cross-origin', async () => {
    const user = await seedUser(server.database.db, { email: `cookie-${Date.now()}@example.com` });
    await expectShort(await server.fetch('/v1/identity/auth/passwordless/code', jsonInit('POST', { email: user.email })), 202);
    const mail = await waitForMail(server, user.email, 'passwordless-code');
    const code = /\b(\d{6})\b/.exec(mail.text)?.[1];
    const verified = await server.fetch(
      '/v1/identity/auth/passwordless/code/verify',
      jsonInit('POST', { email: user.email, code }),
    );
    expect(verified.status).toBe(200);
    const cookie = (verified.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect(cookie).toMatch(/^idt_session=[A-Za-z0-9_-]{43}$/);

    const newEmail = `cookie-new-${Date.now()}@example.com`;
    const crossOrigin = await change({ cookie, origin: 'https://evil.example' }, newEmail);
    await expectProblem(crossOrigin, 403, 'Auth.Forbidden');
    await expectProblem(await change({ cookie }, newEmail), 403, 'Auth.Forbidden');
    expect(await countRows(server, 'identity_email_changes', { user_id: user.id })).toBe(0);

    await expectShort(await change({ cookie, origin: server.origin }, newEmail), 200);
    await expectShort(await server.send(linkIn(await waitForMail(server, newEmail, CONFIRMATION))), 200);
    // The session survives the change.
    expect((await server.fetch('/v1/identity/sessions', { headers: { cookie } })).status).toBe(200);
  });
});

describe('e-mail change with IDT_EMAIL_CHANGE_MAX_REQUESTS=0', () => {
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt({ env: { IDT_EMAIL_CHANGE_MAX_REQUESTS: '0' } });
    await seedTenant(server.database.db);
  });
  afterAll(async () => {
    await server.close();
  });

  it('refuses every request', async () => {
    const user = await seedUser(server.database.db);
    const token = await mintAccessToken(server, { sub: user.id });
    const response = await server.fetch(
      '/v1/identity/auth/change-email',
      jsonInit('POST', { newEmail: 'anything@example.com' }, { authorization: `Bearer ${token}` }),
    );
    expect(response.status).toBe(429);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await response.json()).toEqual({ succeeded: false, error: 'rate_limited' });
    expect(await countRows(server, 'identity_email_changes')).toBe(0);
  });
});
