import type { ManualClock } from '@idt/core';
import {
  Browser,
  type BrowserResponse,
  bootstrapAdmin,
  createTestIdt,
  discover,
  oidcClient,
  parseForms,
  registerUser,
  SoftAuthenticator,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIRECT_URI, unique } from './clients-support.js';

const PASSWORD = 'correct horse battery staple';
const ACR_MFA = 'urn:idt:acr:mfa';
type Json = Record<string, any>;

/**
 * The passkey pages over HTTP with a scripted browser and a software
 * authenticator (the Chromium suite, `passkeys.browser.test.ts`, drives the
 * real script): the interaction's options and forms, the account page's
 * recent-authentication rule on the manual clock, and their refusals.
 */
describe.each(testDialects())('passkey pages on %s', (dialect) => {
  let server: TestIdt;
  let clock: ManualClock;
  let config: oidcClient.Configuration;
  let origin: string;
  let counter = 0;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    clock = server.idt.clock as ManualClock;
    await bootstrapAdmin(server);
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: unique('Passkeys'), redirectUris: [REDIRECT_URI], scopes: ['openid', 'email', 'profile'] },
      { firstParty: true },
    );
    config = await discover(server, {
      clientId: registration.client.clientId,
      clientSecret: registration.clientSecret ?? '',
      record: {},
    });
    origin = new URL(server.url).origin;
  });
  afterAll(async () => {
    await server?.close();
  });

  async function newUser() {
    const email = `pages-${++counter}-${dialect}@example.com`;
    return { email, id: await registerUser(server, email, PASSWORD) };
  }

  async function authorize(browser: Browser) {
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: 'openid email profile',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    return { page: await browser.navigate(url.href), verifier, state };
  }

  async function idClaims(done: BrowserResponse, flow: { verifier: string; state: string }) {
    const callback = new URL(done.url);
    expect(callback.searchParams.get('code'), done.body.slice(0, 800)).toBeTruthy();
    const tokens = await oidcClient.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    return tokens.claims() as Record<string, unknown>;
  }

  /** The action URL of the form whose action ends with `suffix` on the last page. */
  function formOf(browser: Browser, suffix: string) {
    const page = browser.last as BrowserResponse;
    const form = parseForms(page.body, page.url).find((candidate) => candidate.action.endsWith(suffix));
    if (!form) throw new Error(`No form ${suffix} on ${page.url}:\n${page.body.slice(0, 1500)}`);
    return form;
  }

  /** The JSON options a form's `data-options` names (GET on the sign-in pages). */
  async function requestOptions(browser: Browser, path: string): Promise<Json> {
    const page = browser.last;
    const response = await browser.request(new URL(path, server.url).href, { headers: { accept: 'application/json' } });
    browser.last = page; // the script fetches; the page stays
    expect(response.status, response.body).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    return JSON.parse(response.body) as Json;
  }

  function dataOptions(body: string, kind: string): string {
    const match = new RegExp(`data-passkey="${kind}" data-options="([^"]+)"`).exec(body);
    if (!match?.[1]) throw new Error(`No ${kind} passkey form`);
    return match[1].replace(/&amp;/g, '&');
  }

  /** Signs in with the password in a new scripted browser; the browser (with its session cookie). */
  async function signedIn(email: string) {
    const browser = new Browser({}, server.send);
    const flow = await authorize(browser);
    const done = await browser.submit({ form: '/login', fields: { email, password: PASSWORD } });
    await idClaims(done, flow);
    return browser;
  }

  /** Registers a passkey on the account page; the software authenticator holding it. */
  async function registerOnPage(browser: Browser, authenticator = new SoftAuthenticator(origin), name = 'Laptop') {
    const page = await browser.navigate(`${server.url}/connect/account/passkeys`);
    expect(page.status).toBe(200);
    const form = formOf(browser, '/passkeys/register');
    const options = await browser.request(`${server.url}/connect/account/passkeys/options`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams({ csrf: form.fields.csrf ?? '' }).toString(),
    });
    expect(options.status, options.body).toBe(200);
    browser.last = page; // the script fetched; the page stays
    const credential = authenticator.create(JSON.parse(options.body));
    const done = await browser.submit({ form: '/passkeys/register', fields: { credential: JSON.stringify(credential), name } });
    expect(done.url).toContain('done=added');
    return authenticator;
  }

  it('serves passkey.js and lets the pages fetch from their own origin', async () => {
    const script = await server.fetch('/connect/assets/passkey.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).toContain('parseRequestOptionsFromJSON');
    const browser = new Browser({}, server.send);
    const { page } = await authorize(browser);
    expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
    expect(page.body).toContain('<script src="/connect/assets/passkey.js" defer></script>');
    expect(page.body).toMatch(/<form method="post" action="[^"]+\/passkey" class="passkey" data-passkey="sign-in"[^>]* hidden>/);
  });

  it('signs in with a discoverable passkey bound to the interaction, once; a second step asks only the user’s own', async () => {
    const ada = await newUser();
    const bob = await newUser();
    const adaKey = await registerOnPage(await signedIn(ada.email));
    const bobKey = await registerOnPage(await signedIn(bob.email));

    // First factor: no allowCredentials; the interaction's challenge.
    const browser = new Browser({}, server.send);
    const flow = await authorize(browser);
    const request = await requestOptions(browser, dataOptions(flow.page.body, 'sign-in'));
    expect(request).toMatchObject({ rpId: new URL(server.url).hostname, userVerification: 'required' });
    expect(request.allowCredentials).toBeUndefined();
    await expect(requestOptions(browser, `${dataOptions(flow.page.body, 'sign-in')}?step=second-factor`)).rejects.toThrow();
    const assertion = adaKey.get(request as never);
    for (const credential of ['', 'not json', JSON.stringify({ id: 'x' }), 'x'.repeat(13_000)]) {
      const refused = await browser.submit({ form: '/passkey', fields: { credential } });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatch(/role="alert"/);
    }
    // Posts that carry no assertion at all leave the challenge waiting.
    const done = await browser.submit({ form: '/passkey', fields: { credential: JSON.stringify(assertion) } });
    expect(await idClaims(done, flow)).toMatchObject({ sub: ada.id, amr: ['hwk', 'mfa'], acr: ACR_MFA });

    // The same assertion in another interaction: another challenge, refused.
    const other = new Browser({}, server.send);
    await authorize(other);
    await requestOptions(other, dataOptions((other.last as BrowserResponse).body, 'sign-in'));
    const replayed = await other.submit({ form: '/passkey', fields: { credential: JSON.stringify(assertion) } });
    expect(replayed.status).toBe(400);
    expect(replayed.body).toContain('That passkey could not be used to sign in here.');

    // Second factor after Ada's password: only her passkeys, and Bob's is refused.
    const second = new Browser({}, server.send);
    const secondFlow = await authorize(second);
    const step = await second.submit({ form: '/login', fields: { email: ada.email, password: PASSWORD } });
    expect(step.body).toContain('<h1>Two-step verification</h1>');
    const secondOptions = await requestOptions(second, dataOptions(step.body, 'second-factor'));
    expect(secondOptions.allowCredentials).toHaveLength(1);
    const wrongUser = await second.submit({
      form: '/passkey-second-factor',
      fields: { credential: JSON.stringify(bobKey.get({ ...secondOptions, allowCredentials: [] } as never)) },
    });
    expect(wrongUser.status).toBe(400);
    expect(wrongUser.body).toContain('That passkey is not one of yours');
    const again = await requestOptions(second, dataOptions(wrongUser.body, 'second-factor'));
    const passed = await second.submit({
      form: '/passkey-second-factor',
      fields: { credential: JSON.stringify(adaKey.get(again as never)) },
    });
    const claims = await idClaims(passed, secondFlow);
    expect(claims).toMatchObject({ sub: ada.id, acr: ACR_MFA, amr: ['pwd', 'hwk', 'mfa'] });
  });

  it('asks a signed-in user for the password again after 5 minutes before passkeys change', async () => {
    const user = await newUser();
    const browser = await signedIn(user.email);
    await registerOnPage(browser, new SoftAuthenticator(origin), 'Phone');
    clock.advance(6 * 60_000);
    const page = await browser.navigate(`${server.url}/connect/account/passkeys`);
    expect(page.body).toContain('Confirm it is you');
    expect(page.body).not.toContain('data-passkey="register"');
    expect(page.body).toContain('<strong>Phone</strong>');
    const form = formOf(browser, '/passkeys/confirm');
    const stale = await browser.request(`${server.url}/connect/account/passkeys/options`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams({ csrf: form.fields.csrf ?? '' }).toString(),
    });
    expect(stale.status).toBe(403);
    expect(JSON.parse(stale.body)).toMatchObject({ error: 'reauthenticate' });
    browser.last = page;
    await browser.navigate(`${server.url}/connect/account/passkeys`);
    const wrong = await browser.submit({ form: '/passkeys/confirm', fields: { password: 'not the password' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('The password is wrong.');
    const confirmed = await browser.submit({ form: '/passkeys/confirm', fields: { password: PASSWORD } });
    expect(confirmed.url).toContain('done=confirmed');
    expect(confirmed.body).toContain('data-passkey="register"');

    // Rename: a name too long or empty, another id, then right.
    for (const name of ['', 'x'.repeat(65)]) {
      await browser.navigate(`${server.url}/connect/account/passkeys`);
      const refused = await browser.submit({ form: '/passkeys/rename', fields: { name } });
      expect(refused.status).toBe(400);
    }
    await browser.navigate(`${server.url}/connect/account/passkeys`);
    const unknown = await browser.submit({
      form: '/passkeys/rename',
      fields: { passkey: '00000000-0000-4000-8000-000000000000', name: 'X' },
    });
    expect(unknown.status).toBe(404);
    const renamed = await browser.submit({ form: '/passkeys/rename', fields: { name: 'Old phone' } });
    expect(renamed.url).toContain('done=renamed');
    expect(renamed.body).toContain('<strong>Old phone</strong>');
    const removed = await browser.submit({ form: '/passkeys/remove' });
    expect(removed.url).toContain('done=removed');
    expect(removed.body).toContain('You have no passkeys yet.');
  });

  it('refuses a form without the session’s CSRF token, from another site, or without a session', async () => {
    const user = await newUser();
    const browser = await signedIn(user.email);
    await browser.navigate(`${server.url}/connect/account/passkeys`);
    const forged = await browser.submit({ form: '/passkeys/register', fields: { csrf: 'forged', credential: '{}' } });
    expect(forged.status).toBe(403);
    await browser.navigate(`${server.url}/connect/account/passkeys`);
    const form = formOf(browser, '/passkeys/register');
    const crossSite = await browser.request(form.action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: new URLSearchParams(form.fields).toString(),
    });
    expect(crossSite.status).toBe(403);
    await browser.navigate(`${server.url}/connect/account/passkeys`);
    const garbage = await browser.submit({ form: '/passkeys/register', fields: { credential: 'not json' } });
    expect(garbage.status).toBe(400);
    const anonymous = await new Browser({}, server.send).navigate(`${server.url}/connect/account/passkeys`);
    expect(anonymous.status).toBe(401);
    expect((await browser.request(`${server.url}/connect/account/passkeys/nothing`)).status).toBe(404);
    expect((await browser.request(`${server.url}/connect/account/passkeys/remove`)).status).toBe(405);
    const account = await browser.navigate(`${server.url}/connect/account`);
    expect(account.body).toContain('href="/connect/account/passkeys"');
  });
});
