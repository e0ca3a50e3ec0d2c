import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  type CallbackPage,
  caller,
  discover,
  expectJson,
  lastDocument,
  launchChromium,
  oidcClient,
  openTab,
  registerClient,
  seedWorld,
  startCallbackPage,
  startTestServer,
  type TestDialect,
  type TestServer,
  testDialects,
  type World,
  withoutChromium,
} from '@idt/testing';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCertificate } from './support/certificate.js';
import { type DnsResponder, startDnsResponder } from './support/dns-responder.js';
import { createTestIdentityProvider, type TestIdentityProvider } from './support/saml-idp.js';
import { verifyDomain } from './support/sign-in.js';

/**
 * SP-initiated SAML sign-in of issue 50 in headless Chromium, against the
 * reference server on a loopback port: a relying party (openid-client,
 * PKCE) starts the sign-in, the identifier-first page sends an address of
 * Alpha's verified domain to Alpha's SAML identity provider (samlify in the
 * IdP role, on `localhost`, so its post to the ACS on `127.0.0.1` is
 * cross-site as in production), and the code the relying party gets back
 * redeems to an id token of Alpha with the mapped roles. A response signed
 * with another key ends on the error page with nothing created.
 *
 * The pages are looked at as the other browser suites do: screenshots in
 * test-results/sso-sign-in (`saml-*`), axe-core (no serious or critical violation) at
 * 360 and 1440 px, no console or CSP message, and the keyboard.
 */

const SHOTS = join(import.meta.dirname, '..', '..', '..', 'test-results', 'sso-sign-in');
const WIDTHS = [360, 1440] as const;
/** axe-core's browser build, evaluated through the DevTools protocol (the pages' CSP allows no inline script). */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const SCOPE = 'openid email profile roles';

/** One axe finding, as the report keeps it. */
interface AxeFinding {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: string[];
}

/** Runs axe-core in the page (its default rules); every violation, and how many rules passed. */
async function axe(page: Page): Promise<{ violations: AxeFinding[]; passed: number }> {
  if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate<void>(`${AXE_SOURCE}\n;void 0`);
  return page.evaluate<{ violations: AxeFinding[]; passed: number }>(`axe.run(document).then((result) => ({
    passed: result.passes.length,
    violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) })),
  }))`);
}

/** Presses Tab until `selector` has the focus (at most `max` times); fails when it never does. */
async function tabTo(page: Page, selector: string, max = 30): Promise<number> {
  for (let presses = 1; presses <= max; presses++) {
    await page.keyboard.press('Tab');
    if ((await page.locator(`${selector}:focus`).count()) === 1) return presses;
  }
  throw new Error(`${selector} never got the keyboard focus on ${page.url()}`);
}

function escapeHtml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The person the test identity provider signs in. */
interface IdpUser {
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly groups: readonly string[];
}

/** An AuthnRequest the test identity provider received. */
interface ReceivedRequest {
  readonly id: string;
  readonly acsUrl: string;
  readonly destination: string;
}

/**
 * A SAML identity provider on a loopback HTTP port: `GET /sso` (HTTP-Redirect
 * binding) reads the AuthnRequest and answers a small sign-in page whose
 * button posts a signed SAMLResponse to the request's ACS URL.
 */
interface BrowserIdentityProvider {
  readonly origin: string;
  /** The provider whose key the connection trusts (its metadata goes to idt). */
  readonly trusted: TestIdentityProvider;
  /** Which key signs the next responses. */
  signWith: 'trusted' | 'impostor';
  /** Who signs in next. */
  user: IdpUser;
  /** The service provider's metadata (samlify reads the request and makes the response with it). */
  spMetadata: string;
  readonly requests: ReceivedRequest[];
  close(): Promise<void>;
}

async function startBrowserIdentityProvider(): Promise<BrowserIdentityProvider> {
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  // `localhost`, not 127.0.0.1: another site than idt's, so the post to the ACS is a cross-site one.
  const origin = `http://localhost:${(http.address() as AddressInfo).port}`;
  const options = { entityId: `${origin}/metadata`, ssoUrl: `${origin}/sso` };
  const trusted = createTestIdentityProvider(options);
  // The same entity id and endpoints, another key: what a forger (or a rotated key idt was not told of) signs with.
  const impostor = createTestIdentityProvider({ ...options, certificate: createTestCertificate('impostor') });
  const idp: BrowserIdentityProvider = {
    origin,
    trusted,
    signWith: 'trusted',
    user: { email: '', firstName: '', lastName: '', groups: [] },
    spMetadata: '',
    requests: [],
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };

  async function signInPage(url: string): Promise<string> {
    const request = await trusted.readRequest(url, idp.spMetadata);
    idp.requests.push({ id: request.id, acsUrl: request.acsUrl, destination: request.destination });
    const { user } = idp;
    const samlResponse = await (idp.signWith === 'trusted' ? trusted : impostor).respond({
      spMetadata: idp.spMetadata,
      now: new Date(),
      inResponseTo: request.id,
      nameId: user.email,
      attributes: {
        email: [user.email],
        firstName: [user.firstName],
        lastName: [user.lastName],
        groups: [...user.groups],
      },
      tags: { Destination: request.acsUrl, SubjectRecipient: request.acsUrl },
    });
    const relayState = request.relayState
      ? `<input type="hidden" name="RelayState" value="${escapeHtml(request.relayState)}">`
      : '';
    return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>Test identity provider</title></head>
<body><main>
<h1>Test identity provider</h1>
<p>Signed in as ${escapeHtml(user.email)}.</p>
<form method="post" action="${escapeHtml(request.acsUrl)}">
<input type="hidden" name="SAMLResponse" value="${escapeHtml(samlResponse)}">${relayState}
<button type="submit">Continue to the application</button>
</form>
</main></body>
</html>
`;
  }

  http.on('request', (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    if (req.method !== 'GET' || url.pathname !== '/sso') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    signInPage(url.href).then(
      (page) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(page),
      (error: unknown) => res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad request: ${String(error)}`),
    );
  });
  return idp;
}

describe.skipIf(withoutChromium)('SAML sign-in in headless Chromium', () => {
  let browser: Browser;
  /** Every axe finding (any impact), by page and width, written next to the screenshots (the directory is shared with the OIDC suite: `saml-` names). */
  const report: Record<string, AxeFinding[]> = {};

  beforeAll(async () => {
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    writeFileSync(join(SHOTS, 'saml-axe-findings.json'), `${JSON.stringify(report, null, 2)}\n`);
    await browser?.close();
  });

  describe.each(testDialects())('on %s', (dialect: TestDialect) => {
    let server: TestServer;
    let world: World;
    let dns: DnsResponder;
    let idp: BrowserIdentityProvider;
    let relyingParty: CallbackPage;
    let connectionId: string;
    let client: Awaited<ReturnType<typeof registerClient>>;
    const db = () => server.database.db;

    beforeAll(async () => {
      dns = await startDnsResponder();
      idp = await startBrowserIdentityProvider();
      relyingParty = await startCallbackPage();
      server = await startTestServer({
        dialect,
        env: { IDT_SSO_DNS_SERVERS: dns.server, IDT_SSO_ALLOW_PRIVATE_HOSTS: 'true' },
      });
      world = await seedWorld(server);
      const call = caller(server);
      const alpha = world.a;
      const created = await expectJson(
        await call('POST', `/v1/identity/organizations/${alpha.organization.id}/sso/connections`, {
          token: alpha.tokens.admin,
          body: {
            kind: 'saml',
            name: 'Alpha Test IdP',
            enabled: true,
            saml: { metadataXml: idp.trusted.metadata },
            roleMapping: [
              { group: 'idt-admins', role: 'admin' },
              { group: 'idt-managers', role: 'manager' },
            ],
            defaultRole: 'user',
          },
        }),
        201,
      );
      connectionId = created.id;
      expect(created).toMatchObject({ enabled: true, saml: { acsUrl: `${server.url}/sso/saml/${connectionId}/acs` } });
      idp.spMetadata = await (await server.fetch(`/sso/saml/${connectionId}/metadata`)).text();
      await verifyDomain(call, dns, alpha.organization.id, alpha.tokens.admin, 'alpha.example');
      client = await registerClient(server, alpha.tokens.admin, alpha.organization.id, {
        kind: 'application',
        name: 'Alpha Portal',
        redirectUris: [relyingParty.url],
        scopes: ['openid', 'email', 'profile', 'roles'],
      });
    });

    afterAll(async () => {
      await server?.close();
      await idp?.close();
      await relyingParty?.close();
      await dns?.close();
    });

    /** The relying party's authorization request (PKCE S256, state, nonce), as openid-client builds it. */
    async function authorization() {
      const config = await discover(server, client);
      const codeVerifier = oidcClient.randomPKCECodeVerifier();
      const state = oidcClient.randomState();
      const nonce = oidcClient.randomNonce();
      const url = oidcClient.buildAuthorizationUrl(config, {
        redirect_uri: relyingParty.url,
        scope: SCOPE,
        code_challenge: await oidcClient.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { config, url, codeVerifier, state, nonce };
    }

    /** Screenshots at each width, axe-core with no serious or critical violation, no sideways scroll at 360 px. */
    async function inspect(page: Page, name: string) {
      for (const width of WIDTHS) {
        const label = `saml-${dialect}-${name}-${width}`;
        await page.setViewportSize({ width, height: 900 });
        await page.screenshot({ path: join(SHOTS, `${label}.png`), fullPage: true });
        if (width === 360) {
          expect(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'), label).toBe(true);
        }
        const { violations, passed } = await axe(page);
        report[label] = violations;
        expect(passed, `${label}: axe checked nothing`).toBeGreaterThan(10);
        expect(
          violations.filter((finding) => finding.impact === 'serious' || finding.impact === 'critical'),
          label,
        ).toEqual([]);
      }
      await page.setViewportSize({ width: 360, height: 900 });
    }

    /** From the authorization URL to the IdP's page: the identifier-first page, the address typed, Enter. */
    async function toIdentityProvider(page: Page, url: URL, email: string, look: boolean) {
      await page.goto(url.href);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(page.url()).toMatch(new RegExp(`^${server.url}/connect/interaction/[^/]+$`));
      // Identifier-first: the address alone.
      expect(await page.locator('input[type="password"]').count()).toBe(0);
      expect(await page.locator(`form[action$="/identify"] #email`).count()).toBe(1);
      const csp = lastDocument(page)?.headers()['content-security-policy'] ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      if (look) await inspect(page, 'identifier-first');

      const before = idp.requests.length;
      await page.locator('body').focus();
      await tabTo(page, '#email');
      await page.keyboard.type(email);
      await Promise.all([
        page.waitForURL((target) => target.href.startsWith(`${idp.origin}/sso?`)),
        page.keyboard.press('Enter'),
      ]);
      await page.getByRole('heading', { name: 'Test identity provider' }).waitFor();
      expect(idp.requests.length).toBe(before + 1);
      // The AuthnRequest idt sent: its own ACS, and the IdP's SSO URL as Destination.
      expect(idp.requests.at(-1)).toMatchObject({
        acsUrl: `${server.url}/sso/saml/${connectionId}/acs`,
        destination: `${idp.origin}/sso`,
      });
      // The HTTP-Redirect binding: the request rides in the query.
      expect(new URL(page.url()).searchParams.get('SAMLRequest')).toBeTruthy();
    }

    async function counts() {
      const [users, memberships, identities] = await Promise.all(
        ['identity_users', 'identity_memberships', 'sso_identities'].map(async (table) =>
          Number((await db()(table).count({ n: '*' }).first())?.n),
        ),
      );
      return { users, memberships, identities };
    }

    it('signs in through the organization’s SAML provider: JIT user, Alpha membership with the mapped role, id token of Alpha', {
      timeout: 60_000,
    }, async () => {
      const email = 'ada@alpha.example';
      idp.signWith = 'trusted';
      idp.user = { email, firstName: 'Ada', lastName: 'Lovelace', groups: ['idt-admins', 'engineering'] };
      const rp = await authorization();
      const { context, page, problems } = await openTab(browser);
      await toIdentityProvider(page, rp.url, email, true);

      // The IdP's page: its button, by keyboard, posts the signed response to the ACS.
      await tabTo(page, 'button[type="submit"]');
      const federatedRequest = page.waitForRequest((request) =>
        /\/connect\/interaction\/[^/]+\/federated\?result=[A-Za-z0-9_-]+$/.test(request.url()),
      );
      const acs = page.waitForResponse((response) => response.url().endsWith(`/sso/saml/${connectionId}/acs`));
      await page.keyboard.press('Enter');
      const acsResponse = await acs;
      // A page that moves on by itself (a 303 would stay bound to the IdP page's form-action).
      expect(acsResponse.status()).toBe(200);
      expect(acsResponse.headers().location).toBeUndefined();
      const federated = await federatedRequest;
      expect(federated.method()).toBe('GET');

      // Alpha's portal is not first-party: the consent page (Allow, by keyboard), then the callback with a code.
      await page.getByRole('heading', { name: 'Allow Alpha Portal?' }).waitFor();
      expect(page.url().startsWith(`${server.url}/connect/`), page.url()).toBe(true);
      await inspect(page, 'consent');
      await tabTo(page, 'button[name="decision"][value="approve"]');
      await Promise.all([page.waitForURL((target) => target.href.startsWith(relyingParty.url)), page.keyboard.press('Enter')]);
      const callback = new URL(page.url());
      expect(callback.searchParams.get('code')).toBeTruthy();
      expect(callback.searchParams.get('state')).toBe(rp.state);

      // The relying party redeems the code.
      const tokens = await oidcClient.authorizationCodeGrant(rp.config, callback, {
        pkceCodeVerifier: rp.codeVerifier,
        expectedState: rp.state,
        expectedNonce: rp.nonce,
      });
      const claims = tokens.claims();
      const alpha = world.a.organization;
      expect(claims).toMatchObject({
        email,
        email_verified: true,
        given_name: 'Ada',
        family_name: 'Lovelace',
        org_id: alpha.id,
        org_name: alpha.name,
        roles: ['admin'],
      });

      // The user exists, with an active membership in Alpha and nowhere else.
      const user = await db()('identity_users').where({ email }).first();
      expect(user).toMatchObject({
        id: claims?.sub,
        first_name: 'Ada',
        last_name: 'Lovelace',
        password_hash: null,
        status: 'active',
      });
      const memberships = await db()('identity_memberships')
        .where({ user_id: user.id })
        .select('id', 'organization_id', 'status');
      expect(memberships.map(({ organization_id, status }) => ({ organization_id, status }))).toEqual([
        { organization_id: alpha.id, status: 'active' },
      ]);
      expect(await db()('identity_membership_roles').where({ membership_id: memberships[0]?.id }).pluck('role')).toEqual([
        'admin',
      ]);
      expect(await db()('sso_identities').where({ connection_id: connectionId, subject: email }).first()).toMatchObject({
        user_id: user.id,
      });
      expect(problems).toEqual([]);
      await context.close();
    });

    it('ends a response signed with another key on the error page naming Alpha’s identity provider, creating nothing', {
      timeout: 60_000,
    }, async () => {
      const email = 'mallory@alpha.example';
      idp.signWith = 'impostor';
      idp.user = { email, firstName: 'Mallory', lastName: 'Forger', groups: ['idt-admins'] };
      const before = await counts();
      const rp = await authorization();
      const { context, page, problems } = await openTab(browser);
      try {
        await toIdentityProvider(page, rp.url, email, false);
        const [acsResponse] = await Promise.all([
          page.waitForResponse((response) => response.url().endsWith(`/sso/saml/${connectionId}/acs`)),
          page.getByRole('button', { name: 'Continue to the application' }).click(),
        ]);
        expect(acsResponse.status()).toBe(400);
        expect(acsResponse.headers()['content-type']).toContain('text/html');
        await page.waitForLoadState('load');
        expect(page.url()).toBe(`${server.url}/sso/saml/${connectionId}/acs`);
        const heading = await page.getByRole('heading', { level: 1 }).textContent();
        expect(heading).toBe(`Signing in through ${world.a.organization.name}’s identity provider did not work`);
        expect(await page.locator('main').textContent()).toContain('Go back to the application and sign in again');
        // Neither a stack nor the library's words about the signature, anywhere in the document.
        expect(await acsResponse.text()).not.toMatch(/Error:|\n\s+at |stack|signature|node-saml|xmldom|SAMLResponse/i);
        await inspect(page, 'error-wrong-key');
        expect(problems).toEqual([]);
      } finally {
        idp.signWith = 'trusted';
        await context.close();
      }
      expect(await counts()).toEqual(before);
      expect(await db()('identity_users').where({ email }).first()).toBeUndefined();
      expect(await db()('sso_identities').where({ connection_id: connectionId, subject: email }).first()).toBeUndefined();
    });
  });
});
