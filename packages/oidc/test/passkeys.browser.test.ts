import { mkdirSync } from 'node:fs';
import {
  bootstrapAdmin,
  type CallbackPage,
  consoleProblems,
  discover,
  launchChromium,
  oidcClient,
  registerUser,
  startCallbackPage,
  startTestServer,
  type TestServer,
  withoutChromium,
} from '@idt/testing';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SHOTS = '/tmp/h49-shots';
const PASSWORD = 'correct horse battery staple';
const ACR_MFA = 'urn:idt:acr:mfa';

describe.skipIf(withoutChromium)('passkeys in headless Chromium with a virtual authenticator', () => {
  let server: TestServer;
  let browser: Browser;
  let relyingParty: CallbackPage;
  let REDIRECT: string;
  let config: oidcClient.Configuration;
  /** A browser tab with its own virtual authenticator. */
  interface Tab {
    readonly context: BrowserContext;
    readonly page: Page;
    readonly devtools: CDPSession;
    readonly authenticatorId: string;
    readonly problems: string[];
  }
  /** The tab as a browser with passkey autofill (conditional UI) sees the pages. */
  let autofill: Tab;
  /** A tab whose browser offers no conditional UI: the buttons ask for passkeys. */
  let buttons: Tab;
  /** The tab the steps below drive. */
  let tab: Tab;
  let page: Page;
  let user: { id: string; email: string };

  beforeAll(async () => {
    relyingParty = await startCallbackPage();
    REDIRECT = relyingParty.url;
    // A relying party id cannot be an IP address: the issuer is http://localhost:PORT (a secure context).
    server = await startTestServer({ hostname: 'localhost' });
    await bootstrapAdmin(server);
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: 'Passkey app', redirectUris: [REDIRECT], scopes: ['openid', 'email', 'profile'] },
      { firstParty: true },
    );
    config = await discover(server, {
      clientId: registration.client.clientId,
      clientSecret: registration.clientSecret ?? '',
      record: {},
    });
    const email = `passkey-${Date.now().toString(36)}@example.com`;
    user = { id: await registerUser(server, email, PASSWORD), email };
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
    autofill = await openTab(false);
    buttons = await openTab(true);
  }, 60_000);

  async function openTab(withoutConditionalUi: boolean): Promise<Tab> {
    const context = await browser.newContext();
    if (withoutConditionalUi) {
      await context.addInitScript({
        content:
          'if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);',
      });
    }
    const page = await context.newPage();
    const problems = consoleProblems(page);
    const devtools = await context.newCDPSession(page);
    await devtools.send('WebAuthn.enable');
    const { authenticatorId } = await devtools.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    return { context, page, devtools, authenticatorId, problems };
  }

  /**
   * Drives `next` from now on, its authenticator holding the passkeys (with
   * their counters) of the tab used before: one user's passkey in two browsers.
   */
  async function use(next: Tab) {
    if (tab && tab !== next) {
      const { credentials } = await tab.devtools.send('WebAuthn.getCredentials', { authenticatorId: tab.authenticatorId });
      await next.devtools.send('WebAuthn.clearCredentials', { authenticatorId: next.authenticatorId });
      for (const credential of credentials) {
        await next.devtools.send('WebAuthn.addCredential', { authenticatorId: next.authenticatorId, credential });
      }
    }
    tab = next;
    page = next.page;
    await next.context.clearCookies();
  }
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await relyingParty?.close();
  });

  /** Starts an authorization request in the page; the PKCE verifier and state. */
  async function authorize() {
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email profile',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    await page.goto(url.href);
    return { verifier, state };
  }

  /** Redeems the code the page was redirected with; the id token's claims. */
  async function idClaims(flow: { verifier: string; state: string }) {
    await page.waitForURL((url) => url.href.startsWith(REDIRECT));
    const tokens = await oidcClient.authorizationCodeGrant(config, new URL(page.url()), {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
    });
    return tokens.claims() as Record<string, unknown>;
  }

  async function shoot(name: string) {
    for (const width of [360, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: `${SHOTS}/d-${name}-${width}.png`, fullPage: true });
    }
  }

  /** The stored signature counter of the user's passkey. */
  async function counter(): Promise<number> {
    const row = await server.database.db('identity_passkeys').where({ user_id: user.id }).first('counter');
    return Number(row.counter);
  }

  async function credentials() {
    return (await tab.devtools.send('WebAuthn.getCredentials', { authenticatorId: tab.authenticatorId })).credentials;
  }

  it('registers a passkey on the account page after a password sign-in', { timeout: 60_000 }, async () => {
    await use(buttons);
    const flow = await authorize();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.locator('#email').getAttribute('autocomplete')).toBe('username webauthn');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    await shoot('sign-in');
    await page.fill('#email', user.email);
    await page.fill('#password', PASSWORD);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(REDIRECT)),
      page.locator('form[action$="/login"] button').click(),
    ]);
    expect(await idClaims(flow)).toMatchObject({ sub: user.id, amr: ['pwd'] });

    await page.goto(`${server.url}/connect/account`);
    await Promise.all([page.waitForURL(/\/connect\/account\/passkeys$/), page.getByRole('link', { name: 'Passkeys' }).click()]);
    await page.getByRole('heading', { name: 'Passkeys', level: 1 }).waitFor();
    expect(await page.getByText('You have no passkeys yet.').count()).toBe(1);
    await shoot('account-passkeys-empty');
    await page.fill('#passkey-name', 'Test laptop');
    await Promise.all([page.waitForURL(/done=added/), page.getByRole('button', { name: 'Add a passkey' }).click()]);
    await page.getByText('Passkey added.').waitFor();
    expect(await page.locator('.passkey-item strong').allTextContents()).toEqual(['Test laptop']);
    await shoot('account-passkeys');
    const stored = await credentials();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });
    const rows = await server.database.db('identity_passkeys').where({ user_id: user.id });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ name: 'Test laptop', device_type: 'singleDevice' });
    expect(tab.problems).toEqual([]);
  });

  it('signs in without a password with the button: amr hwk mfa, acr mfa', { timeout: 60_000 }, async () => {
    await use(buttons);
    const before = await counter();
    const flow = await authorize();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    const claims = await idClaims(flow);
    expect(claims).toMatchObject({ sub: user.id, amr: ['hwk', 'mfa'], acr: ACR_MFA });
    // The authenticator's signature counter is kept (and must move forward).
    expect(await counter()).toBeGreaterThan(before);
    const row = await server.database.db('identity_passkeys').where({ user_id: user.id }).first();
    expect(row.last_used_at).not.toBeNull();
    expect(tab.problems).toEqual([]);
  });

  it('signs in with passkey autofill (conditional UI on the e-mail field)', { timeout: 60_000 }, async () => {
    await use(autofill);
    const before = await counter();
    // The page asks with mediation "conditional" as it loads; the virtual authenticator answers as a user picking the passkey would.
    const flow = await authorize();
    const claims = await idClaims(flow);
    expect(claims).toMatchObject({ sub: user.id, amr: ['hwk', 'mfa'], acr: ACR_MFA });
    expect(await counter()).toBeGreaterThan(before);
    expect(tab.problems).toEqual([]);
  });

  it('asks the passkey as the second step after the password: amr pwd hwk mfa', { timeout: 60_000 }, async () => {
    await use(buttons);
    const flow = await authorize();
    await page.fill('#email', user.email);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForURL(/\/login$/), page.locator('form[action$="/login"] button').click()]);
    await page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
    await page.getByRole('button', { name: 'Use a passkey' }).waitFor();
    await shoot('second-factor');
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    const claims = await idClaims(flow);
    expect(claims).toMatchObject({ sub: user.id, acr: ACR_MFA });
    expect(claims.amr).toEqual(['pwd', 'hwk', 'mfa']);
    expect(tab.problems).toEqual([]);
  });

  it('refuses a tampered origin and a reused challenge; nothing is signed in', { timeout: 60_000 }, async () => {
    await use(buttons);
    await authorize();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
    // An assertion the authenticator really made for this interaction's challenge (the page's script stays out of it).
    const genuine = (await page.evaluate(`(async () => {
      const form = document.querySelector('form[data-passkey="sign-in"]');
      const options = await (await fetch(form.dataset.options)).json();
      const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) });
      return JSON.stringify(credential.toJSON());
    })()`)) as string;
    const parsed = JSON.parse(genuine) as { response: { clientDataJSON: string } };
    const clientData = JSON.parse(Buffer.from(parsed.response.clientDataJSON, 'base64url').toString());
    expect(clientData.origin).toBe(new URL(server.url).origin);
    const tampered = JSON.stringify({
      ...parsed,
      response: {
        ...parsed.response,
        clientDataJSON: Buffer.from(
          JSON.stringify({ ...clientData, origin: `http://127.0.0.1:${new URL(server.url).port}` }),
        ).toString('base64url'),
      },
    });
    const post = (credential: string) =>
      Promise.all([
        page.waitForURL(/\/passkey$/),
        page.evaluate(`(() => {
          const form = document.querySelector('form[data-passkey="sign-in"]');
          form.elements.namedItem('credential').value = ${JSON.stringify(credential)};
          HTMLFormElement.prototype.submit.call(form);
        })()`),
      ]);
    await post(tampered);
    await page.getByText('That passkey could not be used to sign in here.').waitFor();
    // The challenge went with the refused attempt: the genuine assertion for it is refused too.
    await post(genuine);
    await page.getByText('The passkey request expired or was already used. Try again.').waitFor();
    await shoot('sign-in-refused');
    expect(new URL(page.url()).origin).toBe(new URL(server.url).origin);
    expect((await tab.context.cookies()).some((cookie) => cookie.name === 'idt_session')).toBe(false);
  });

  it('removes the passkey on the account page; it no longer signs in', { timeout: 60_000 }, async () => {
    await use(buttons);
    const flow = await authorize();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await idClaims(flow);
    await page.goto(`${server.url}/connect/account/passkeys`);
    await page.fill('.passkey-item input[name="name"]', 'Old laptop');
    await Promise.all([page.waitForURL(/done=renamed/), page.getByRole('button', { name: 'Rename' }).click()]);
    expect(await page.locator('.passkey-item strong').allTextContents()).toEqual(['Old laptop']);
    await Promise.all([
      page.waitForURL(/done=removed/),
      page.getByRole('button', { name: 'Remove the passkey Old laptop' }).click(),
    ]);
    await page.getByText('Passkey removed.').waitFor();
    expect(await page.getByText('You have no passkeys yet.').count()).toBe(1);
    expect(await server.database.db('identity_passkeys').where({ user_id: user.id })).toHaveLength(0);

    // The authenticator still holds it, but the service refuses it.
    await tab.context.clearCookies();
    await authorize();
    await Promise.all([page.waitForURL(/\/passkey$/), page.getByRole('button', { name: 'Sign in with a passkey' }).click()]);
    await page.getByText('That passkey could not be used to sign in here.').waitFor();
    expect(tab.problems).toEqual([]);
  });
});
