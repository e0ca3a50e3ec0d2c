import { createManualClock } from '@idt/core';
import {
  mintAccessToken,
  mintServiceToken,
  registerUser,
  seedMembership,
  seedWorld,
  startTestServer,
  type TestServer,
  testDialects,
  type World,
} from '@idt/testing';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { outboxEvents } from './accounts-helpers.js';
import { countRows, expectProblem, jsonInit, mailsTo, waitForMail } from './credentials-support.js';

const PASSWORD = 'correct horse battery staple';
const RECOVERY_CODE = /^[0-9a-hjkmnp-tv-z]{4}-[0-9a-hjkmnp-tv-z]{4}-[0-9a-hjkmnp-tv-z]{4}$/;

describe.each(testDialects())('TOTP, recovery codes and the account API on %s', (dialect) => {
  let server: TestServer;
  let world: World;
  const clock = createManualClock(Math.floor(Date.now() / 1000 / 30) * 30_000 + 1000);
  let counter = 0;
  const factors = () => server.idt.services.identity.factors;
  const sessions = () => server.idt.services.identity.credentials.sessions;

  /** The code an authenticator app shows at the server's time, `steps` periods later. */
  const codeFor = (secret: string, steps = 0) =>
    generate({ secret, epoch: Math.floor(clock.now().getTime() / 1000) + steps * 30 });

  /** A registered user with a fresh sign-in session and an access token naming it (`sid`). */
  async function person(prefix: string) {
    const email = `${prefix}-${++counter}-${dialect}@example.com`;
    const id = await registerUser(server, email, PASSWORD);
    const { session } = await sessions().start(id, { amr: ['pwd'] });
    const token = await mintAccessToken(server, { sub: id, sid: session.id });
    return { id, email, sessionId: session.id, token };
  }

  const call = (token: string | undefined, method: string, path: string, body?: unknown) =>
    server.fetch(path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });

  /** Sets up an authenticator app through the service; its secret and the recovery codes. */
  async function enrol(userId: string) {
    const started = await factors().beginTotp(userId, '');
    const { recoveryCodes } = await factors().confirmTotp(userId, started.enrolmentId, await codeFor(started.secret));
    // The confirming code's step is used: the next code is one period later.
    clock.advance(30_000);
    return { secret: started.secret, recoveryCodes: recoveryCodes ?? [] };
  }

  /** A token for a member of an organization, minted now (the manual clock moves past older tokens' expiry). */
  const memberToken = (userId: string, organizationId: string) =>
    mintAccessToken(server, { sub: userId, org_id: organizationId });

  beforeAll(async () => {
    server = await startTestServer({ dialect, clock });
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('enrols an authenticator app with a first code, refusing wrong and 7-digit codes, and shows recovery codes once', async () => {
    const user = await person('ada');
    expect(await (await call(user.token, 'GET', '/v1/identity/account/factors')).json()).toEqual({
      totp: false,
      recoveryCodesLeft: 0,
      passkeys: 0,
    });

    for (const body of [{ label: 'x'.repeat(255) }, { label: 7 }, { other: true }, ['label'], '"label"']) {
      await expectProblem(await call(user.token, 'POST', '/v1/identity/account/factors/totp', body), 400, 'Validation.Failed');
    }
    expect(await countRows(server, 'identity_totp_enrolments', { user_id: user.id })).toBe(0);
    const begun = await call(user.token, 'POST', '/v1/identity/account/factors/totp');
    expect(begun.status).toBe(201);
    expect(begun.headers.get('cache-control')).toBe('no-store');
    const enrolment = (await begun.json()) as { enrolmentId: string; secret: string; otpauthUri: string; qrSvg: string };
    expect(enrolment.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(enrolment.otpauthUri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.searchParams.get('secret')).toBe(enrolment.secret);
    expect(uri.searchParams.get('issuer')).toBe(new URL(server.url).host);
    expect(decodeURIComponent(enrolment.otpauthUri)).toContain(user.email);
    expect(enrolment.qrSvg).toMatch(/^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    // Sealed at rest: the secret is nowhere in the row.
    const pending = await server.database.db('identity_totp_enrolments').where({ user_id: user.id }).first();
    expect(pending.secret_sealed).not.toContain(enrolment.secret);
    expect(pending.secret_sealed).toMatch(/^v1\./);

    const confirm = (body: unknown) => call(user.token, 'POST', '/v1/identity/account/factors/totp/confirm', body);
    const good = await codeFor(enrolment.secret);
    await expectProblem(await confirm({ enrolmentId: enrolment.enrolmentId, code: `${good}1` }), 400, 'Validation.Failed');
    await expectProblem(await confirm({ enrolmentId: enrolment.enrolmentId, code: '12345' }), 400, 'Validation.Failed');
    await expectProblem(await confirm({ enrolmentId: enrolment.enrolmentId, code: 'abcdef' }), 400, 'Validation.Failed');
    await expectProblem(await confirm({ enrolmentId: enrolment.enrolmentId }), 400, 'Validation.Failed');
    await expectProblem(await confirm({ enrolmentId: enrolment.enrolmentId, code: good, extra: 1 }), 400, 'Validation.Failed');
    const wrong = good === '000000' ? '111111' : '000000';
    await expectProblem(await confirm({ enrolmentId: enrolment.enrolmentId, code: wrong }), 400, 'SecondFactor.InvalidCode');
    await expectProblem(await confirm({ enrolmentId: 'nope', code: good }), 400, 'SecondFactor.EnrolmentNotFound');
    expect(await countRows(server, 'identity_totp_factors', { user_id: user.id })).toBe(0);

    // Another user cannot confirm this enrolment.
    const other = await person('mallory');
    await expectProblem(
      await call(other.token, 'POST', '/v1/identity/account/factors/totp/confirm', {
        enrolmentId: enrolment.enrolmentId,
        code: good,
      }),
      400,
      'SecondFactor.EnrolmentNotFound',
    );

    const confirmed = await confirm({ enrolmentId: enrolment.enrolmentId, code: `${good.slice(0, 3)} ${good.slice(3)}` });
    expect(confirmed.status).toBe(200);
    const { recoveryCodes } = (await confirmed.json()) as { recoveryCodes: string[] };
    expect(recoveryCodes).toHaveLength(10);
    for (const code of recoveryCodes) expect(code).toMatch(RECOVERY_CODE);
    expect(new Set(recoveryCodes).size).toBe(10);
    expect(await (await call(user.token, 'GET', '/v1/identity/account/factors')).json()).toEqual({
      totp: true,
      recoveryCodesLeft: 10,
      passkeys: 0,
    });
    // Stored sealed and hashed only; the enrolment is gone.
    const factor = await server.database.db('identity_totp_factors').where({ user_id: user.id }).first();
    expect(factor.secret_sealed).not.toContain(enrolment.secret);
    const hashes: string[] = await server.database.db('identity_recovery_codes').where({ user_id: user.id }).pluck('code_hash');
    expect(hashes).toHaveLength(10);
    for (const code of recoveryCodes) {
      expect(hashes.some((hash) => hash.includes(code.replace(/-/g, '')))).toBe(false);
    }
    expect(await countRows(server, 'identity_totp_enrolments', { user_id: user.id })).toBe(0);
    // The enrolment is used up.
    await expectProblem(await confirm({ enrolmentId: enrolment.enrolmentId, code: good }), 400, 'SecondFactor.EnrolmentNotFound');

    // The confirming code cannot sign in; a code works once in its window; the next one works.
    expect(await factors().verifyTotp(user.id, good)).toBe('replayed');
    clock.advance(30_000);
    const next = await codeFor(enrolment.secret);
    expect(await factors().verifyTotp(user.id, next)).toBe('ok');
    expect(await factors().verifyTotp(user.id, next)).toBe('replayed');
    // One step of drift either way; two are too many.
    expect(await factors().verifyTotp(user.id, await codeFor(enrolment.secret, 1))).toBe('ok');
    expect(await factors().verifyTotp(user.id, await codeFor(enrolment.secret, 3))).toBe('wrong');
    expect(await factors().verifyTotp(user.id, '1234567')).toBe('wrong');

    const added = await outboxEvents(server.database.db, 'UserSecondFactorAddedEvent');
    expect(added.filter((event) => event.userId === user.id).map((event) => event.factor)).toEqual(['totp', 'recovery-codes']);

    // Enrolling again replaces the app; the unused recovery codes stay (none are shown).
    const again = await factors().beginTotp(user.id, 'Work phone');
    expect(decodeURIComponent(again.otpauthUri)).toContain('Work phone');
    clock.advance(60_000);
    const replaced = await factors().confirmTotp(user.id, again.enrolmentId, await codeFor(again.secret));
    expect(replaced.recoveryCodes).toBeNull();
    expect(await factors().verifyTotp(user.id, await codeFor(enrolment.secret, 1))).toBe('wrong');
  });

  it('forgets an enrolment that was not confirmed within 15 minutes', async () => {
    const user = await person('late');
    const begun = await factors().beginTotp(user.id, '');
    clock.advance(15 * 60_000 + 1000);
    const response = await call(user.token, 'POST', '/v1/identity/account/factors/totp/confirm', {
      enrolmentId: begun.enrolmentId,
      code: await codeFor(begun.secret),
      reauthentication: { password: PASSWORD },
    });
    await expectProblem(response, 400, 'SecondFactor.EnrolmentNotFound');
    expect(await factors().prune()).toBeGreaterThanOrEqual(1);
    expect(await countRows(server, 'identity_totp_enrolments', { user_id: user.id })).toBe(0);
  });

  it('locks the second step for 5 minutes after 5 wrong codes in 5 minutes', async () => {
    const user = await person('locked');
    const { secret, recoveryCodes } = await enrol(user.id);
    const wrong = async () => ((await codeFor(secret)) === '000000' ? '111111' : '000000');

    // Misses further apart than 5 minutes do not add up.
    for (let i = 0; i < 4; i++) expect(await factors().verifyTotp(user.id, await wrong())).toBe('wrong');
    clock.advance(5 * 60_000);
    expect(await factors().verifyTotp(user.id, await wrong())).toBe('wrong');
    expect(await factors().useRecoveryCode(user.id, 'aaaa-bbbb-cccc')).toBe('wrong');
    expect(await factors().useRecoveryCode(user.id, 'not a code')).toBe('wrong');
    expect(await factors().verifyTotp(user.id, await wrong())).toBe('wrong');
    // The fifth miss in the window locks: right codes, recovery codes and the API all wait.
    expect(await factors().verifyTotp(user.id, await wrong())).toBe('locked');
    expect(await factors().verifyTotp(user.id, await codeFor(secret))).toBe('locked');
    expect(await factors().useRecoveryCode(user.id, recoveryCodes[0] as string)).toBe('locked');
    const begun = await factors().beginTotp(user.id, '');
    const response = await call(user.token, 'POST', '/v1/identity/account/factors/totp/confirm', {
      enrolmentId: begun.enrolmentId,
      code: await codeFor(begun.secret),
      reauthentication: { password: PASSWORD },
    });
    await expectProblem(response, 429, 'SecondFactor.Locked');
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);

    clock.advance(5 * 60_000 - 1000);
    expect(await factors().verifyTotp(user.id, await codeFor(secret))).toBe('locked');
    clock.advance(1000);
    expect(await factors().verifyTotp(user.id, await codeFor(secret))).toBe('ok');
    // A success starts the count again.
    for (let i = 0; i < 4; i++) expect(await factors().verifyTotp(user.id, await wrong())).toBe('wrong');
    expect(await factors().useRecoveryCode(user.id, recoveryCodes[0] as string)).toBe('ok');
    expect(await factors().verifyTotp(user.id, await wrong())).toBe('wrong');
  });

  it('forgets earlier misses after a right code, and lets a code work once even when sent twice at once', async () => {
    const user = await person('forgets');
    const { secret } = await enrol(user.id);
    const wrong = async () => ((await codeFor(secret)) === '000000' ? '111111' : '000000');
    clock.advance(30_000);
    for (let i = 0; i < 4; i++) expect(await factors().verifyTotp(user.id, await wrong())).toBe('wrong');
    expect(await factors().verifyTotp(user.id, await codeFor(secret))).toBe('ok');
    // Four more misses: eight in the window, but the right code started the count again.
    for (let i = 0; i < 4; i++) expect(await factors().verifyTotp(user.id, await wrong())).toBe('wrong');
    clock.advance(30_000);
    const code = await codeFor(secret);
    const answers = await Promise.all([factors().verifyTotp(user.id, code), factors().verifyTotp(user.id, code)]);
    expect(answers.sort()).toEqual(['ok', 'replayed']);
  });

  it('uses each recovery code once, and a new set ends the old one', async () => {
    const user = await person('recover');
    const { recoveryCodes } = await enrol(user.id);
    const [first, second, third] = recoveryCodes as [string, string, string];
    expect(await factors().useRecoveryCode(user.id, first)).toBe('ok');
    expect(await factors().useRecoveryCode(user.id, first)).toBe('wrong');
    // Case, spaces and dashes do not matter.
    expect(await factors().useRecoveryCode(user.id, ` ${second.replace(/-/g, ' ').toUpperCase()} `)).toBe('ok');
    expect((await factors().status(user.id)).recoveryCodesLeft).toBe(8);
    // Another user's code is no code of this one.
    const other = await person('other');
    const others = await enrol(other.id);
    expect(await factors().useRecoveryCode(user.id, others.recoveryCodes[0] as string)).toBe('wrong');

    const made = await call(user.token, 'POST', '/v1/identity/account/recovery-codes');
    expect(made.status).toBe(201);
    const fresh = ((await made.json()) as { recoveryCodes: string[] }).recoveryCodes;
    expect(fresh).toHaveLength(10);
    expect(fresh).not.toContain(third);
    expect(await factors().useRecoveryCode(user.id, third)).toBe('wrong');
    expect(await factors().useRecoveryCode(user.id, fresh[9] as string)).toBe('ok');
    expect((await factors().status(user.id)).recoveryCodesLeft).toBe(9);

    // Without a second factor there is nothing to recover.
    const plain = await person('plain');
    await expectProblem(await call(plain.token, 'POST', '/v1/identity/account/recovery-codes'), 404, 'SecondFactor.NotEnrolled');
  });

  it('asks for a recent authentication after 5 minutes, satisfied by the password or a fresh code', async () => {
    const user = await person('recent');
    const { secret, recoveryCodes } = await enrol(user.id);
    const regenerate = (body?: unknown, token = user.token) => call(token, 'POST', '/v1/identity/account/recovery-codes', body);
    expect((await regenerate()).status).toBe(201);

    clock.advance(5 * 60_000);
    const stale = await regenerate();
    const problem = await expectProblem(stale, 403, 'Identity.ReauthenticationRequired');
    expect(problem.detail).toMatch(/sign in again|reauthentication/i);
    await expectProblem(
      await regenerate({ reauthentication: { password: 'not my password at all' } }),
      403,
      'Identity.ReauthenticationRequired',
    );
    await expectProblem(
      await regenerate({ reauthentication: { code: '000000' === (await codeFor(secret)) ? '111111' : '000000' } }),
      403,
      'Identity.ReauthenticationRequired',
    );
    await expectProblem(
      await regenerate({ reauthentication: { code: 'zzzz-zzzz-zzzz' } }),
      403,
      'Identity.ReauthenticationRequired',
    );
    expect((await regenerate({ reauthentication: { password: PASSWORD } })).status).toBe(201);
    const code = await codeFor(secret);
    expect((await regenerate({ reauthentication: { code } })).status).toBe(201);
    // The code is used now.
    const replayed = await expectProblem(
      await regenerate({ reauthentication: { code } }),
      403,
      'Identity.ReauthenticationRequired',
    );
    expect(replayed.detail).toMatch(/already used/);
    // Recovery codes of the set before the last regeneration no longer count.
    await expectProblem(
      await regenerate({ reauthentication: { code: recoveryCodes[0] } }),
      403,
      'Identity.ReauthenticationRequired',
    );

    // Bad bodies change nothing.
    for (const body of [
      { reauthentication: {} },
      { reauthentication: { password: PASSWORD, code: '123456' } },
      { reauthentication: { password: '' } },
      { reauthentication: { password: 'x'.repeat(10_000) } },
      { reauthentication: { code: 'x'.repeat(65) } },
      { reauthentication: 'password' },
      { other: true },
    ]) {
      await expectProblem(await regenerate(body), 400, 'Validation.Failed');
    }

    // A re-authentication inside the session (the sign-in pages record it) counts again for 5 minutes.
    expect(await sessions().markAuthenticated(user.sessionId, ['pwd', 'otp', 'mfa'], clock.now())).toBe(true);
    expect((await sessions().authentication(user.sessionId))?.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect((await regenerate()).status).toBe(201);

    // A token without a session always needs the fresh factor; a service, or no credential, is refused.
    const sessionless = await mintAccessToken(server, { sub: user.id });
    await expectProblem(await regenerate(undefined, sessionless), 403, 'Identity.ReauthenticationRequired');
    expect((await regenerate({ reauthentication: { password: PASSWORD } }, sessionless)).status).toBe(201);
    const service = await mintServiceToken(server, { clientId: `svc-${dialect}`, organizationId: world.a.organization.id });
    await expectProblem(await call(service, 'GET', '/v1/identity/account/factors'), 403, 'Auth.Forbidden');
    await expectProblem(await call(undefined, 'GET', '/v1/identity/account/factors'), 401, 'Auth.Unauthenticated');
    await expectProblem(await call(undefined, 'DELETE', '/v1/identity/account/factors/totp'), 401, 'Auth.Unauthenticated');
  });

  it('refuses to remove the last factor while an organization requires MFA, and tells the user when it is removed', async () => {
    const user = await person('mfa');
    await seedMembership(server.database.db, { userId: user.id, organizationId: world.a.organization.id, roles: ['user'] });
    const { secret } = await enrol(user.id);
    const ownerToken = await memberToken(world.a.owner.id, world.a.organization.id);
    const policy = server.idt.services.identity.verification.organizationPolicy;
    const setPolicy = (requireMfa: boolean) =>
      server.fetch(
        `/v1/identity/organizations/${world.a.organization.id}/security-policy`,
        jsonInit('PUT', { requireMfa }, { authorization: `Bearer ${ownerToken}` }),
      );
    expect((await setPolicy(true)).status).toBe(200);
    await vi.waitFor(async () => expect(await policy.requiresMfaForUser(user.id)).toBe(true));

    const remove = (body?: unknown) => call(user.token, 'DELETE', '/v1/identity/account/factors/totp', body);
    await expectProblem(await remove(), 422, 'Identity.SecondFactorRequired');
    expect((await factors().status(user.id)).totp).toBe(true);

    expect((await setPolicy(false)).status).toBe(200);
    await vi.waitFor(async () => expect(await policy.requiresMfaForUser(user.id)).toBe(false));
    clock.advance(5 * 60_000 + 1000);
    await expectProblem(await remove(), 403, 'Identity.ReauthenticationRequired');
    expect((await remove({ reauthentication: { code: await codeFor(secret) } })).status).toBe(204);
    expect(await factors().status(user.id)).toEqual({ totp: false, recoveryCodesLeft: 0, passkeys: 0 });
    await expectProblem(await remove({ reauthentication: { password: PASSWORD } }), 404, 'SecondFactor.NotEnrolled');

    const removed = await outboxEvents(server.database.db, 'UserSecondFactorRemovedEvent');
    expect(removed.find((event) => event.userId === user.id)).toMatchObject({ email: user.email, factor: 'totp' });
    const notice = await waitForMail(server, user.email, 'second-factor-removed-notice');
    expect(notice.subject).toMatch(/two-step/i);
    await vi.waitFor(async () =>
      expect(await countRows(server, 'notifications', { user_id: user.id, type: 'SecurityAlert' })).toBe(1),
    );
  });

  it("lets an organization's owner or a platform administrator reset a member's second factors", async () => {
    const db = server.database.db;
    const member = await person('lost');
    await seedMembership(db, { userId: member.id, organizationId: world.a.organization.id, roles: ['user'] });
    await enrol(member.id);
    const tokens = {
      owner: await memberToken(world.a.owner.id, world.a.organization.id),
      admin: await memberToken(world.a.admin.id, world.a.organization.id),
      manager: await memberToken(world.a.manager.id, world.a.organization.id),
      user: await memberToken(world.a.user.id, world.a.organization.id),
      otherOwner: await memberToken(world.b.owner.id, world.b.organization.id),
      platform: await memberToken(world.platformAdmin.id, world.platform.id),
    };
    const reset = (token: string, orgId = world.a.organization.id, userId = member.id) =>
      call(token, 'DELETE', `/v1/identity/organizations/${orgId}/members/${userId}/factors`);

    await expectProblem(await reset(tokens.admin), 403, 'Auth.Forbidden');
    await expectProblem(await reset(tokens.manager), 403, 'Auth.Forbidden');
    await expectProblem(await reset(tokens.user), 403, 'Auth.Forbidden');
    await expectProblem(await reset(tokens.otherOwner), 404, 'Identity.OrganizationNotFound');
    await expectProblem(await reset(member.token), 403, 'Tenant.Required');
    await expectProblem(await reset(tokens.owner, world.a.organization.id, world.outsider.id), 404, 'Identity.MemberNotFound');
    await expectProblem(await reset(tokens.owner, world.a.organization.id, 'not-a-guid'), 400, 'Validation.Failed');
    expect((await factors().status(member.id)).totp).toBe(true);

    expect((await reset(tokens.owner)).status).toBe(204);
    expect(await factors().status(member.id)).toEqual({ totp: false, recoveryCodesLeft: 0, passkeys: 0 });
    const events = await outboxEvents(db, 'UserSecondFactorsResetEvent');
    expect(events.find((event) => event.userId === member.id)).toMatchObject({
      email: member.email,
      organizationId: world.a.organization.id,
      resetByUserId: world.a.owner.id,
    });
    await waitForMail(server, member.email, 'second-factors-reset-notice');
    await vi.waitFor(async () =>
      expect(await countRows(server, 'notifications', { user_id: member.id, type: 'SecurityAlert' })).toBe(1),
    );

    // A platform administrator resets in any organization.
    await enrol(member.id);
    expect((await reset(tokens.platform)).status).toBe(204);
    expect((await factors().status(member.id)).totp).toBe(false);
    await waitForMail(server, member.email, 'second-factors-reset-notice', 1);
    // Nothing to reset: no new notice.
    expect((await reset(tokens.platform)).status).toBe(204);
    await server.idt.infrastructure.events.dispatchPending();
    expect(await mailsTo(server, member.email, 'second-factors-reset-notice')).toHaveLength(2);

    // An owner cannot reset a platform administrator who is a member of the organization.
    await seedMembership(db, { userId: world.platformAdmin.id, organizationId: world.a.organization.id, roles: ['user'] });
    await enrol(world.platformAdmin.id);
    await expectProblem(await reset(tokens.owner, world.a.organization.id, world.platformAdmin.id), 403, 'Auth.Forbidden');
    expect((await factors().status(world.platformAdmin.id)).totp).toBe(true);
  });

  it('is in the OpenAPI document and the event catalog', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as { paths: Record<string, Record<string, any>> };
    expect(document.paths['/v1/identity/account/factors']?.get.operationId).toBe('listSecondFactors');
    expect(document.paths['/v1/identity/account/factors/totp']?.post.operationId).toBe('beginTotpEnrolment');
    expect(document.paths['/v1/identity/account/factors/totp']?.delete.operationId).toBe('removeTotp');
    expect(document.paths['/v1/identity/account/factors/totp/confirm']?.post.operationId).toBe('confirmTotpEnrolment');
    expect(document.paths['/v1/identity/account/recovery-codes']?.post.operationId).toBe('regenerateRecoveryCodes');
    expect(document.paths['/v1/identity/organizations/{orgId}/members/{userId}/factors']?.delete.operationId).toBe(
      'resetMemberSecondFactors',
    );
    const events = server.idt.services.identity.events.map((event) => event.type);
    expect(events).toEqual(
      expect.arrayContaining(['UserSecondFactorAddedEvent', 'UserSecondFactorRemovedEvent', 'UserSecondFactorsResetEvent']),
    );
  });
});
