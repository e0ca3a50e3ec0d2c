import { type ProblemError, toProblemError } from '@idt/problem';
import {
  Browser,
  bearer,
  bootstrapAdmin,
  createSkippingClock,
  discover,
  mintAccessToken,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  registerUser,
  seedMembership,
  seedUser,
  signIn,
  startTestServer,
  type TestAdmin,
  type TestClient,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, jsonInit, linkIn, waitForMail } from './credentials-support.js';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet lantern orbit meadow';
const REDIRECT = 'http://127.0.0.1:9/callback';
const SCOPE = 'openid email offline_access';

describe.each(testDialects())('an operator’s password reset on %s', (dialect) => {
  let server: TestServer;
  let admin: TestAdmin;
  let client: TestClient;
  const clock = createSkippingClock();
  let counter = 0;

  const operatorReset = (userId: string, password: unknown) =>
    server.idt.services.identity.passwords.reset.setByOperator(userId, password as string);
  const signInWorks = (email: string, password: string) =>
    server.idt.services.identity.signIn.authenticate(email, password).then((id) => id !== undefined);
  /** The `UserPasswordResetEvent` payloads of `userId` in the outbox. */
  const resetEvents = async (userId: string) =>
    (await server.database.db('core_outbox_events').where({ type: 'UserPasswordResetEvent' }))
      .map((event) => JSON.parse(event.payload))
      .filter((payload) => payload.userId === userId);

  /** A self-registered member of the application's organization. */
  async function member(prefix: string) {
    const email = `${prefix}-${++counter}-${dialect}@example.com`;
    const id = await registerUser(server, email, PASSWORD);
    await seedMembership(server.database.db, { userId: id, organizationId: admin.organizationId });
    return { email, id };
  }

  beforeAll(async () => {
    server = await startTestServer({ dialect, clock, env: { IDT_PASSWORD_RESET_IP_MAX_REQUESTS: '100000' } });
    admin = await bootstrapAdmin(server);
    client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Operator reset app',
      redirectUris: [REDIRECT],
      scopes: ['openid', 'email', 'offline_access'],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('sets the password and ends every session, refresh token, access token and reset link, publishing the event once', async () => {
    const user = await member('ops');
    const config = await discover(server, client);
    const signedIn = await signIn(config, { redirectUri: REDIRECT, scope: SCOPE, email: user.email, password: PASSWORD });
    if (signedIn.callback.searchParams.has('error')) throw new Error(signedIn.callback.href);
    const tokens = await redeemCode(config, signedIn);
    const refreshToken = tokens.refresh_token as string;
    expect(refreshToken).toBeTruthy();
    const account = `${server.url}/connect/account`;
    expect((await signedIn.browser.request(account)).status).toBe(200);
    const sessions = server.idt.services.identity.credentials.sessions;
    const started = await sessions.start(user.id, { amr: ['pwd'] });
    const sessionToken = await mintAccessToken(server, { sub: user.id, sid: started.session.id });
    const looseToken = await mintAccessToken(server, { sub: user.id });
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(looseToken) })).status).toBe(200);
    // A reset link asked for before stops working too.
    const asked = await server.fetch('/v1/identity/auth/password-reset', jsonInit('POST', { email: user.email }));
    expect(asked.status).toBe(202);
    const token = new URL(linkIn(await waitForMail(server, user.email, 'password-reset-link'))).searchParams.get('token');
    clock.advance(1000);

    expect(await operatorReset(user.id, NEW_PASSWORD)).toEqual({ userId: user.id, email: user.email });

    expect(await signInWorks(user.email, PASSWORD)).toBe(false);
    expect(await signInWorks(user.email, NEW_PASSWORD)).toBe(true);
    expect(await sessions.list(user.id)).toEqual([]);
    const revoked = await server.database.db('identity_sessions').where({ id: started.session.id }).first();
    expect(revoked.revoked_reason).toBe('operator-reset');
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(sessionToken) })).status).toBe(401);
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(looseToken) })).status).toBe(401);
    await expectProblem(
      await server.fetch(
        '/v1/identity/auth/password-reset/confirm',
        jsonInit('POST', { token, newPassword: 'another fine passphrase' }),
      ),
      400,
      'PasswordReset.InvalidToken',
    );
    // The provider ends the single sign-on session and every grant on the event.
    await server.idt.infrastructure.events.dispatchPending();
    expect((await signedIn.browser.request(account)).status).toBe(401);
    expect((await refreshTokenRequest(server, client, refreshToken)).status).toBe(400);
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(tokens.access_token) })).status).toBe(401);

    // One event, marked as an operator's; the address is not marked verified (no mail proved it).
    expect(await resetEvents(user.id)).toEqual([
      { userId: user.id, email: user.email, resetAt: expect.stringMatching(/Z$/), by: 'operator' },
    ]);
    expect(Boolean((await server.database.db('identity_users').where({ id: user.id }).first()).email_verified)).toBe(false);
    expect((await waitForMail(server, user.email, 'password-reset-notice')).subject).toBe('Your password was reset');
    const alerts = await server.database.db('notifications').where({ user_id: user.id, type: 'SecurityAlert' });
    expect(alerts.map((alert) => alert.title)).toContain('Your password was reset');

    // Tokens issued afterwards work.
    clock.advance(1000);
    const later = await mintAccessToken(server, { sub: user.id });
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(later) })).status).toBe(200);
    const again = await signIn(config, {
      redirectUri: REDIRECT,
      scope: SCOPE,
      email: user.email,
      password: NEW_PASSWORD,
      browser: new Browser(),
    });
    expect((await redeemCode(config, again)).access_token).toBeTruthy();
  });

  it('refuses a password the policy refuses, changing nothing', async () => {
    const user = await member('weak');
    const sessions = server.idt.services.identity.credentials.sessions;
    await sessions.start(user.id, { amr: ['pwd'] });
    const refusals: Array<[unknown, string, string?]> = [
      ['password1234', 'Identity.PasswordRejected', 'one of the most common passwords'],
      ['aaaaaaaaaaaaaaaa', 'Identity.PasswordRejected', 'too easy to guess'],
      [`${user.email.split('@')[0]} and more words`, 'Identity.PasswordRejected', 'your e-mail address'],
      ['short', 'Identity.PasswordRejected', 'at least 12 characters'],
      ['', 'Validation.Failed'],
      [42, 'Validation.Failed'],
    ];
    for (const [password, code, reason] of refusals) {
      const error = await operatorReset(user.id, password).then(
        () => undefined,
        (caught: unknown) => toProblemError(caught) as ProblemError,
      );
      expect(error?.code, String(password)).toBe(code);
      if (reason) expect(error?.detail).toContain(reason);
    }
    expect(await signInWorks(user.email, PASSWORD)).toBe(true);
    expect((await sessions.list(user.id)).length).toBe(1);
    expect(await resetEvents(user.id)).toEqual([]);
  });

  it('refuses a deactivated or unknown user, and gives a password to an account without one', async () => {
    const deactivated = await seedUser(server.database.db, { status: 'deactivated' });
    await expect(operatorReset(deactivated.id, NEW_PASSWORD)).rejects.toMatchObject({ code: 'Identity.UserAlreadyDeactivated' });
    expect((await server.database.db('identity_users').where({ id: deactivated.id }).first()).password_hash).toBeNull();
    await expect(operatorReset('00000000-0000-4000-8000-000000000000', NEW_PASSWORD)).rejects.toMatchObject({
      code: 'Identity.UserNotFound',
    });
    await expect(operatorReset('not an id', NEW_PASSWORD)).rejects.toMatchObject({ code: 'Identity.UserNotFound' });
    expect(await resetEvents(deactivated.id)).toEqual([]);

    const passwordless = await seedUser(server.database.db);
    await operatorReset(passwordless.id, NEW_PASSWORD);
    expect(await signInWorks(passwordless.email, NEW_PASSWORD)).toBe(true);
  });
});
