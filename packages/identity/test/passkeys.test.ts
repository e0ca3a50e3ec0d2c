import type { ManualClock } from '@idt/core';
import {
  bearer,
  bootstrapAdmin,
  createTestIdt,
  mintAccessToken,
  registerUser,
  SoftAuthenticator,
  type TestAdmin,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows, expectProblem, jsonInit } from './credentials-support.js';

const PASSWORD = 'correct horse battery staple';
const PASSKEYS = '/v1/identity/account/passkeys';

type Json = Record<string, any>;

describe.each(testDialects())('passkeys through the account API and the service on %s', (dialect) => {
  let server: TestIdt;
  let clock: ManualClock;
  let admin: TestAdmin;
  let origin: string;
  let rpId: string;
  let counter = 0;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    clock = server.idt.clock as ManualClock;
    admin = await bootstrapAdmin(server);
    origin = new URL(server.url).origin;
    rpId = new URL(server.url).hostname;
  });
  afterAll(async () => {
    await server?.close();
  });

  const passkeys = () => server.idt.services.identity.passkeys;

  /** A new user with a sign-in session (authenticated now) and a token carrying its `sid`. */
  async function signedIn(prefix = 'pk') {
    const email = `${prefix}-${++counter}-${dialect}@example.com`;
    const userId = await registerUser(server, email, PASSWORD);
    return { email, userId, ...(await sessionOf(userId)) };
  }

  async function sessionOf(userId: string) {
    const started = await server.idt.services.identity.credentials.sessions.start(userId, { amr: ['pwd'] });
    const token = await mintAccessToken(server, { sub: userId, sid: started.session.id });
    return { sessionId: started.session.id, token, headers: bearer(token) };
  }

  const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    server.fetch(path, body === undefined ? { method, headers } : jsonInit(method, body, headers));

  async function options(headers: Record<string, string>): Promise<Json> {
    const response = await call('POST', `${PASSKEYS}/registration-options`, headers);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    return (await response.json()) as Json;
  }

  /** Registers a passkey of `authenticator` for the signed-in user; its record. */
  async function register(headers: Record<string, string>, authenticator: SoftAuthenticator, name?: string): Promise<Json> {
    const created = authenticator.create((await options(headers)) as never);
    const response = await call('POST', PASSKEYS, headers, { ...created, ...(name ? { name } : {}) });
    expect(response.status).toBe(201);
    return (await response.json()) as Json;
  }

  it('registers a passkey with user verification required and resident keys preferred, bound to the session', async () => {
    const user = await signedIn();
    const creation = await options(user.headers);
    expect(creation.rp).toEqual({ name: new URL(server.url).host, id: rpId });
    expect(creation.authenticatorSelection).toMatchObject({ residentKey: 'preferred', userVerification: 'required' });
    expect(creation.user.name).toBe(user.email);
    expect(creation.attestation).toBe('none');
    // Only the challenge's SHA-256 is kept.
    const stored = await server.database.db('identity_passkey_challenges').where({ binding: `session:${user.sessionId}` });
    expect(stored).toHaveLength(1);
    expect(stored[0].challenge_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(creation.challenge);

    const authenticator = new SoftAuthenticator(origin);
    const created = authenticator.create(creation as never);
    const response = await call('POST', PASSKEYS, user.headers, { ...created, name: 'Work laptop' });
    expect(response.status).toBe(201);
    const record = (await response.json()) as Json;
    expect(record).toMatchObject({ name: 'Work laptop', deviceType: 'singleDevice', backedUp: false, lastUsedAt: null });
    expect(record).not.toHaveProperty('publicKey');

    const list = await call('GET', PASSKEYS, user.headers);
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual([record]);
    const row = await server.database.db('identity_passkeys').where({ id: record.id }).first();
    expect(row).toMatchObject({
      user_id: user.userId,
      credential_id: created.id,
      device_type: 'singleDevice',
      transports: 'internal',
    });
    expect(Number(row.counter)).toBe(0);
    const events = await server.database.db('core_outbox_events').where({ type: 'UserPasskeyAddedEvent' });
    expect(events.map((event) => JSON.parse(event.payload))).toContainEqual(
      expect.objectContaining({ userId: user.userId, passkeyId: record.id, name: 'Work laptop' }),
    );

    // The challenge worked once: the same response again is refused, and nothing more is stored.
    await expectProblem(await call('POST', PASSKEYS, user.headers, created), 400, 'Passkey.ChallengeExpired');
    expect(await countRows(server, 'identity_passkeys', { user_id: user.userId })).toBe(1);
    // The next options exclude the passkey already registered.
    expect((await options(user.headers)).excludeCredentials).toEqual([
      { id: created.id, type: 'public-key', transports: ['internal'] },
    ]);
  });

  it('refuses a wrong origin, a wrong RP id, a missing user verification, another session’s or an expired challenge', async () => {
    const user = await signedIn();
    const authenticator = new SoftAuthenticator(origin);
    const attempt = async (overrides: Parameters<SoftAuthenticator['create']>[1], headers = user.headers) =>
      call('POST', PASSKEYS, headers, authenticator.create((await options(user.headers)) as never, overrides));
    await expectProblem(await attempt({ origin: 'http://127.0.0.1:9999' }), 400, 'Passkey.Rejected');
    await expectProblem(await attempt({ origin: 'https://evil.example' }), 400, 'Passkey.Rejected');
    await expectProblem(await attempt({ rpId: 'evil.example' }), 400, 'Passkey.Rejected');
    await expectProblem(await attempt({ userVerified: false }), 400, 'Passkey.Rejected');
    await expectProblem(await attempt({ challenge: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }), 400, 'Passkey.Rejected');
    // Options made for one session do not serve another session of the same user.
    const other = await sessionOf(user.userId);
    await expectProblem(await attempt({}, other.headers), 400, 'Passkey.ChallengeExpired');
    // Five minutes on the clock and the challenge is gone.
    const creation = await options(user.headers);
    clock.advance(5 * 60_000 + 1000);
    const late = await sessionOf(user.userId);
    await options(late.headers); // another session's challenge does not revive this one
    const expired = await call('POST', PASSKEYS, user.headers, authenticator.create(creation as never));
    expect(expired.status).toBe(403); // past 5 minutes the session is no longer recently authenticated either
    await expectProblem(
      await call('POST', PASSKEYS, user.headers, {
        ...authenticator.create(creation as never),
        reauthentication: { password: PASSWORD },
      }),
      400,
      'Passkey.ChallengeExpired',
    );
    expect(await countRows(server, 'identity_passkeys', { user_id: user.userId })).toBe(0);
  });

  it('refuses malformed bodies and callers without a session', async () => {
    const user = await signedIn();
    const created = new SoftAuthenticator(origin).create((await options(user.headers)) as never);
    for (const body of [
      {},
      { ...created, type: 'password' },
      { ...created, id: 'not base64url!' },
      { ...created, response: { ...created.response, attestationObject: 'A'.repeat(20_000) } },
      { ...created, name: '' },
      { ...created, name: 'x'.repeat(65) },
      { ...created, name: 'tab\there' },
    ]) {
      await expectProblem(await call('POST', PASSKEYS, user.headers, body), 400, 'Validation.Failed');
    }
    const raw = await server.fetch(PASSKEYS, {
      method: 'POST',
      headers: { ...user.headers, 'content-type': 'application/json' },
      body: '{',
    });
    expect(raw.status).toBe(400);
    await expectProblem(await call('GET', PASSKEYS, {}), 401, 'Auth.Unauthenticated');
    const sessionless = bearer(await mintAccessToken(server, { sub: user.userId }));
    await expectProblem(await call('GET', PASSKEYS, sessionless), 403, 'Passkey.SessionRequired');
    await expectProblem(await call('POST', `${PASSKEYS}/registration-options`, sessionless), 403, 'Passkey.SessionRequired');
  });

  it('signs in with a discoverable passkey once per challenge, keeps the counter and refuses one that goes back', async () => {
    const user = await signedIn();
    const authenticator = new SoftAuthenticator(origin);
    const record = await register(user.headers, authenticator);
    const binding = { interaction: `uid-${counter}` };
    const request = await passkeys().authenticationOptions(binding);
    expect(request.allowCredentials).toBeUndefined();
    expect(request.userVerification).toBe('required');
    expect(request.rpId).toBe(rpId);
    const assertion = authenticator.get(request as never);
    expect(await passkeys().authenticate(binding, assertion)).toEqual({
      userId: user.userId,
      passkeyId: record.id,
      amr: ['hwk', 'mfa'],
    });
    const row = await server.database.db('identity_passkeys').where({ id: record.id }).first();
    expect(Number(row.counter)).toBe(1);
    expect(row.last_used_at).not.toBeNull();
    // A used challenge, and the same assertion replayed, are refused.
    await expect(passkeys().authenticate(binding, assertion)).rejects.toMatchObject({ code: 'Passkey.ChallengeExpired' });
    const again = await passkeys().authenticationOptions(binding);
    await expect(passkeys().authenticate(binding, { ...assertion })).rejects.toMatchObject({ code: 'Passkey.Rejected' });
    // A cloned authenticator (a counter that does not move forward) is refused.
    const cloned = authenticator.get((await passkeys().authenticationOptions(binding)) as never, { counter: 1 });
    await expect(passkeys().authenticate(binding, cloned)).rejects.toMatchObject({ code: 'Passkey.Rejected' });
    expect(again.challenge).not.toBe(request.challenge);
    // A wrong origin, a missing user verification, a foreign challenge, a deactivated account.
    for (const overrides of [{ origin: 'http://127.0.0.1:1' }, { userVerified: false }, { rpId: 'evil.example' }]) {
      const forged = authenticator.get((await passkeys().authenticationOptions(binding)) as never, overrides);
      await expect(passkeys().authenticate(binding, forged)).rejects.toMatchObject({ code: 'Passkey.Rejected' });
    }
    const elsewhere = authenticator.get((await passkeys().authenticationOptions({ interaction: 'another' })) as never);
    await passkeys().authenticationOptions(binding);
    await expect(passkeys().authenticate(binding, elsewhere)).rejects.toMatchObject({ code: 'Passkey.Rejected' });
    await expect(passkeys().authenticate({ interaction: 'nothing-waiting' }, elsewhere)).rejects.toMatchObject({
      code: 'Passkey.ChallengeExpired',
    });
    await expect(passkeys().authenticate(binding, { id: 'x' })).rejects.toMatchObject({ name: 'ZodError' });
    // Expired after 5 minutes.
    const slow = await passkeys().authenticationOptions(binding);
    clock.advance(5 * 60_000);
    await expect(passkeys().authenticate(binding, authenticator.get(slow as never))).rejects.toMatchObject({
      code: 'Passkey.ChallengeExpired',
    });
  });

  it('as a second factor, allows only the user’s own passkeys; a synced passkey counts as swk', async () => {
    const ada = await signedIn('ada');
    const bob = await signedIn('bob');
    const adaKey = new SoftAuthenticator(origin, { backedUp: true });
    const bobKey = new SoftAuthenticator(origin);
    const adaRecord = await register(ada.headers, adaKey);
    expect(adaRecord).toMatchObject({ deviceType: 'multiDevice', backedUp: true });
    const bobRecord = await register(bob.headers, bobKey);
    const binding = { interaction: `second-${counter}` };
    const request = await passkeys().authenticationOptions(binding, ada.userId);
    expect(request.allowCredentials?.map((entry) => entry.id)).toEqual([
      (await server.database.db('identity_passkeys').where({ id: adaRecord.id }).first()).credential_id,
    ]);
    // Bob's passkey answering Ada's second step is refused, and uses the challenge up.
    await expect(
      passkeys().authenticate(binding, bobKey.get({ ...request, allowCredentials: [] } as never), ada.userId),
    ).rejects.toMatchObject({
      code: 'Passkey.Rejected',
    });
    await expect(passkeys().authenticate(binding, adaKey.get(request as never), ada.userId)).rejects.toMatchObject({
      code: 'Passkey.ChallengeExpired',
    });
    // A first-factor challenge does not serve a second step (and the reverse).
    const firstFactor = await passkeys().authenticationOptions(binding);
    await expect(passkeys().authenticate(binding, adaKey.get(firstFactor as never), ada.userId)).rejects.toMatchObject({
      code: 'Passkey.Rejected',
    });
    const second = await passkeys().authenticationOptions(binding, ada.userId);
    expect(await passkeys().authenticate(binding, adaKey.get(second as never), ada.userId)).toEqual({
      userId: ada.userId,
      passkeyId: adaRecord.id,
      amr: ['swk', 'mfa'],
    });
    expect(bobRecord.deviceType).toBe('singleDevice');
  });

  it('renames and removes passkeys with a recent authentication, and keeps the last factor an organization requires', async () => {
    const user = await signedIn();
    const record = await register(user.headers, new SoftAuthenticator(origin), 'Phone');
    const renamed = await call('PATCH', `${PASSKEYS}/${record.id}`, user.headers, { name: '  Old phone ' });
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ id: record.id, name: 'Old phone' });
    await expectProblem(await call('PATCH', `${PASSKEYS}/${record.id}`, user.headers, { name: '' }), 400, 'Validation.Failed');
    await expectProblem(await call('PATCH', `${PASSKEYS}/not-a-guid`, user.headers, { name: 'x' }), 400, 'Validation.Failed');
    // Another user's passkey is not found, and stays as it was.
    const other = await signedIn('other');
    await expectProblem(
      await call('PATCH', `${PASSKEYS}/${record.id}`, other.headers, { name: 'Mine' }),
      404,
      'Passkey.NotFound',
    );
    await expectProblem(await call('DELETE', `${PASSKEYS}/${record.id}`, other.headers), 404, 'Passkey.NotFound');

    // Six minutes later the session is not recent: a fresh factor is needed.
    clock.advance(6 * 60_000);
    const later = { ...user, headers: bearer(await mintAccessToken(server, { sub: user.userId, sid: user.sessionId })) };
    await expectProblem(
      await call('PATCH', `${PASSKEYS}/${record.id}`, later.headers, { name: 'Stale' }),
      403,
      'Identity.ReauthenticationRequired',
    );
    await expectProblem(
      await call('PATCH', `${PASSKEYS}/${record.id}`, later.headers, {
        name: 'Stale',
        reauthentication: { password: 'wrong password!' },
      }),
      403,
      'Identity.ReauthenticationRequired',
    );
    const fresh = await call('PATCH', `${PASSKEYS}/${record.id}`, later.headers, {
      name: 'Fresh',
      reauthentication: { password: PASSWORD },
    });
    expect(fresh.status).toBe(200);
    await expectProblem(
      await call('DELETE', `${PASSKEYS}/${record.id}`, later.headers),
      403,
      'Identity.ReauthenticationRequired',
    );
    const removed = await call('DELETE', `${PASSKEYS}/${record.id}`, later.headers, { reauthentication: { password: PASSWORD } });
    expect(removed.status).toBe(204);
    expect(await countRows(server, 'identity_passkeys', { id: record.id })).toBe(0);
    const events = await server.database.db('core_outbox_events').where({ type: 'UserPasskeyRemovedEvent' });
    expect(events.map((event) => JSON.parse(event.payload))).toContainEqual(expect.objectContaining({ passkeyId: record.id }));
  });

  it('refuses to remove the last second factor of a member of an organization that requires MFA (422)', async () => {
    const session = await sessionOf(admin.userId);
    const key = new SoftAuthenticator(origin);
    const first = await register(session.headers, key, 'First');
    const second = await register(session.headers, key, 'Second');
    const policy = await call(
      'PUT',
      `/v1/identity/organizations/${admin.organizationId}/security-policy`,
      bearer(await admin.token()),
      {
        requireMfa: true,
      },
    );
    expect(policy.status).toBe(200);
    expect((await call('DELETE', `${PASSKEYS}/${first.id}`, session.headers)).status).toBe(204);
    await expectProblem(await call('DELETE', `${PASSKEYS}/${second.id}`, session.headers), 422, 'Identity.SecondFactorRequired');
    expect(await countRows(server, 'identity_passkeys', { id: second.id })).toBe(1);
    await call('PUT', `/v1/identity/organizations/${admin.organizationId}/security-policy`, bearer(await admin.token()), {
      requireMfa: false,
    });
    expect((await call('DELETE', `${PASSKEYS}/${second.id}`, session.headers)).status).toBe(204);
  });

  it('removes every passkey of a user for an administrator’s reset of second factors', async () => {
    const user = await signedIn('reset');
    const key = new SoftAuthenticator(origin);
    await register(user.headers, key, 'One');
    await register(user.headers, key, 'Two');
    expect(await passkeys().count(user.userId)).toBe(2);
    expect(await passkeys().removeAllForUser(user.userId)).toBe(2);
    expect(await passkeys().count(user.userId)).toBe(0);
    const events = await server.database.db('core_outbox_events').where({ type: 'UserPasskeyRemovedEvent' });
    expect(events.map((event) => JSON.parse(event.payload)).filter((payload) => payload.userId === user.userId)).toHaveLength(2);
    expect(await passkeys().removeAllForUser(user.userId)).toBe(0);
  });

  it('lists the routes in the OpenAPI document and the events in the AsyncAPI catalog', async () => {
    const openapi = (await (await server.fetch('/openapi/v1.json')).json()) as Json;
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining([PASSKEYS, `${PASSKEYS}/registration-options`, `${PASSKEYS}/{passkeyId}`]),
    );
    expect(openapi.paths[`${PASSKEYS}/{passkeyId}`].delete.operationId).toBe('removePasskey');
    // The module's events are what the AsyncAPI catalog lists.
    expect(server.idt.services.identity.events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['UserPasskeyAddedEvent', 'UserPasskeyRemovedEvent']),
    );
  });
});
