import { join } from 'node:path';
import { createManualClock, type ManualClock } from '@idt/core';
import { readMailbox } from '@idt/core/mail';
import {
  Browser,
  type BrowserResponse,
  bootstrapAdmin,
  discover,
  oidcClient,
  startTestServer,
  type TestClient,
  type TestServer,
  tenantWithTokens,
  testDialects,
} from '@idt/testing';
import { generateSync } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordUser, REDIRECT_URI, register, unique } from './clients-support.js';

const SCOPE = 'openid email profile';
const ACR_1FA = 'urn:idt:acr:1fa';
const ACR_MFA = 'urn:idt:acr:mfa';

/** What the sign-in pipeline needs of C1's second-factor service, as the tests drive it. */
interface Factors {
  beginTotp(userId: string, label: string): Promise<{ enrolmentId: string; secret: string }>;
  confirmTotp(userId: string, enrolmentId: string, code: string): Promise<{ recoveryCodes: string[] | null }>;
}

describe.each(testDialects())('the sign-in pipeline with a second factor on %s', (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  let client: TestClient;
  let config: oidcClient.Configuration;

  beforeAll(async () => {
    clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
    server = await startTestServer({ dialect, clock });
    // Setup first: the sign-in pages need the platform in place.
    await bootstrapAdmin(server);
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: unique('Console'), redirectUris: [REDIRECT_URI], scopes: ['openid', 'email', 'profile'] },
      { firstParty: true },
    );
    client = { clientId: registration.client.clientId, clientSecret: registration.clientSecret, record: {} };
    config = await discover(server, client);
  });
  afterAll(async () => {
    await server?.close();
  });

  const factors = () => (server.idt.services.identity as unknown as { factors: Factors }).factors;
  const seconds = () => Math.floor(clock.now().getTime() / 1000);
  /** The TOTP code of `secret` at the manual clock's time. */
  const totp = (secret: string, offsetSeconds = 0) => generateSync({ secret, epoch: seconds() + offsetSeconds });
  /** Moves to the next TOTP time step (a code works once in its window). */
  const nextStep = () => clock.advance(30_000);

  /** Enrols a TOTP authenticator for a user through the service; its secret and recovery codes. */
  async function enrolTotp(userId: string) {
    const begun = await factors().beginTotp(userId, 'test');
    const confirmed = await factors().confirmTotp(userId, begun.enrolmentId, totp(begun.secret));
    nextStep();
    return { secret: begun.secret, recoveryCodes: confirmed.recoveryCodes ?? [] };
  }

  async function liveSessions(userId: string): Promise<number> {
    const rows = await server.database.db('identity_sessions').where({ user_id: userId }).whereNull('revoked_at');
    return rows.length;
  }

  /** Opens the authorization URL in `browser`; the first page and the PKCE values. */
  async function authorize(browser: Browser, extra: Record<string, string> = {}, configuration = config) {
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const url = oidcClient.buildAuthorizationUrl(configuration, {
      redirect_uri: REDIRECT_URI,
      scope: SCOPE,
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...extra,
    });
    return { page: await browser.navigate(url.href), verifier, state };
  }

  /** Redeems the code a finished sign-in redirected with; the id token's claims. */
  async function idClaims(
    done: BrowserResponse,
    flow: { verifier: string; state: string },
    configuration = config,
    maxAge?: number,
  ) {
    const callback = new URL(done.url);
    expect(callback.searchParams.get('code'), done.body.slice(0, 500)).toBeTruthy();
    const tokens = await oidcClient.authorizationCodeGrant(configuration, callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      ...(maxAge === undefined ? {} : { maxAge }),
    });
    return tokens.claims() as Record<string, unknown>;
  }

  it('advertises the acr values and signs in with a password alone: amr pwd, acr 1fa, auth_time', async () => {
    const discovery = (await (await server.fetch('/.well-known/openid-configuration')).json()) as Record<string, unknown>;
    expect(discovery.acr_values_supported).toEqual([ACR_1FA, ACR_MFA]);
    expect(discovery.claims_supported).toEqual(expect.arrayContaining(['acr', 'amr', 'auth_time']));
    const user = await passwordUser(server, 'pwd-only');
    const browser = new Browser({}, server.send);
    const flow = await authorize(browser);
    const done = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const claims = await idClaims(done, flow);
    expect(claims).toMatchObject({ sub: user.id, amr: ['pwd'], acr: ACR_1FA, auth_time: seconds() });
  });

  it('asks the TOTP code after the password, starts the session only then: amr pwd otp mfa, acr mfa', async () => {
    const user = await passwordUser(server, 'totp');
    const { secret } = await enrolTotp(user.id);
    const browser = new Browser({}, server.send);
    const flow = await authorize(browser);
    const step = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    expect(step.status).toBe(200);
    expect(step.body).toContain('<h1>Two-step verification</h1>');
    expect(step.body).toMatch(/<label for="code">/);
    expect(step.body).not.toMatch(/<script>[^<]/);
    // Nothing started yet: no session row, no session cookie.
    expect(await liveSessions(user.id)).toBe(0);
    expect(browser.cookies(server.url).get('idt_session')).toBeUndefined();

    const sevenDigits = await browser.submit({ form: '/second-factor', fields: { code: `${totp(secret)}1` } });
    expect(sevenDigits.status).toBe(400);
    expect(sevenDigits.body).toContain('Enter the 6 digits from your authenticator app.');
    expect(sevenDigits.body).toContain('role="alert"');
    const right = totp(secret);
    const wrong = await browser.submit({ form: '/second-factor', fields: { code: right === '000000' ? '111111' : '000000' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('That code is not right.');
    expect(await liveSessions(user.id)).toBe(0);

    const done = await browser.submit({ form: '/second-factor', fields: { code: right } });
    const claims = await idClaims(done, flow);
    expect(claims).toMatchObject({ sub: user.id, amr: ['pwd', 'otp', 'mfa'], acr: ACR_MFA, auth_time: seconds() });
    expect(await liveSessions(user.id)).toBe(1);
    expect(browser.cookies(server.url).get('idt_session')).toBeTruthy();

    // The same code again, in another sign-in within its window: refused, nothing changed.
    const other = new Browser({}, server.send);
    await authorize(other);
    await other.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const replayed = await other.submit({ form: '/second-factor', fields: { code: right } });
    expect(replayed.status).toBe(400);
    expect(replayed.body).toContain('That code was used already.');
    expect(await liveSessions(user.id)).toBe(1);
  });

  it('signs in with a recovery code, once', async () => {
    const user = await passwordUser(server, 'recovery');
    const { recoveryCodes } = await enrolTotp(user.id);
    expect(recoveryCodes).toHaveLength(10);
    const recovery = recoveryCodes[0] ?? '';
    const browser = new Browser({}, server.send);
    const flow = await authorize(browser);
    const step = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    expect(step.body).toContain('Use a recovery code');
    const done = await browser.submit({ form: '/second-factor', fields: { method: 'recovery', code: recovery } });
    const claims = await idClaims(done, flow);
    expect(claims).toMatchObject({ sub: user.id, acr: ACR_MFA });
    expect(claims.amr).toEqual(expect.arrayContaining(['pwd', 'mfa']));

    const again = new Browser({}, server.send);
    await authorize(again);
    await again.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const reused = await again.submit({ form: '/second-factor', fields: { method: 'recovery', code: recovery } });
    expect(reused.status).toBe(400);
    expect(reused.body).toContain('That recovery code is not right, or it was used already.');
  });

  it('asks the second step inside a single sign-on session when the client asks acr_values=urn:idt:acr:mfa', async () => {
    const user = await passwordUser(server, 'step-up');
    const browser = new Browser({}, server.send);
    const first = await authorize(browser);
    const signedIn = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const before = await idClaims(signedIn, first);
    expect(before).toMatchObject({ amr: ['pwd'], acr: ACR_1FA });
    const { secret } = await enrolTotp(user.id);

    // Single sign-on without acr_values: no page at all.
    const sso = await authorize(browser);
    expect(await idClaims(sso.page, sso)).toMatchObject({ acr: ACR_1FA, auth_time: before.auth_time });

    const stepUp = await authorize(browser, { acr_values: ACR_MFA });
    expect(stepUp.page.status).toBe(200);
    expect(stepUp.page.body).toContain('<h1>Two-step verification</h1>');
    expect(stepUp.page.body).not.toContain('type="password"');
    const done = await browser.submit({ form: '/second-factor', fields: { code: totp(secret) } });
    const after = await idClaims(done, stepUp);
    expect(after).toMatchObject({ sub: user.id, acr: ACR_MFA, amr: ['pwd', 'otp', 'mfa'], sid: before.sid });
    expect(after.auth_time).toBe(seconds());
    expect(Number(after.auth_time)).toBeGreaterThan(Number(before.auth_time));
    // The same session, re-authenticated.
    expect(await liveSessions(user.id)).toBe(1);

    // Now the session holds mfa: acr_values asks nothing more.
    const again = await authorize(browser, { acr_values: ACR_MFA });
    expect(await idClaims(again.page, again)).toMatchObject({ acr: ACR_MFA });
  });

  it('re-authenticates past max_age on the clock, and auth_time moves', async () => {
    const user = await passwordUser(server, 'max-age');
    const browser = new Browser({}, server.send);
    const first = await authorize(browser);
    const signedIn = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const before = await idClaims(signedIn, first);

    // Within max_age: single sign-on.
    clock.advance(30_000);
    const within = await authorize(browser, { max_age: '60' });
    expect((await idClaims(within.page, within, config, 60)).auth_time).toBe(before.auth_time);

    clock.advance(90_000);
    const past = await authorize(browser, { max_age: '60' });
    expect(past.page.status).toBe(200);
    expect(past.page.body).toContain('type="password"');
    const done = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const after = await idClaims(done, past, config, 60);
    expect(after.auth_time).toBe(Number(before.auth_time) + 120);
    expect(after.sid).toBe(before.sid);
    expect(await liveSessions(user.id)).toBe(1);

    // max_age=0 always signs in again.
    const zero = await authorize(browser, { max_age: '0' });
    expect(zero.page.body).toContain('type="password"');
  });

  it('holds the token of a requireMfa organization back until the member enrols, then goes on with mfa', async () => {
    const tenant = await tenantWithTokens(server, unique('Strict'));
    const organizationId = tenant.organization.id;
    await server.database.db('identity_organizations').where({ id: organizationId }).update({ enrollment_policy: 'open' });
    const policy = await server.fetch(`/v1/identity/organizations/${organizationId}/security-policy`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tenant.tokens.owner}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requireMfa: true }),
    });
    expect(policy.status, await policy.clone().text()).toBeLessThan(300);
    const portal = await register(server, tenant.tokens.admin, organizationId, {
      kind: 'application',
      name: unique('Portal'),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'email', 'profile'],
    });
    const portalConfig = await discover(server, portal);
    const user = await passwordUser(server, 'require-mfa');
    const browser = new Browser({}, server.send);
    const flow = await authorize(browser, {}, portalConfig);
    const enrol = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    expect(enrol.status).toBe(200);
    expect(enrol.body).toContain('<h1>Set up two-step verification</h1>');
    expect(enrol.body).toContain('data:image/svg+xml;base64,');
    expect(await liveSessions(user.id)).toBe(0);
    const secret = enrolmentSecret(enrol.body);
    expect(secret).not.toBe('');

    const malformed = await browser.submit({ form: '/enrol', fields: { code: '12345' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toContain('Enter the 6 digits from your authenticator app.');
    const right = totp(secret);
    const wrong = await browser.submit({ form: '/enrol', fields: { code: right === '000000' ? '111111' : '000000' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('That code did not match.');
    expect(await liveSessions(user.id)).toBe(0);

    const codes = await browser.submit({ form: '/enrol', fields: { code: right } });
    expect(codes.status).toBe(200);
    expect(codes.body).toContain('Save these recovery codes');
    expect(await liveSessions(user.id)).toBe(0);
    let page = await browser.submit({ form: '/enrolled' });
    if (page.body.includes('/consent"')) page = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    const claims = await idClaims(page, flow, portalConfig);
    expect(claims).toMatchObject({ sub: user.id, acr: ACR_MFA, amr: ['pwd', 'otp', 'mfa'] });
    expect(await liveSessions(user.id)).toBe(1);
  });

  it('steps a signed-in member up at the consent step of a requireMfa organization, keeping the session', async () => {
    const tenant = await tenantWithTokens(server, unique('Strict'));
    const organizationId = tenant.organization.id;
    await server.database.db('identity_organizations').where({ id: organizationId }).update({ enrollment_policy: 'open' });
    const policy = await server.fetch(`/v1/identity/organizations/${organizationId}/security-policy`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tenant.tokens.owner}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requireMfa: true }),
    });
    expect(policy.status).toBeLessThan(300);
    const portal = await register(server, tenant.tokens.admin, organizationId, {
      kind: 'application',
      name: unique('Portal'),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'email', 'profile'],
    });
    const portalConfig = await discover(server, portal);
    const user = await passwordUser(server, 'step-up-org');
    const browser = new Browser({}, server.send);
    const first = await authorize(browser);
    const signedIn = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const before = await idClaims(signedIn, first);
    expect(before.acr).toBe(ACR_1FA);

    // Single sign-on to the organization's client: no password, but enrolment before its token.
    const flow = await authorize(browser, {}, portalConfig);
    expect(flow.page.body).toContain('<h1>Set up two-step verification</h1>');
    expect(flow.page.body).not.toContain('type="password"');
    const secret = enrolmentSecret(flow.page.body);
    // A consent form posted straight to the consent step does not skip the organization's gate.
    const csrf = /name="csrf" value="([^"]+)"/.exec(flow.page.body)?.[1] ?? '';
    const skipped = await browser.request(flow.page.url.replace(/\/?$/, '/consent'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.origin },
      body: new URLSearchParams({ csrf, decision: 'approve', organization: organizationId }).toString(),
    });
    expect(skipped.status).toBe(200);
    expect(skipped.body).toContain('<h1>Set up two-step verification</h1>');
    const fresh = enrolmentSecret(skipped.body) || secret;
    await browser.submit({ form: '/enrol', fields: { code: totp(fresh) } });
    let page = await browser.submit({ form: '/enrolled' });
    if (page.body.includes('/consent"')) page = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    const claims = await idClaims(page, flow, portalConfig);
    expect(claims).toMatchObject({ sub: user.id, acr: ACR_MFA, sid: before.sid });
    expect(claims.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    expect(await liveSessions(user.id)).toBe(1);
  });

  it('locks the second step after 5 wrong codes, even for the right one', async () => {
    const user = await passwordUser(server, 'lockout');
    const { secret } = await enrolTotp(user.id);
    const browser = new Browser({}, server.send);
    await authorize(browser);
    await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    const right = totp(secret);
    const wrong = right === '000000' ? '111111' : '000000';
    for (let attempt = 0; attempt < 4; attempt++) {
      expect((await browser.submit({ form: '/second-factor', fields: { code: wrong } })).status).toBe(400);
    }
    const fifth = await browser.submit({ form: '/second-factor', fields: { code: wrong } });
    expect([400, 429]).toContain(fifth.status);
    const locked = await browser.submit({ form: '/second-factor', fields: { code: right } });
    expect(locked.status).toBe(429);
    expect(locked.body).toContain('Too many wrong codes. Wait 5 minutes, then try again.');
    expect(await liveSessions(user.id)).toBe(0);
    clock.advance(5 * 60_000 + 1000);
    const done = await browser.submit({ form: '/second-factor', fields: { code: totp(secret) } });
    expect(new URL(done.url).searchParams.get('code')).toBeTruthy();
  });

  it('a one-time code first, then TOTP: one session, started at the end', async () => {
    const user = await passwordUser(server, 'code-totp');
    const { secret } = await enrolTotp(user.id);
    const browser = new Browser({}, server.send);
    const flow = await authorize(browser);
    const codePage = await browser.submit({ form: '/passwordless', fields: { email: user.email, method: 'code' } });
    expect(codePage.status).toBe(200);
    const mail = await latestMail(server, user.email);
    const mailed = /\b(\d{6})\b/.exec(mail)?.[1] ?? '';
    const step = await browser.submit({ form: '/code', fields: { code: mailed } });
    expect(step.body).toContain('<h1>Two-step verification</h1>');
    expect(await liveSessions(user.id)).toBe(0);
    const done = await browser.submit({ form: '/second-factor', fields: { code: totp(secret) } });
    const claims = await idClaims(done, flow);
    expect(claims).toMatchObject({ sub: user.id, amr: ['otp', 'mfa'], acr: ACR_MFA });
    expect(await liveSessions(user.id)).toBe(1);
  });

  it('refuses the second-factor form without a pending sign-in', async () => {
    const browser = new Browser({}, server.send);
    await authorize(browser);
    const forged = await browser.submit({ form: '/login', fields: { email: 'nobody@example.com', password: 'wrong password' } });
    expect(forged.status).toBe(400);
    const page = forged.url.replace(/\/login$/, '/second-factor');
    const csrf = /name="csrf" value="([^"]+)"/.exec(forged.body)?.[1] ?? '';
    const answer = await browser.request(page, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.origin },
      body: new URLSearchParams({ csrf, code: '123456' }).toString(),
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toContain('This sign-in has expired');
  });
});

/** The key an enrolment page shows for typing by hand (in groups of four). */
function enrolmentSecret(html: string): string {
  return (/id="totp-secret">([A-Z2-7 ]+)</.exec(html)?.[1] ?? '').replace(/ /g, '');
}

/** The text of the newest sign-in code mail to `to` (mail is sent in the background). */
async function latestMail(server: TestServer, to: string): Promise<string> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const messages = await readMailbox(join(server.database.dataDir, 'mail'), { to }).catch(() => []);
    const latest = messages.filter((message) => message.subject.toLowerCase().includes('code')).at(-1);
    if (latest) return latest.text;
    // Real I/O: the next look at the mailbox directory, which a background send writes to.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no code mail for ${to}`);
}
