import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  axe,
  bootstrapAdmin,
  type CallbackPage,
  caller,
  consoleProblems,
  discover,
  expectJson,
  fits,
  launchChromium,
  registerClient,
  registerUser,
  seedMembership,
  seedWorld,
  startCallbackPage,
  startTestServer,
  type TestClient,
  type TestServer,
  type World,
  withoutChromium,
} from '@idt/testing';
import * as oidcClient from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DnsResponder, startDnsResponder } from './support/dns-responder.js';
import { verifyDomain } from './support/sign-in.js';

/**
 * Single sign-on through the real sign-in pages in headless Chromium: a
 * second idt is the organization's OpenID provider. The downstream's page
 * turns identifier-first once Alpha has a connection; Alpha's verified
 * domain routes the address to its provider; the person signs in there and
 * comes back; a real relying party (`openid-client`) redeems the code.
 */

const SHOTS = join(import.meta.dirname, '..', '..', '..', 'test-results', 'sso-sign-in');
const PASSWORD = 'correct horse battery staple';
const LOCAL_PASSWORD = 'violet lantern orbit meadow';
const ADA = 'ada@alpha.example';
const CAROL = 'carol@alpha.example';
const SERIOUS = new Set(['serious', 'critical']);

describe.skipIf(withoutChromium)('OpenID Connect single sign-on through a second idt, in headless Chromium', () => {
  let upstream: TestServer;
  let downstream: TestServer;
  let dns: DnsResponder;
  let browser: Browser;
  let relyingParty: CallbackPage;
  let world: World;
  let app: TestClient;
  let config: oidcClient.Configuration;
  let upstreamOrganizationId: string;
  const problems: string[] = [];
  /** Each open page's console problems so far (they join {@link problems} when it closes). */
  const watched = new WeakMap<Page, string[]>();

  /** A new page in a fresh context (no cookies of an earlier sign-in), its console watched. */
  async function freshPage(width = 1440): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    const seen = consoleProblems(page);
    watched.set(page, seen);
    page.on('close', () => problems.push(...seen));
    return page;
  }

  /** The relying party's authorization request: its URL, PKCE verifier and state. */
  async function authorization(parameters: Record<string, string> = {}) {
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: relyingParty.url,
      scope: 'openid email profile roles',
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...parameters,
    });
    return { url: url.href, verifier, state };
  }

  /**
   * Follows the browser until `stop` holds for its URL, allowing the consent
   * pages it meets on `approveOn` (a redirect chain may cross both servers
   * and the relying party without a page in between).
   */
  async function advance(page: Page, stop: (url: URL) => boolean, approveOn: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const url = new URL(page.url());
      if (stop(url)) {
        await page.waitForLoadState('load');
        return;
      }
      try {
        const allow = page.locator('button[name="decision"][value="approve"]');
        if (url.origin === approveOn && (await allow.count()) > 0) await allow.click({ timeout: 2000 });
      } catch {
        // The page moved on while it was being read: look again.
      }
      await page.waitForTimeout(50);
    }
    const said = (watched.get(page) ?? []).join('\n');
    throw new Error(
      `The browser stopped at ${page.url()} (console: ${said || 'nothing'}):\n${(await page.content()).slice(0, 1500)}`,
    );
  }

  /** Allows the downstream's consent page when it shows, until the browser reaches the relying party. */
  async function approveUntilCallback(page: Page): Promise<URL> {
    await advance(page, (url) => url.href.startsWith(relyingParty.url), downstream.origin);
    return new URL(page.url());
  }

  /** Types the address on the identifier-first page and presses Enter: the browser moves on to the upstream. */
  async function continueAs(page: Page, email: string): Promise<void> {
    await page.locator('#email').fill('');
    await page.locator('#email').focus();
    await page.keyboard.type(email);
    await Promise.all([page.waitForURL((url) => url.origin === upstream.origin), page.keyboard.press('Enter')]);
  }

  /** Signs in on the upstream's page (the address is filled in from `login_hint`). */
  async function signInUpstream(page: Page, email: string): Promise<void> {
    expect(await page.locator('#email').inputValue()).toBe(email);
    await page.locator('#password').fill(PASSWORD);
    await page.locator('#password').press('Enter');
    // The upstream asks its own consent the first time; then the browser comes back to the downstream.
    await advance(page, (url) => url.origin !== upstream.origin, upstream.origin);
  }

  async function memberships(email: string) {
    return downstream.database
      .db('identity_memberships as m')
      .join('identity_users as u', 'u.id', 'm.user_id')
      .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
      .where('u.email', email)
      .select('m.organization_id as organizationId', 'm.status', 'r.role');
  }

  /** How many identities at connections the user has. */
  async function identitiesOf(userId: string): Promise<number> {
    const row = await downstream.database.db('sso_identities').where({ user_id: userId }).count('* as n').first();
    return Number(row?.n ?? 0);
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    relyingParty = await startCallbackPage();
    dns = await startDnsResponder();
    downstream = await startTestServer({ env: { IDT_SSO_DNS_SERVERS: dns.server, IDT_SSO_ALLOW_PRIVATE_HOSTS: 'true' } });
    upstream = await startTestServer();

    // The upstream: Alpha's workforce directory, with an application for the downstream idt.
    const upstreamAdmin = await bootstrapAdmin(upstream);
    upstreamOrganizationId = upstreamAdmin.organizationId;
    const workforce = await registerClient(upstream, await upstreamAdmin.token(), upstreamOrganizationId, {
      kind: 'application',
      name: 'Alpha on idt',
      redirectUris: [`${downstream.url}/sso/oidc/callback`],
      scopes: ['openid', 'email', 'profile'],
    });
    for (const email of [ADA, CAROL]) {
      const userId = await registerUser(upstream, email, PASSWORD);
      await seedMembership(upstream.database.db, { userId, organizationId: upstreamOrganizationId });
    }

    // The downstream: Alpha connects its provider and verifies its domain; Beta stays apart.
    world = await seedWorld(downstream);
    const call = caller(downstream);
    const alpha = world.a;
    await expectJson(
      await call('POST', `/v1/identity/organizations/${alpha.organization.id}/sso/connections`, {
        token: alpha.tokens.admin,
        body: {
          kind: 'oidc',
          name: 'Alpha Workforce',
          enabled: true,
          oidc: { issuer: upstream.url, clientId: workforce.clientId, clientSecret: workforce.clientSecret },
          defaultRole: 'manager',
        },
      }),
      201,
    );
    await verifyDomain(call, dns, alpha.organization.id, alpha.tokens.admin, 'alpha.example');
    app = await registerClient(downstream, alpha.tokens.admin, alpha.organization.id, {
      kind: 'application',
      name: 'Alpha portal',
      redirectUris: [relyingParty.url],
      scopes: ['openid', 'email', 'profile', 'roles'],
    });
    config = await discover(downstream, app);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([downstream?.close(), upstream?.close(), dns?.close(), relyingParty?.close()]);
    expect(problems).toEqual([]);
  });

  it('asks the address first, routes it to Alpha’s provider, and creates the user just in time with the mapped role', async () => {
    const page = await freshPage();
    const request = await authorization();
    await page.goto(request.url);

    // Identifier-first: the address alone, checked at both widths.
    expect(await page.locator('#password').count()).toBe(0);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in');
    for (const width of [360, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: join(SHOTS, `identifier-first-${width}.png`), fullPage: true });
      expect(await fits(page), `identifier-first page at ${width} px scrolls sideways`).toBe(true);
      const { violations } = await axe(page);
      expect(violations.filter((violation) => SERIOUS.has(String(violation.impact)))).toEqual([]);
    }

    await continueAs(page, ADA);
    await signInUpstream(page, ADA);
    const callback = await approveUntilCallback(page);
    const tokens = await oidcClient.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
    });
    const claims = tokens.claims();
    expect(claims).toMatchObject({
      email: ADA,
      email_verified: true,
      org_id: world.a.organization.id,
      org_name: world.a.organization.name,
    });
    expect(claims?.roles).toEqual(['manager']);
    // Alpha only: no membership, and so no token, in Beta.
    expect(await memberships(ADA)).toEqual([{ organizationId: world.a.organization.id, status: 'active', role: 'manager' }]);
    const user = await downstream.database.db('identity_users').where({ email: ADA }).first();
    expect(user.password_hash).toBeNull();
    expect(claims?.sub).toBe(user.id);
    await page.context().close();
  });

  it('routes a login_hint of Alpha’s domain straight to its provider, and signs the returning user in to the same account', async () => {
    const page = await freshPage(360);
    const request = await authorization({ login_hint: ADA });
    await page.goto(request.url);
    expect(new URL(page.url()).origin).toBe(upstream.origin);
    await signInUpstream(page, ADA);
    const callback = await approveUntilCallback(page);
    const tokens = await oidcClient.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
    });
    const user = await downstream.database.db('identity_users').where({ email: ADA }).first();
    expect(tokens.claims()).toMatchObject({ sub: user.id, org_id: world.a.organization.id });
    await page.context().close();
  });

  it('says which organization’s provider failed when the person cancels there', async () => {
    const page = await freshPage();
    await page.goto((await authorization()).url);
    await continueAs(page, ADA);
    const [response] = await Promise.all([
      page.waitForResponse((candidate) => candidate.url().includes('/federated?result=')),
      page.getByRole('link', { name: 'Cancel and return to the application' }).click(),
    ]);
    await page.waitForLoadState('load');
    expect(response.status()).toBe(403);
    await expect(page.locator('h1').textContent()).resolves.toBe(
      `Could not sign you in with ${world.a.organization.name}’s identity provider (Alpha Workforce)`,
    );
    expect(await page.content()).not.toMatch(/access_denied|Error:|stack/);
    await page.screenshot({ path: join(SHOTS, 'provider-declined-1440.png'), fullPage: true });
    const { violations } = await axe(page);
    expect(violations.filter((violation) => SERIOUS.has(String(violation.impact)))).toEqual([]);
    await page.context().close();
  });

  it('asks the owner of an existing account for its password once before linking, then signs in to that account', async () => {
    // Carol has a local account whose address is not verified here: no link without her password.
    const carolId = await registerUser(downstream, CAROL, LOCAL_PASSWORD);
    const page = await freshPage();
    const request = await authorization();
    await page.goto(request.url);
    await continueAs(page, CAROL);
    await signInUpstream(page, CAROL);
    await page.waitForLoadState('load');
    await expect(page.locator('h1').textContent()).resolves.toBe('Confirm it is your account');
    await page.screenshot({ path: join(SHOTS, 'link-account-1440.png'), fullPage: true });
    const { violations } = await axe(page);
    expect(violations.filter((violation) => SERIOUS.has(String(violation.impact)))).toEqual([]);

    // A wrong password links nothing.
    await page.locator('#password').fill('not her password at all');
    await Promise.all([page.waitForNavigation(), page.locator('#password').press('Enter')]);
    expect(await page.content()).toContain('The password is incorrect.');
    expect(await identitiesOf(carolId)).toBe(0);

    await page.locator('#password').fill(LOCAL_PASSWORD);
    await Promise.all([page.waitForNavigation(), page.locator('#password').press('Enter')]);
    const callback = await approveUntilCallback(page);
    const tokens = await oidcClient.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
    });
    expect(tokens.claims()).toMatchObject({ sub: carolId, email: CAROL, org_id: world.a.organization.id });
    expect(await identitiesOf(carolId)).toBe(1);
    await page.context().close();
  });

  it('refuses the password form for Alpha’s addresses once Alpha requires single sign-on, and offers its provider instead', async () => {
    const call = caller(downstream);
    const policy = `/v1/identity/organizations/${world.a.organization.id}/sso/policy`;
    await expectJson(await call('PUT', policy, { token: world.a.tokens.admin, body: { ssoRequired: true } }));
    const bob = 'bob@alpha.example';
    await registerUser(downstream, bob, LOCAL_PASSWORD);
    try {
      const page = await freshPage();
      await page.goto((await authorization()).url);
      // The identifier-first page never shows a password field for Bob; a form posted to the password step by hand is refused.
      const [response] = await Promise.all([
        page.waitForResponse((candidate) => candidate.url().endsWith('/login') && candidate.request().method() === 'POST'),
        // The page's CSP allows no inline script; Runtime.evaluate is not held to it.
        page.evaluate(`(() => {
          const form = document.querySelector('form[action$="/identify"]');
          form.action = form.action.replace(/\\/identify$/, '/login');
          form.querySelector('#email').value = ${JSON.stringify(bob)};
          const field = document.createElement('input');
          field.name = 'password';
          field.type = 'hidden';
          field.value = ${JSON.stringify(LOCAL_PASSWORD)};
          form.append(field);
          form.submit();
        })()`),
      ]);
      expect(response.status()).toBe(403);
      await page.getByRole('link', { name: /^Continue with / }).waitFor();
      expect(await page.content()).toContain(`${world.a.organization.name} requires you to sign in with its single sign-on.`);
      const offer = page.getByRole('link', { name: `Continue with ${world.a.organization.name} single sign-on` });
      await Promise.all([page.waitForURL((url) => url.origin === upstream.origin), offer.click()]);
      await page.context().close();
    } finally {
      await expectJson(await call('PUT', policy, { token: world.a.tokens.admin, body: { ssoRequired: false } }));
    }
  });
});
