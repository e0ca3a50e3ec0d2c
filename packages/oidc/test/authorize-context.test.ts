import {
  Browser,
  createTestIdt,
  oidcClient,
  type TenantWithTokens,
  type TestIdt,
  tenantWithTokens,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, configFor, expectJson, expectProblem, REDIRECT_URI, register, unique } from './clients-support.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const THEME = {
  light: { primary: '#0a7d33', primaryForeground: '#ffffff' },
  dark: { primary: '#3fd17a', primaryForeground: '#04140a' },
};

type Config = Awaited<ReturnType<typeof configFor>>;

describe.each(testDialects())('GET /v1/identity/auth/authorize-context on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let tenant: TenantWithTokens;
  let branded: Awaited<ReturnType<typeof register>>;
  let brandedConfig: Config;

  const context = (returnUrl: string) =>
    call('GET', `/v1/identity/auth/authorize-context?returnUrl=${encodeURIComponent(returnUrl)}`);

  /** Starts a sign-in in a fresh browser and stops at the first sign-in page. */
  async function startSignIn(config: Config, scope = 'openid email users.read') {
    const browser = new Browser({}, server.send);
    const url = oidcClient.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope,
      code_challenge: await oidcClient.calculatePKCECodeChallenge(oidcClient.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: oidcClient.randomState(),
    });
    const page = await browser.navigate(url.href);
    expect(page.status, page.body.slice(0, 500)).toBe(200);
    const interaction = new URL(page.url);
    expect(interaction.pathname).toMatch(/^\/connect\/interaction\/[A-Za-z0-9_-]+$/);
    return { browser, page, interaction };
  }

  beforeAll(async () => {
    server = await createTestIdt({ dialect, env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' } });
    call = caller(server);
    tenant = await tenantWithTokens(server, 'Context');
    await server.database
      .db('identity_organizations')
      .where({ id: tenant.organization.id })
      .update({ enrollment_policy: 'open' });
    branded = await register(server, tenant.tokens.admin, tenant.organization.id, {
      kind: 'application',
      name: 'Ledger',
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'profile', 'email', 'users.read'],
    });
    await expectJson(
      await call('PUT', `/v1/identity/organizations/${tenant.organization.id}/clients/${branded.clientId}/branding`, {
        token: tenant.tokens.admin,
        body: { displayName: 'Ledger Cloud', tagline: 'Books that balance', themeJson: THEME, logo: PNG.toString('base64') },
      }),
    );
    brandedConfig = await configFor(server, branded);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('describes a pending sign-in from the live interaction URL: branding and scope descriptions, anonymously', async () => {
    const { interaction } = await startSignIn(brandedConfig);
    const expected = {
      clientId: branded.clientId,
      displayName: 'Ledger Cloud',
      tagline: 'Books that balance',
      logo: `data:image/png;base64,${PNG.toString('base64')}`,
      theme: THEME,
      firstParty: false,
      prompt: 'login',
      scopes: [
        { scope: 'openid', description: 'Sign you in' },
        { scope: 'email', description: 'Your e-mail address' },
        { scope: 'users.read', description: 'Read users' },
      ],
    };
    const response = await context(interaction.href);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await expectJson(response)).toEqual(expected);
    // A path on the sign-in origin works too, as do the page's own sub-paths.
    expect(await expectJson(await context(interaction.pathname))).toEqual(expected);
    expect(await expectJson(await context(`${interaction.href}/login`))).toEqual(expected);
    expect(await expectJson(await context(`${interaction.href}?lang=en`))).toEqual(expected);
  });

  it('follows the sign-in: the consent step is described too, a finished one no longer', async () => {
    const { browser, interaction } = await startSignIn(brandedConfig);
    const user = await tenantUserWithPassword();
    const consent = await browser.submit({ form: '/login', fields: { email: user.email, password: user.password } });
    expect(consent.body).toContain('/consent"');
    const consentUrl = new URL(consent.url);
    const described = await expectJson(await context(consentUrl.href));
    expect(described).toMatchObject({ clientId: branded.clientId, displayName: 'Ledger Cloud', prompt: 'consent' });
    const done = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    expect(new URL(done.url).searchParams.get('code')).toBeTruthy();
    for (const url of new Set([interaction.href, consentUrl.href])) {
      await expectProblem(await context(url), 404, 'Authorize.UnknownReturnUrl');
    }
  });

  it('answers 404 for return URLs on other origins, unknown interactions and anything else', async () => {
    const { interaction } = await startSignIn(brandedConfig);
    const { host } = new URL(server.origin);
    const path = interaction.pathname;
    for (const returnUrl of [
      `https://evil.example${path}`,
      `//evil.example${path}`,
      `http://www.${host}${path}`,
      `https://${host}${path}`,
      `http://${host}:8080${path}`,
      `${server.origin}/connect/interaction/unknownInteractionUid123`,
      '/connect/interaction/unknownInteractionUid123',
      `${server.origin}/connect/interaction/${branded.clientId}`,
      `${server.origin}/v1/identity/users${path}`,
      `${server.origin}${path}/../../authorize`,
      'javascript:alert(1)',
      'not a url',
    ]) {
      await expectProblem(await context(returnUrl), 404, 'Authorize.UnknownReturnUrl');
    }
    await expectProblem(await call('GET', '/v1/identity/auth/authorize-context'), 400, 'Validation.Failed');
    // The interaction is untouched: it is still described.
    await expectJson(await context(interaction.href));
  });

  it('falls back to the client name without branding, tells first-party clients apart, and forgets deleted clients', async () => {
    const plain = await register(server, tenant.tokens.admin, tenant.organization.id, {
      kind: 'application',
      name: unique('Plain'),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'profile'],
    });
    const { interaction } = await startSignIn(await configFor(server, plain), 'openid profile');
    expect(await expectJson(await context(interaction.href))).toEqual({
      clientId: plain.clientId,
      displayName: plain.client.name,
      tagline: null,
      logo: null,
      theme: null,
      firstParty: false,
      prompt: 'login',
      scopes: [
        { scope: 'openid', description: 'Sign you in' },
        { scope: 'profile', description: 'Your name and organization' },
      ],
    });
    expect(
      (
        await call('DELETE', `/v1/identity/organizations/${tenant.organization.id}/clients/${plain.clientId}`, {
          token: tenant.tokens.admin,
        })
      ).status,
    ).toBe(204);
    await expectProblem(await context(interaction.href), 404, 'Authorize.UnknownReturnUrl');

    const firstParty = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: unique('Console'), redirectUris: [REDIRECT_URI], scopes: ['openid'] },
      { firstParty: true },
    );
    const started = await startSignIn(
      await configFor(server, { clientId: firstParty.client.clientId, clientSecret: firstParty.clientSecret }),
      'openid',
    );
    expect(await expectJson(await context(started.interaction.href))).toMatchObject({
      clientId: firstParty.client.clientId,
      firstParty: true,
      scopes: [{ scope: 'openid', description: 'Sign you in' }],
    });
  });

  it('brands the sign-in page; its theme is served within the sign-in only', async () => {
    const { browser, page, interaction } = await startSignIn(brandedConfig);
    expect(page.body).toContain('Ledger Cloud');
    expect(page.body).toContain('Books that balance');
    expect(page.body).toContain(`src="data:image/png;base64,${PNG.toString('base64')}"`);
    const href = /<link rel="stylesheet" href="([^"]+theme[^"]*)">/.exec(page.body)?.[1]?.replace(/&amp;/g, '&');
    expect(href).toBeDefined();
    const themeUrl = new URL(href ?? '', interaction);
    expect(themeUrl.pathname.startsWith(`${interaction.pathname}/`)).toBe(true);
    const css = await browser.request(themeUrl.href);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toContain('text/css');
    expect(css.body).toContain(THEME.light.primary);
    expect(css.body).toContain(THEME.dark.primary);
    // Without the sign-in's cookies there is nothing to read.
    const anonymous = await server.send(themeUrl.href);
    expect(anonymous.status).not.toBe(200);
    expect(await anonymous.text()).not.toContain(THEME.light.primary);
    const byClientId = await server.fetch(`/connect/assets/theme/${encodeURIComponent(branded.clientId)}.css`);
    expect(byClientId.status).toBe(404);
  });

  /** An active member of the tenant with a password (registered over HTTP, then added). */
  async function tenantUserWithPassword() {
    const email = `${unique('member').replace(/\s+/g, '-').toLowerCase()}@example.com`;
    const password = 'correct horse battery staple';
    const response = await call('POST', '/v1/identity/auth/register', {
      body: { email, password, firstName: 'Mem', lastName: 'Ber' },
    });
    await expectJson(response, 201);
    return { email, password };
  }
});
