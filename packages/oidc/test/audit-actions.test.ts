import { createManualClock, type ManualClock } from '@idt/core';
import {
  Browser,
  type BrowserResponse,
  bootstrapAdmin,
  discover,
  oidcClient,
  seedMembership,
  startTestServer,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { generateSync } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, passwordUser, REDIRECT_URI, register, seedWorld, unique } from './clients-support.js';

type World = Awaited<ReturnType<typeof seedWorld>>;

interface Row {
  chain: string;
  action: string;
  organization_id: string | null;
  actor_type: string;
  actor_id: string | null;
  target_type: string | null;
  target_id: string | null;
  outcome: string;
  ip: string | null;
  user_agent: string | null;
  metadata: string;
}

/**
 * The audit actions of `@idt/oidc`, through the real server: sign-ins (and
 * refused ones) at the sign-in pages, the clients API and logout. Each
 * action leaves exactly one record on the right trail; a refused request
 * leaves none; another organization's owner never sees it.
 */
describe.each(testDialects())('the audit actions of the OpenID provider on %s', (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  let world: World;
  let call: ReturnType<typeof caller>;
  let orgA: string;
  let orgClient: { clientId: string; clientSecret: string };

  beforeAll(async () => {
    clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
    server = await startTestServer({ dialect, clock });
    await bootstrapAdmin(server);
    world = await seedWorld(server);
    call = caller(server);
    orgA = world.a.organization.id;
    orgClient = await register(server, world.a.tokens.owner, orgA, {
      kind: 'application',
      name: unique('Audited App'),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'email', 'profile'],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const rows = (where: Partial<Row>): Promise<Row[]> =>
    server.database.db('core_audit_events').where(where).orderBy('seq', 'asc') as Promise<Row[]>;
  const events = async (token: string, query: string) =>
    (await expectJson(await call('GET', `/v1/audit/events?${query}`, { token }))).items as Array<Record<string, any>>;

  /** Opens the authorization URL of `clientId` in a new browser: the sign-in page. */
  async function authorize(
    clientId: string,
    secret: string,
    browser = new Browser({}, server.send),
    extra: Record<string, string> = {},
  ) {
    const config = await discover(server, { clientId, clientSecret: secret, record: {} });
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid email profile',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...extra,
    });
    const page = await browser.navigate(url.href);
    return { browser, page, config, verifier, state };
  }

  const redirectedWithCode = (done: BrowserResponse) => new URL(done.url).searchParams.get('code');

  it('records a sign-in on the client’s organization’s trail, once, in the session’s transaction, with the request’s facts', async () => {
    const user = await passwordUser(server, 'audited');
    await seedMembership(server.database.db, { userId: user.id, organizationId: orgA, roles: ['user'] });
    const { browser } = await authorize(orgClient.clientId, orgClient.clientSecret);
    const signedIn = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    // A third-party application: the consent page follows the sign-in, which is recorded already.
    expect(signedIn.body).toContain('/consent"');

    const recorded = await rows({ action: 'oidc.signIn.succeeded', actor_id: user.id });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ chain: orgA, organization_id: orgA, actor_type: 'user', target_id: user.id });
    const metadata = JSON.parse(recorded[0]?.metadata ?? '{}');
    expect(metadata).toMatchObject({ methods: ['pwd'], session: 'started', clientId: orgClient.clientId });
    // The record names the session that started with it: the same transaction wrote both.
    const session = await server.database.db('identity_sessions').where({ user_id: user.id }).first('id', 'created_at');
    expect(metadata.sessionId).toBe(session?.id);
    const seen = await events(world.a.tokens.owner, `action=oidc.signIn.succeeded&actorId=${user.id}`);
    expect(seen).toHaveLength(1);
    expect(await events(world.b.tokens.owner, `action=oidc.signIn.succeeded&actorId=${user.id}`)).toEqual([]);
  });

  it('records a re-authentication in the same session (prompt=login) as one more sign-in, naming that session', async () => {
    const user = await passwordUser(server, 'again');
    await seedMembership(server.database.db, { userId: user.id, organizationId: orgA, roles: ['user'] });
    const { browser } = await authorize(orgClient.clientId, orgClient.clientSecret);
    await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    const again = await authorize(orgClient.clientId, orgClient.clientSecret, browser, { prompt: 'login' });
    expect(again.page.body).toContain('name="password"');
    await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });

    const recorded = (await rows({ action: 'oidc.signIn.succeeded', actor_id: user.id })).map((row) => JSON.parse(row.metadata));
    expect(recorded.map((entry) => entry.session)).toEqual(['started', 'reauthenticated']);
    expect(recorded[1].sessionId).toBe(recorded[0].sessionId);
    const sessions = await server.database.db('identity_sessions').where({ user_id: user.id }).pluck('id');
    expect(sessions).toEqual([recorded[0].sessionId]);
  });

  it('records a wrong password as a failure without actor or address, on the client’s organization’s trail', async () => {
    const user = await passwordUser(server, 'wrong');
    const before = (await rows({ action: 'oidc.signIn.failed', chain: orgA })).length;
    const { browser } = await authorize(orgClient.clientId, orgClient.clientSecret);
    const refused = await browser.submit({ form: '/login', fields: { email: user.email, password: 'not the password at all' } });
    expect(refused.status).toBe(400);
    const failures = await rows({ action: 'oidc.signIn.failed', chain: orgA });
    expect(failures).toHaveLength(before + 1);
    const failure = failures.at(-1) as Row;
    expect(failure).toMatchObject({ outcome: 'failure', actor_type: 'system', actor_id: null, target_id: null });
    expect(JSON.parse(failure.metadata)).toEqual({ reason: 'wrongPassword', clientId: orgClient.clientId });
    expect(JSON.stringify(failure)).not.toContain(user.email);
    // A malformed form (no password) is no sign-in attempt: nothing recorded.
    const empty = await browser.submit({ form: '/login', fields: { email: user.email, password: '' } });
    expect(empty.status).toBe(400);
    expect(await rows({ action: 'oidc.signIn.failed', chain: orgA })).toHaveLength(before + 1);
    expect(await events(world.b.tokens.owner, 'action=oidc.signIn.failed')).toEqual([]);
  });

  it('records wrong and replayed TOTP codes with the user as actor, then the sign-in with mfa', async () => {
    const user = await passwordUser(server, 'totp');
    const factors = (server.idt.services.identity as any).factors;
    const enrolled = await factors.beginTotp(user.id, 'test');
    const secret = () => generateSync({ secret: enrolled.secret, epoch: Math.floor(clock.now().getTime() / 1000) });
    await factors.confirmTotp(user.id, enrolled.enrolmentId, secret());
    clock.advance(30_000);
    const admin = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: unique('Console'), redirectUris: [REDIRECT_URI], scopes: ['openid', 'email', 'profile'] },
      { firstParty: true },
    );
    const { browser } = await authorize(admin.client.clientId, admin.clientSecret);
    await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const right = secret();
    await browser.submit({ form: '/second-factor', fields: { code: right === '000000' ? '111111' : '000000' } });
    const done = await browser.submit({ form: '/second-factor', fields: { code: right } });
    expect(redirectedWithCode(done)).toBeTruthy();
    const other = (await authorize(admin.client.clientId, admin.clientSecret)).browser;
    await other.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const replayed = await other.submit({ form: '/second-factor', fields: { code: right } });
    expect(replayed.status).toBe(400);

    const failures = await rows({ action: 'oidc.signIn.failed', actor_id: user.id });
    expect(failures.map((row) => JSON.parse(row.metadata).reason)).toEqual(['wrongCode', 'replayedCode']);
    // A platform client: the platform trail.
    expect(failures.every((row) => row.chain === 'platform' && row.actor_type === 'user' && row.target_id === user.id)).toBe(
      true,
    );
    const succeeded = await rows({ action: 'oidc.signIn.succeeded', actor_id: user.id });
    expect(succeeded).toHaveLength(1);
    expect(JSON.parse(succeeded[0]?.metadata ?? '{}').methods).toEqual(['pwd', 'otp', 'mfa']);
  });

  it('records each change of a client once, in the client’s organization, with the acting owner', async () => {
    const owner = world.a.owner.id;
    const base = `/v1/identity/organizations/${orgA}/clients`;
    const token = world.a.tokens.owner;
    const name = unique('Lifecycle');
    const created = await register(server, token, orgA, {
      kind: 'application',
      name,
      redirectUris: [REDIRECT_URI],
      scopes: ['openid'],
    });
    const item = `${base}/${created.clientId}`;
    await expectJson(await call('PATCH', item, { token, body: { redirectUris: [REDIRECT_URI, 'http://127.0.0.1:9/other'] } }));
    await expectJson(await call('POST', `${item}/rotate-secret`, { token, body: { revokeActiveTokens: true } }));
    await expectJson(await call('POST', `${item}/suspend`, { token }));
    await expectJson(await call('POST', `${item}/reinstate`, { token }));
    await expectJson(await call('PUT', `${item}/branding`, { token, body: { displayName: 'Branded' } }));
    // Refused changes record nothing: bad input, a client already active, another organization's client.
    await expectProblem(await call('PATCH', item, { token, body: { redirectUris: [] } }), 400, 'Validation.Failed');
    await expectProblem(await call('POST', `${item}/reinstate`, { token }), 422, 'Identity.ClientNotSuspended');
    expect(
      (await call('DELETE', `/v1/identity/organizations/${orgA}/clients/${created.clientId}`, { token: world.b.tokens.owner }))
        .status,
    ).toBe(404);
    expect((await call('DELETE', item, { token })).status).toBe(204);

    const recorded = await rows({ target_id: created.clientId });
    expect(recorded.map((row) => row.action)).toEqual([
      'oidc.client.registered',
      'oidc.client.updated',
      'oidc.client.secretRotated',
      'oidc.client.suspended',
      'oidc.client.reinstated',
      'oidc.client.brandingChanged',
      'oidc.client.deleted',
    ]);
    for (const row of recorded) {
      expect(row).toMatchObject({ chain: orgA, actor_type: 'user', actor_id: owner, target_type: 'client', outcome: 'success' });
    }
    expect(JSON.parse(recorded[1]?.metadata ?? '{}')).toEqual({ fields: ['redirectUris'] });
    expect(JSON.parse(recorded[2]?.metadata ?? '{}')).toEqual({ issuedAccessEnded: true });
    // The secret is nowhere in the trail.
    expect(JSON.stringify(recorded)).not.toContain(created.clientSecret);
    expect(await events(world.a.tokens.owner, `targetId=${encodeURIComponent(created.clientId)}`)).toHaveLength(7);
    expect(await events(world.b.tokens.owner, `targetId=${encodeURIComponent(created.clientId)}`)).toEqual([]);
  });

  it('records a logout at the end-session endpoint once', async () => {
    const user = await passwordUser(server, 'logout');
    await seedMembership(server.database.db, { userId: user.id, organizationId: orgA, roles: ['user'] });
    const { browser, config, verifier, state } = await authorize(orgClient.clientId, orgClient.clientSecret);
    await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const done = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    const tokens = await oidcClient.authorizationCodeGrant(config, new URL(done.url), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    const sid = tokens.claims()?.sid;
    const url = oidcClient.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '' });
    await browser.navigate(url.href);
    const ended = await browser.submit({ form: 'logout', fields: { logout: 'yes' } });
    expect(ended.status).toBeLessThan(400);
    const recorded = await rows({ action: 'oidc.session.loggedOut', actor_id: user.id });
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ chain: orgA, target_type: 'session' });
    expect(recorded[0]?.target_id).toBe(sid);
  });
});
