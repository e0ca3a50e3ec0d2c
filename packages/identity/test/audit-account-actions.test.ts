import { createManualClock } from '@idt/core';
import { verifyAuditChain } from '@idt/core/knex';
import {
  caller,
  expectJson,
  expectProblem,
  mintAccessToken,
  registerUser,
  SETUP_ADMIN,
  SoftAuthenticator,
  seedWorld,
  startTestServer,
  type TestServer,
  testDialects,
  type World,
} from '@idt/testing';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PASSWORD = 'correct horse battery staple';

type AuditItem = Record<string, any>;

/**
 * The account-security actions the identity module records, each performed
 * through the real HTTP API of the reference server on a loopback port:
 * exactly one record for a change, none for a refused one, on the platform
 * trail for a user's own account and on the organization's trail for an
 * organization's policy, a reset by its owner and its API keys.
 */
describe.each(testDialects())('account audit actions on %s', (dialect) => {
  let server: TestServer;
  let world: World;
  let call: ReturnType<typeof caller>;
  let counter = 0;
  // TOTP codes are computed at the server's time.
  const clock = createManualClock(Math.floor(Date.now() / 1000 / 30) * 30_000 + 1000);
  let setupAdmin: { userId: string; organizationId: string };

  const codeFor = (secret: string) => generate({ secret, epoch: Math.floor(clock.now().getTime() / 1000) });

  /** The records of one trail (`platform` or an organization id) that name `targetId`, read by a platform administrator. */
  async function trail(chain: string, query: string): Promise<AuditItem[]> {
    const page = await expectJson(
      await call('GET', `/v1/audit/events?organizationId=${chain}&${query}`, { token: world.platformToken }),
    );
    return page.items;
  }
  const platformTrail = (query: string) => trail('platform', query);

  /** A registered user with a fresh session (authenticated now) and a token naming it (`sid`). */
  async function person(prefix: string) {
    const email = `${prefix}-${++counter}-${dialect}@example.com`;
    const id = await registerUser(server, email, PASSWORD);
    const { session } = await server.idt.services.identity.credentials.sessions.start(id, { amr: ['pwd'] });
    const token = await mintAccessToken(server, { sub: id, sid: session.id });
    return { id, email, sessionId: session.id, token };
  }

  beforeAll(async () => {
    server = await startTestServer({ dialect, clock, hostname: 'localhost' });
    call = caller(server);
    // Setup first: seeding the world's owners ends setup mode.
    const bad = await call('POST', '/v1/identity/setup/admin', { body: { ...SETUP_ADMIN, email: 'not an address' } });
    expect(bad.status).toBe(400);
    setupAdmin = await expectJson(await call('POST', '/v1/identity/setup/admin', { body: SETUP_ADMIN }), 201);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('records setup once, on the platform trail, with the new administrator as actor', async () => {
    await expectProblem(await call('POST', '/v1/identity/setup/admin', { body: SETUP_ADMIN }), 409, 'Setup.AlreadyCompleted');
    const items = await platformTrail('action=identity.setup.completed');
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      organizationId: null,
      actor: { type: 'user', id: setupAdmin.userId },
      target: { type: 'organization', id: setupAdmin.organizationId, display: SETUP_ADMIN.organizationName },
      outcome: 'success',
      ip: '127.0.0.1',
      metadata: { administratorId: setupAdmin.userId, by: 'api' },
    });
    expect(JSON.stringify(items[0])).not.toContain(SETUP_ADMIN.password);
  });

  it('records an authenticator app added and removed, and recovery codes regenerated; nothing for refusals', async () => {
    const user = await person('totp');
    const begun = await expectJson(await call('POST', '/v1/identity/account/factors/totp', { token: user.token }), 201);
    const confirm = (code: string) =>
      call('POST', '/v1/identity/account/factors/totp/confirm', {
        token: user.token,
        body: { enrolmentId: begun.enrolmentId, code },
      });
    const good = await codeFor(begun.secret);
    await expectProblem(await confirm(good === '000000' ? '111111' : '000000'), 400, 'SecondFactor.InvalidCode');
    await expectProblem(await confirm('12'), 400, 'Validation.Failed');
    // Nothing for the refusals, and nothing yet for this user at all.
    expect(await platformTrail(`targetId=${user.id}`)).toEqual([]);

    expect((await confirm(good)).status).toBe(200);
    const added = await platformTrail(`targetId=${user.id}&action=identity.totp.added`);
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({
      organizationId: null,
      actor: { type: 'user', id: user.id },
      target: { type: 'user', id: user.id, display: user.email },
      ip: '127.0.0.1',
      metadata: { newRecoveryCodeCount: 10 },
    });

    const regenerated = await expectJson(await call('POST', '/v1/identity/account/recovery-codes', { token: user.token }), 201);
    const codes = await platformTrail(`targetId=${user.id}&action=identity.recoveryCodes.regenerated`);
    expect(codes).toHaveLength(1);
    // No code reaches the trail.
    for (const code of regenerated.recoveryCodes as string[]) expect(JSON.stringify(codes[0])).not.toContain(code);

    expect((await call('DELETE', '/v1/identity/account/factors/totp', { token: user.token })).status).toBe(204);
    await expectProblem(
      await call('DELETE', '/v1/identity/account/factors/totp', { token: user.token }),
      404,
      'SecondFactor.NotEnrolled',
    );
    const removed = await platformTrail(`targetId=${user.id}&action=identity.totp.removed`);
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatchObject({ actor: { id: user.id }, metadata: { removed: ['totp', 'recovery-codes'] } });
    expect(await platformTrail(`targetId=${user.id}`)).toHaveLength(3);
    // Personal records are nobody's organization's: an owner's own trail does not hold them.
    const own = await expectJson(await call('GET', `/v1/audit/events?targetId=${user.id}`, { token: world.a.tokens.owner }));
    expect(own.items).toEqual([]);
  });

  it("records an owner's reset of a member's second factors on the organization's trail, which only it can read", async () => {
    const member = world.a.user;
    const factors = server.idt.services.identity.factors;
    const begun = await factors.beginTotp(member.id, '');
    await factors.confirmTotp(member.id, begun.enrolmentId, await codeFor(begun.secret));
    const reset = (token: string) =>
      call('DELETE', `/v1/identity/organizations/${world.a.organization.id}/members/${member.id}/factors`, { token });

    await expectProblem(await reset(world.a.tokens.manager), 403, 'Auth.Forbidden');
    await expectProblem(await reset(world.b.tokens.owner), 404, 'Identity.OrganizationNotFound');
    const query = `targetId=${member.id}&action=identity.secondFactors.reset`;
    expect((await expectJson(await call('GET', `/v1/audit/events?${query}`, { token: world.a.tokens.owner }))).items).toEqual([]);

    expect((await reset(world.a.tokens.owner)).status).toBe(204);
    const { items } = await expectJson(await call('GET', `/v1/audit/events?${query}`, { token: world.a.tokens.owner }));
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      organizationId: world.a.organization.id,
      actor: { type: 'user', id: world.a.owner.id },
      target: { type: 'user', id: member.id },
      ip: '127.0.0.1',
      metadata: { removed: ['totp', 'recovery-codes'], byPlatformAdministrator: false },
    });
    // Another organization's owner sees nothing of it.
    expect((await expectJson(await call('GET', `/v1/audit/events?${query}`, { token: world.b.tokens.owner }))).items).toEqual([]);
    await expectProblem(
      await call('GET', `/v1/audit/events?organizationId=${world.a.organization.id}`, { token: world.b.tokens.owner }),
      404,
      'Audit.OrganizationNotFound',
    );
  });

  it('records passkeys added, renamed and removed; nothing for a refused name or an unknown passkey', async () => {
    const user = await person('passkey');
    const authenticator = new SoftAuthenticator(new URL(server.url).origin);
    const options = await expectJson(
      await call('POST', '/v1/identity/account/passkeys/registration-options', { token: user.token }),
    );
    const created = authenticator.create(options as never);
    const passkey = await expectJson(
      await call('POST', '/v1/identity/account/passkeys', { token: user.token, body: { ...created, name: 'Work laptop' } }),
      201,
    );
    const path = `/v1/identity/account/passkeys/${passkey.id}`;
    await expectProblem(await call('PATCH', path, { token: user.token, body: { name: '' } }), 400, 'Validation.Failed');
    expect((await call('PATCH', path, { token: user.token, body: { name: 'Home laptop' } })).status).toBe(200);
    expect((await call('DELETE', path, { token: user.token })).status).toBe(204);
    await expectProblem(await call('DELETE', path, { token: user.token }), 404, 'Passkey.NotFound');

    const items = await platformTrail(`targetId=${passkey.id}`);
    expect(items.map((item) => item.action)).toEqual([
      'identity.passkey.removed',
      'identity.passkey.renamed',
      'identity.passkey.added',
    ]);
    expect(items[2]).toMatchObject({
      organizationId: null,
      actor: { type: 'user', id: user.id },
      target: { type: 'passkey', id: passkey.id, display: 'Work laptop' },
      metadata: { userId: user.id, deviceType: 'singleDevice' },
    });
    expect(items[1]).toMatchObject({ target: { display: 'Home laptop' }, metadata: { from: 'Work laptop', to: 'Home laptop' } });
    expect(items[0]).toMatchObject({ target: { display: 'Home laptop' }, ip: '127.0.0.1' });
    expect(JSON.stringify(items)).not.toContain(created.response.attestationObject);
  });

  it('records an e-mail change requested and confirmed; nothing for the same address or a bad link', async () => {
    const user = await person('mover');
    const newEmail = `moved-${dialect}@example.com`;
    const change = (body: unknown) => call('POST', '/v1/identity/auth/change-email', { token: user.token, body });
    expect((await change({ newEmail: user.email })).status).toBe(400);
    expect((await change({ newEmail: 'nope' })).status).toBe(400);
    expect(await platformTrail(`targetId=${user.id}`)).toEqual([]);

    expect((await change({ newEmail })).status).toBe(200);
    const requested = await platformTrail(`targetId=${user.id}&action=identity.emailChange.requested`);
    expect(requested).toHaveLength(1);
    expect(requested[0]).toMatchObject({
      actor: { type: 'user', id: user.id },
      target: { type: 'user', id: user.id, display: user.email },
      metadata: { from: user.email, to: newEmail },
    });

    const pending = await server.database.db('identity_email_changes').where({ user_id: user.id }).first('id');
    const { link } = (await server.idt.services.identity.credentials.emailChange.pendingConfirmation(pending.id, user.id)) ?? {};
    const url = new URL(String(link));
    const bad = new URL(url);
    bad.searchParams.set('token', 'forged');
    expect((await server.send(bad.toString())).status).toBe(400);
    expect((await server.send(url.toString())).status).toBe(200);
    const confirmed = await platformTrail(`targetId=${user.id}&action=identity.emailChange.confirmed`);
    expect(confirmed).toHaveLength(1);
    expect(confirmed[0]).toMatchObject({
      actor: { type: 'user', id: user.id, display: newEmail },
      target: { type: 'user', id: user.id, display: newEmail },
      ip: '127.0.0.1',
      metadata: { from: user.email, to: newEmail },
    });
    expect(JSON.stringify(confirmed[0])).not.toContain(url.searchParams.get('token'));
  });

  it('records a session revoked by its user, not a sign-out, and the session evicted by the sixth sign-in', async () => {
    const user = await person('sessions');
    const sessions = server.idt.services.identity.credentials.sessions;
    const { session: other } = await sessions.start(user.id, { amr: ['pwd'] });
    const revoke = (sessionId: string) => call('DELETE', `/v1/identity/sessions/${sessionId}`, { token: user.token });
    expect((await revoke(other.id)).status).toBe(204);
    await expectProblem(await revoke(other.id), 404, 'Sessions.NotFound');
    expect((await revoke('not-a-guid')).status).toBe(400);
    const revoked = await platformTrail(`action=identity.session.revoked&targetId=${other.id}`);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({
      organizationId: null,
      actor: { type: 'user', id: user.id },
      target: { type: 'session', id: other.id },
      ip: '127.0.0.1',
      metadata: { userId: user.id },
    });
    // A sign-out ends the session without a record.
    expect((await call('POST', '/v1/identity/auth/logout', { token: user.token })).status).toBe(204);
    expect(await platformTrail(`action=identity.session.revoked&targetId=${user.sessionId}`)).toEqual([]);

    // Five live sessions; the sixth sign-in evicts the oldest.
    const live: string[] = [];
    for (let index = 0; index < 5; index++) {
      live.push((await sessions.start(user.id, { amr: ['pwd'], ip: '192.0.2.7' })).session.id);
      clock.advance(1000);
    }
    expect(
      await platformTrail('action=identity.session.evicted&limit=200').then((items) =>
        items.filter((item) => item.metadata.userId === user.id),
      ),
    ).toEqual([]);
    const sixth = await sessions.start(user.id, { amr: ['pwd'], ip: '192.0.2.7' });
    expect(sixth.evicted).toEqual([live[0]]);
    const evicted = await platformTrail(`action=identity.session.evicted&targetId=${live[0]}`);
    expect(evicted).toHaveLength(1);
    expect(evicted[0]).toMatchObject({
      actor: { type: 'system', id: null },
      target: { type: 'session', id: live[0] },
      ip: '192.0.2.7',
      metadata: { userId: user.id, maxActive: 5 },
    });
  });

  it('records a caller’s entries in the transaction that starts or re-authenticates a session, and none when it is refused', async () => {
    const user = await person('with-session');
    const sessions = server.idt.services.identity.credentials.sessions;
    // An action another module registered (the OpenID provider's sign-in).
    const entry = (sessionId: string, session: string) => ({
      action: 'oidc.signIn.succeeded',
      organizationId: null,
      actor: { type: 'user' as const, id: user.id, display: null },
      target: { type: 'user', id: user.id, display: null },
      metadata: { sessionId, session },
    });
    const started = await sessions.start(user.id, { amr: ['pwd'], audit: (sessionId) => [entry(sessionId, 'started')] });
    const signIns = () =>
      platformTrail(`action=oidc.signIn.succeeded&actorId=${user.id}&limit=200`).then((items) =>
        items.map((item) => item.metadata),
      );
    expect(await signIns()).toEqual([{ sessionId: started.session.id, session: 'started' }]);

    expect(
      await sessions.markAuthenticated(started.session.id, ['pwd', 'otp'], clock.now(), [
        entry(started.session.id, 'reauthenticated'),
      ]),
    ).toBe(true);
    expect(await signIns()).toHaveLength(2);
    // A revoked session is not marked, and nothing is recorded for it.
    await sessions.revoke(user.id, started.session.id, 'logout');
    expect(
      await sessions.markAuthenticated(started.session.id, ['pwd'], clock.now(), [entry(started.session.id, 'stepUp')]),
    ).toBe(false);
    // A deactivated user gets no session, and no record.
    await server.database.db('identity_users').where({ id: user.id }).update({ status: 'deactivated' });
    await expect(sessions.start(user.id, { amr: ['pwd'], audit: (sessionId) => [entry(sessionId, 'started')] })).rejects.toThrow(
      /deactivated/,
    );
    expect(await signIns()).toHaveLength(2);
    // An entry the trail refuses rolls the session back with it.
    await server.database.db('identity_users').where({ id: user.id }).update({ status: 'active' });
    const before = await server.database.db('identity_sessions').where({ user_id: user.id }).count({ n: '*' }).first();
    await expect(
      sessions.start(user.id, { amr: ['pwd'], audit: () => [{ ...entry('x', 'started'), action: 'oidc.signIn.unheardOf' }] }),
    ).rejects.toThrow(/not registered/);
    expect(await server.database.db('identity_sessions').where({ user_id: user.id }).count({ n: '*' }).first()).toEqual(before);
  });

  it("records a change of an organization's security policy on its trail; nothing for a refused body", async () => {
    const path = `/v1/identity/organizations/${world.b.organization.id}/security-policy`;
    const query = 'action=identity.securityPolicy.changed';
    await expectProblem(await call('PUT', path, { token: world.b.tokens.owner, body: {} }), 400, 'Validation.Failed');
    await expectProblem(
      await call('PUT', path, { token: world.b.tokens.user, body: { requireMfa: false } }),
      403,
      'Auth.Forbidden',
    );
    expect(await trail(world.b.organization.id, query)).toEqual([]);

    const changed = await call('PUT', path, { token: world.b.tokens.admin, body: { requireVerifiedEmail: false } });
    expect(changed.status).toBe(200);
    const { items } = await expectJson(await call('GET', `/v1/audit/events?${query}`, { token: world.b.tokens.owner }));
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      organizationId: world.b.organization.id,
      actor: { type: 'user', id: world.b.admin.id },
      target: { type: 'organization', id: world.b.organization.id },
      metadata: { set: { requireVerifiedEmail: false }, policy: { requireMfa: false, requireVerifiedEmail: false } },
    });
    expect((await expectJson(await call('GET', `/v1/audit/events?${query}`, { token: world.a.tokens.owner }))).items).toEqual([]);
  });

  it('records API keys created and revoked on the organization’s trail; nothing for a refused one', async () => {
    const token = world.a.tokens.owner;
    await expectProblem(await call('POST', '/v1/identity/auth/keys', { token, body: { name: '' } }), 400, 'Validation.Failed');
    const created = await expectJson(await call('POST', '/v1/identity/auth/keys', { token, body: { name: 'CI deploys' } }), 201);
    const path = `/v1/identity/auth/keys/${created.keyId}`;
    expect((await call('DELETE', path, { token })).status).toBe(204);
    await expectProblem(await call('DELETE', path, { token }), 404, 'ApiKeys.NotFound');

    const { items } = await expectJson(await call('GET', `/v1/audit/events?targetId=${created.keyId}`, { token }));
    expect(items.map((item: AuditItem) => item.action)).toEqual(['identity.apiKey.revoked', 'identity.apiKey.created']);
    for (const item of items) {
      expect(item).toMatchObject({
        organizationId: world.a.organization.id,
        actor: { type: 'user', id: world.a.owner.id },
        target: { type: 'apiKey', id: created.keyId, display: 'CI deploys' },
        ip: '127.0.0.1',
      });
      expect(JSON.stringify(item)).not.toContain(created.apiKey);
    }
    expect(items[1].metadata).toMatchObject({ ownerId: world.a.owner.id, scopes: created.scopes });
    const other = await expectJson(
      await call('GET', `/v1/audit/events?targetId=${created.keyId}`, { token: world.b.tokens.owner }),
    );
    expect(other.items).toEqual([]);
  });

  it('leaves every chain it wrote to intact', async () => {
    for (const chain of [null, world.a.organization.id, world.b.organization.id]) {
      expect((await verifyAuditChain(server.database.db, chain)).valid).toBe(true);
    }
  });
});
