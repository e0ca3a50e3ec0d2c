import { createHash } from 'node:crypto';
import {
  createSkippingClock,
  createTestIdt,
  mintAccessToken,
  type SkippingClock,
  seedOrganization,
  type TestIdt,
  type TestReferenceModules,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  caller,
  clientRow,
  expectJson,
  expectProblem,
  jwtPayload,
  register,
  seedWorld,
  serviceToken,
  unique,
} from './clients-support.js';

const PLATFORM_ONLY = ['apikeys.manage', 'organizations.manage', 'roles.manage', 'users.manage', 'webhooks.manage'];

/** Every operation of the clients, scopes, consents and authorize-context surfaces. */
const OPERATIONS = [
  'listOrganizationClients',
  'registerOrganizationClient',
  'getOrganizationClient',
  'updateOrganizationClient',
  'deleteOrganizationClient',
  'rotateOrganizationClientSecret',
  'suspendOrganizationClient',
  'reinstateOrganizationClient',
  'getOrganizationClientBranding',
  'putOrganizationClientBranding',
  'listPlatformClients',
  'registerPlatformClient',
  'getPlatformClient',
  'updatePlatformClient',
  'deletePlatformClient',
  'rotatePlatformClientSecret',
  'suspendPlatformClient',
  'reinstatePlatformClient',
  'listScopes',
  'listConsents',
  'withdrawConsent',
  'getAuthorizeContext',
];

// A 1×1 PNG, and the magic bytes of JPEG, WebP and GIF.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(60, 1)]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(40, 2)]);
const GIF = Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(40, 3)]);
const THEME = {
  light: { primary: '#1f6feb', primaryForeground: '#ffffff' },
  dark: { primary: '#58a6ff', primaryForeground: '#0d1117' },
};

const sha256 = (value: string) => `sha256:${createHash('sha256').update(value).digest('hex')}`;

describe.each(testDialects())('OAuth clients over HTTP on %s', (dialect) => {
  let server: TestIdt<TestReferenceModules, SkippingClock>;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  // The wall clock, skipped ahead where a test needs a later `updatedAt` (rows keep their creation order).
  const clock = createSkippingClock();
  const orgClients = (orgId: string, rest = '') => `/v1/identity/organizations/${orgId}/clients${rest}`;

  const app = (overrides: Record<string, unknown> = {}) => ({
    kind: 'application',
    name: unique('App'),
    redirectUris: ['https://app.example.com/callback'],
    scopes: ['openid', 'profile'],
    ...overrides,
  });
  const serviceAccount = (overrides: Record<string, unknown> = {}) => ({
    kind: 'service-account',
    name: unique('Robot'),
    scopes: ['users.read'],
    ...overrides,
  });

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock, env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' } });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('registration', () => {
    it('registers an application: 201 with the record, the secret once, the issuer and the API base URL', async () => {
      const response = await call('POST', orgClients(world.a.organization.id), {
        token: world.a.tokens.admin,
        body: {
          kind: 'application',
          name: '  Billing Portal ',
          redirectUris: ['https://billing.example.com/callback', 'http://localhost:3000/cb', 'http://127.0.0.1:8080/cb'],
          postLogoutRedirectUris: ['https://billing.example.com/signed-out'],
          backchannelLogoutUri: 'http://10.0.0.5:8080/backchannel',
          backchannelLogoutSessionRequired: true,
          frontchannelLogoutUri: 'https://billing.example.com/frontchannel',
          scopes: ['openid', 'profile', 'users.read', 'users.read'],
          refreshTokenLifetime: 3600,
        },
      });
      const registration = await expectJson(response, 201);
      const clientId = `${world.a.organization.slug}-billing-portal`;
      expect(registration).toEqual({
        client: {
          clientId,
          organizationId: world.a.organization.id,
          name: 'Billing Portal',
          kind: 'application',
          status: 'active',
          firstParty: false,
          redirectUris: ['https://billing.example.com/callback', 'http://localhost:3000/cb', 'http://127.0.0.1:8080/cb'],
          postLogoutRedirectUris: ['https://billing.example.com/signed-out'],
          backchannelLogoutUri: 'http://10.0.0.5:8080/backchannel',
          backchannelLogoutSessionRequired: true,
          frontchannelLogoutUri: 'https://billing.example.com/frontchannel',
          scopes: ['openid', 'profile', 'users.read'],
          refreshTokenLifetime: 3600,
          createdByUserId: world.a.admin.id,
          createdAt: expect.stringMatching(/Z$/),
          updatedAt: expect.stringMatching(/Z$/),
          lastUsedAt: null,
          lastRotatedAt: null,
          lastRotatedByUserId: null,
        },
        clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
        issuer: server.url,
        apiBaseUrl: server.url,
      });
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('location')).toBe(orgClients(world.a.organization.id, `/${clientId}`));
    });

    it('ignores fields a caller may not set: first-party, a chosen id, another organization, a secret, a status', async () => {
      const name = unique('Sneaky');
      const registration = await register(server, world.a.tokens.admin, world.a.organization.id, {
        ...app({ name }),
        firstParty: true,
        clientId: 'chosen-id',
        organizationId: world.b.organization.id,
        clientSecret: 'my-own-secret',
        status: 'suspended',
      });
      expect(registration.client).toMatchObject({
        clientId: `${world.a.organization.slug}-${name.toLowerCase().replace(/\s+/g, '-')}`,
        organizationId: world.a.organization.id,
        firstParty: false,
        status: 'active',
      });
      expect(registration.clientSecret).not.toBe('my-own-secret');
    });

    it('shows the secret once and stores only its sha256 hash', async () => {
      const registration = await register(server, world.a.tokens.admin, world.a.organization.id, app());
      const row = await clientRow(server, registration.clientId);
      expect(row?.secret_hash).toBe(sha256(registration.clientSecret));
      expect(String(row?.secret_hash)).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(JSON.stringify(row)).not.toContain(registration.clientSecret);

      const one = await expectJson(
        await call('GET', orgClients(world.a.organization.id, `/${registration.clientId}`), { token: world.a.tokens.admin }),
      );
      const list = await expectJson(await call('GET', orgClients(world.a.organization.id), { token: world.a.tokens.manager }));
      expect(one).toEqual(registration.client);
      expect(list).toContainEqual(registration.client);
      for (const shown of [JSON.stringify(one), JSON.stringify(list)]) {
        expect(shown).not.toContain(registration.clientSecret);
        expect(shown).not.toContain('sha256:');
        expect(shown).not.toMatch(/secret/i);
      }
    });

    it('registers a service account: sa-<org>-<name>, redirect and logout URIs and refresh lifetime silently dropped', async () => {
      const registration = await register(server, world.a.tokens.manager, world.a.organization.id, {
        kind: 'service-account',
        name: 'Nightly Export',
        redirectUris: ['https://export.example.com/callback'],
        postLogoutRedirectUris: ['https://export.example.com/out'],
        backchannelLogoutUri: 'https://export.example.com/bc',
        frontchannelLogoutUri: 'https://export.example.com/fc',
        refreshTokenLifetime: 3600,
        scopes: ['users.read', 'roles.read'],
      });
      expect(registration.client).toMatchObject({
        clientId: `sa-${world.a.organization.slug}-nightly-export`,
        kind: 'service-account',
        redirectUris: [],
        postLogoutRedirectUris: [],
        backchannelLogoutUri: null,
        frontchannelLogoutUri: null,
        refreshTokenLifetime: null,
        scopes: ['users.read', 'roles.read'],
        createdByUserId: world.a.manager.id,
      });
      // It works at the token endpoint at once.
      const tokens = await serviceToken(server, registration, 'users.read');
      expect(tokens.access_token).toBeTruthy();
    });

    it('derives ids from the organization slug and the name; a taken id is 409 Clients.IdTaken', async () => {
      const name = unique('Data Sync');
      const slug = name.toLowerCase().replace(/\s+/g, '-');
      const first = await register(server, world.a.tokens.admin, world.a.organization.id, app({ name }));
      expect(first.clientId).toBe(`${world.a.organization.slug}-${slug}`);
      // The service account of the same name has its own id; the same name in another organization too.
      const sa = await register(server, world.a.tokens.admin, world.a.organization.id, serviceAccount({ name }));
      expect(sa.clientId).toBe(`sa-${world.a.organization.slug}-${slug}`);
      const other = await register(server, world.b.tokens.admin, world.b.organization.id, app({ name }));
      expect(other.clientId).toBe(`${world.b.organization.slug}-${slug}`);

      const before = await server.database.db('oidc_clients').count({ n: '*' }).first();
      for (const again of [name, ` ${name.toUpperCase()}!! `, name.replace(' ', ' -- ')]) {
        const problem = await expectProblem(
          await call('POST', orgClients(world.a.organization.id), { token: world.a.tokens.owner, body: app({ name: again }) }),
          409,
          'Clients.IdTaken',
        );
        expect(problem.detail).toContain(first.clientId);
      }
      await expectProblem(
        await call('POST', orgClients(world.a.organization.id), { token: world.a.tokens.owner, body: serviceAccount({ name }) }),
        409,
        'Clients.IdTaken',
      );
      const after = await server.database.db('oidc_clients').count({ n: '*' }).first();
      expect(Number(after?.n)).toBe(Number(before?.n));
      // The first registration's secret is unchanged by the refused ones.
      expect((await clientRow(server, first.clientId))?.secret_hash).toBe(sha256(first.clientSecret));
    });

    it('refuses a bad body with 400 errors keyed by field and writes nothing', async () => {
      const before = await server.database.db('oidc_clients').count({ n: '*' }).first();
      const problem = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: { kind: 'spa', name: '  ', scopes: [] },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors).sort()).toEqual(['kind', 'name', 'scopes']);

      const noScopes = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: { kind: 'application', name: 'No scopes', redirectUris: ['https://a.example.com/cb'] },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(noScopes.errors)).toEqual(['scopes']);

      const noRedirect = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: { kind: 'application', name: 'No redirect', scopes: ['openid'] },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(noRedirect.errors)).toEqual(['redirectUris']);
      const emptyRedirect = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: app({ redirectUris: [] }),
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(emptyRedirect.errors)).toEqual(['redirectUris']);

      const longName = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: app({ name: 'x'.repeat(201) }),
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(longName.errors)).toEqual(['name']);
      const malformed = await call('POST', orgClients(world.a.organization.id), {
        token: world.a.tokens.admin,
        body: '{"kind":',
      });
      expect(malformed.status).toBe(400);
      const after = await server.database.db('oidc_clients').count({ n: '*' }).first();
      expect(Number(after?.n)).toBe(Number(before?.n));
    });

    it.each([
      ['relative', '/callback'],
      ['no scheme', 'app.example.com/callback'],
      ['a fragment', 'https://app.example.com/callback#done'],
      ['an empty fragment', 'https://app.example.com/callback#'],
      ['plain http on a public host', 'http://app.example.com/callback'],
      ['plain http on a look-alike of localhost', 'http://localhost.example.com/callback'],
      ['plain http on a look-alike of 127.0.0.1', 'http://127.0.0.1.nip.io/callback'],
      ['plain http on a private address', 'http://10.0.0.5/callback'],
      ['plain http on the IPv6 loopback (only localhost and 127.0.0.1)', 'http://[::1]:3000/callback'],
      ['another scheme', 'ftp://app.example.com/callback'],
      ['a custom scheme', 'com.example.app:/callback'],
      ['credentials', 'https://user:secret@app.example.com/callback'],
      ['too long', `https://app.example.com/${'a'.repeat(2000)}`],
    ])('refuses a redirect or post-logout redirect URI with %s', async (_label, uri) => {
      const redirect = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: app({ redirectUris: ['https://app.example.com/ok', uri] }),
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(redirect.errors)).toEqual(['redirectUris[1]']);
      const postLogout = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: app({ postLogoutRedirectUris: [uri] }),
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(postLogout.errors)).toEqual(['postLogoutRedirectUris[0]']);
    });

    it('accepts https anywhere and plain http on localhost and 127.0.0.1, for redirect and post-logout URIs', async () => {
      const uris = [
        'https://app.example.com/callback?tenant=1',
        'https://app.example.com:8443/callback',
        'http://localhost/callback',
        'http://localhost:3000/callback',
        'http://127.0.0.1:8080/callback',
      ];
      const registration = await register(
        server,
        world.a.tokens.admin,
        world.a.organization.id,
        app({ redirectUris: uris, postLogoutRedirectUris: uris }),
      );
      expect(registration.client.redirectUris).toEqual(uris);
      expect(registration.client.postLogoutRedirectUris).toEqual(uris);
    });

    it.each([
      ['backchannelLogoutUri', 'relative', '/logout'],
      ['backchannelLogoutUri', 'a fragment', 'https://rp.example.com/logout#x'],
      ['backchannelLogoutUri', 'another scheme', 'ftp://rp.example.com/logout'],
      ['backchannelLogoutUri', 'credentials', 'https://u:p@rp.example.com/logout'],
      ['frontchannelLogoutUri', 'relative', 'logout'],
      ['frontchannelLogoutUri', 'another scheme', 'javascript://rp.example.com/%0aalert(1)'],
      ['frontchannelLogoutUri', 'a fragment', 'https://rp.example.com/logout#x'],
    ])('refuses a %s with %s', async (field, _label, uri) => {
      const problem = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), { token: world.a.tokens.admin, body: app({ [field]: uri }) }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors)).toEqual([field]);
    });

    it('accepts plain http logout URIs on any host', async () => {
      const registration = await register(
        server,
        world.a.tokens.admin,
        world.a.organization.id,
        app({ backchannelLogoutUri: 'http://rp.example.com/bc', frontchannelLogoutUri: 'http://rp.example.com/fc' }),
      );
      expect(registration.client).toMatchObject({
        backchannelLogoutUri: 'http://rp.example.com/bc',
        backchannelLogoutSessionRequired: false,
        frontchannelLogoutUri: 'http://rp.example.com/fc',
      });
    });

    it('refuses unknown scopes with 400 keyed scopes, and platform-only scopes with 422', async () => {
      const unknown = await expectProblem(
        await call('POST', orgClients(world.a.organization.id), {
          token: world.a.tokens.admin,
          body: app({ scopes: ['openid', 'nope.read'] }),
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(unknown.errors)).toEqual(['scopes']);
      for (const scope of PLATFORM_ONLY) {
        await expectProblem(
          await call('POST', orgClients(world.a.organization.id), {
            token: world.a.tokens.owner,
            body: serviceAccount({ scopes: ['users.read', scope] }),
          }),
          422,
          'Identity.PlatformOnlyScope',
        );
      }
      // Not even a platform administrator grants them on an organization surface (the platform surface is for that).
      await expectProblem(
        await call('POST', orgClients(world.platform.id), {
          token: world.platformToken,
          body: serviceAccount({ scopes: ['users.manage'] }),
        }),
        422,
        'Identity.PlatformOnlyScope',
      );
    });

    it('checks the refresh-token lifetime: 60 to 31,536,000 whole seconds', async () => {
      for (const value of [59, 31_536_001, 3600.5, '3600', 0, -1]) {
        const problem = await expectProblem(
          await call('POST', orgClients(world.a.organization.id), {
            token: world.a.tokens.admin,
            body: app({ refreshTokenLifetime: value }),
          }),
          400,
          'Validation.Failed',
        );
        expect(Object.keys(problem.errors)).toEqual(['refreshTokenLifetime']);
      }
      for (const value of [60, 31_536_000]) {
        const registration = await register(
          server,
          world.a.tokens.admin,
          world.a.organization.id,
          app({ refreshTokenLifetime: value }),
        );
        expect(registration.client.refreshTokenLifetime).toBe(value);
      }
      const unset = await register(server, world.a.tokens.admin, world.a.organization.id, app({ refreshTokenLifetime: null }));
      expect(unset.client.refreshTokenLifetime).toBeNull();
    });
  });

  describe('access control', () => {
    let target: Awaited<ReturnType<typeof register>>;
    let targetSa: Awaited<ReturnType<typeof register>>;
    const routes = (orgId: string, clientId: string) =>
      [
        ['GET', orgClients(orgId)],
        ['POST', orgClients(orgId), { kind: 'service-account', name: unique('Intruder'), scopes: ['users.read'] }],
        ['GET', orgClients(orgId, `/${clientId}`)],
        ['PATCH', orgClients(orgId, `/${clientId}`), { redirectUris: ['https://evil.example.com/cb'] }],
        ['DELETE', orgClients(orgId, `/${clientId}`)],
        ['POST', orgClients(orgId, `/${clientId}/rotate-secret`), { revokeActiveTokens: true }],
        ['POST', orgClients(orgId, `/${clientId}/suspend`)],
        ['POST', orgClients(orgId, `/${clientId}/reinstate`)],
        ['GET', orgClients(orgId, `/${clientId}/branding`)],
        ['PUT', orgClients(orgId, `/${clientId}/branding`), { displayName: 'Evil' }],
      ] as Array<[string, string, unknown?]>;
    const snapshot = async () => ({
      clients: await server.database.db('oidc_clients').where({ organization_id: world.a.organization.id }).orderBy('client_id'),
    });

    beforeAll(async () => {
      target = await register(server, world.a.tokens.admin, world.a.organization.id, app({ name: unique('Target') }));
      targetSa = await register(
        server,
        world.a.tokens.admin,
        world.a.organization.id,
        serviceAccount({ name: unique('Target') }),
      );
    });

    it('answers 401 without a credential', async () => {
      for (const [method, path, body] of routes(world.a.organization.id, target.clientId)) {
        await expectProblem(await call(method, path, { body }), 401, 'Auth.Unauthenticated');
      }
    });

    it("answers 403 to a member without OrganizationClientsManage (the 'user' role)", async () => {
      const before = await snapshot();
      for (const [method, path, body] of routes(world.a.organization.id, target.clientId)) {
        await expectProblem(await call(method, path, { token: world.a.tokens.user, body }), 403, 'Auth.Forbidden');
      }
      expect(await snapshot()).toEqual(before);
    });

    it('answers 403 Tenant.Required to an organization-less token', async () => {
      const token = await mintAccessToken(server, { sub: world.a.admin.id });
      await expectProblem(await call('GET', orgClients(world.a.organization.id), { token }), 403, 'Tenant.Required');
    });

    it('lets owners, admins and managers in', async () => {
      for (const role of ['owner', 'admin', 'manager'] as const) {
        const list = await expectJson(await call('GET', orgClients(world.a.organization.id), { token: world.a.tokens[role] }));
        expect(list.map((client: { clientId: string }) => client.clientId)).toEqual(
          expect.arrayContaining([target.clientId, targetSa.clientId]),
        );
      }
    });

    it("answers 404 for another organization's clients and leaves them unchanged", async () => {
      const before = await snapshot();
      // Through the other organization's path…
      for (const [method, path, body] of routes(world.a.organization.id, target.clientId)) {
        await expectProblem(await call(method, path, { token: world.b.tokens.admin, body }), 404, 'Clients.NotFound');
      }
      // …through one's own path naming the other organization's client…
      for (const [method, path, body] of routes(world.b.organization.id, target.clientId).slice(2)) {
        await expectProblem(await call(method, path, { token: world.b.tokens.admin, body }), 404, 'Clients.NotFound');
      }
      for (const [method, path, body] of routes(world.b.organization.id, targetSa.clientId).slice(2)) {
        await expectProblem(await call(method, path, { token: world.b.tokens.owner, body }), 404, 'Clients.NotFound');
      }
      // …and as a platform administrator on the organization surface.
      for (const [method, path, body] of routes(world.a.organization.id, target.clientId)) {
        await expectProblem(await call(method, path, { token: world.platformToken, body }), 404, 'Clients.NotFound');
      }
      expect(await snapshot()).toEqual(before);
      // B's list never shows A's clients.
      const listB = await expectJson(await call('GET', orgClients(world.b.organization.id), { token: world.b.tokens.admin }));
      expect(listB.every((client: { organizationId: string }) => client.organizationId === world.b.organization.id)).toBe(true);
      // The target still works: its secret is unchanged and it is active.
      expect((await clientRow(server, targetSa.clientId))?.secret_hash).toBe(sha256(targetSa.clientSecret));
      expect((await serviceToken(server, targetSa, 'users.read')).access_token).toBeTruthy();
    });

    it('answers 404 for an unknown client id', async () => {
      for (const [method, path, body] of routes(world.a.organization.id, 'no-such-client').slice(2)) {
        await expectProblem(await call(method, path, { token: world.a.tokens.admin, body }), 404, 'Clients.NotFound');
      }
    });

    it('accepts the organization id in any letter case', async () => {
      const list = await expectJson(
        await call('GET', orgClients(world.a.organization.id.toUpperCase()), { token: world.a.tokens.admin }),
      );
      expect(list.length).toBeGreaterThan(0);
    });
  });

  describe('PATCH', () => {
    it('changes only what the body names; name and kind are immutable', async () => {
      const registration = await register(
        server,
        world.a.tokens.admin,
        world.a.organization.id,
        app({
          redirectUris: ['https://app.example.com/one'],
          postLogoutRedirectUris: ['https://app.example.com/out'],
          backchannelLogoutUri: 'https://app.example.com/bc',
          frontchannelLogoutUri: 'https://app.example.com/fc',
          refreshTokenLifetime: 3600,
        }),
      );
      const path = orgClients(world.a.organization.id, `/${registration.clientId}`);
      clock.advance(5);
      const changed = await expectJson(
        await call('PATCH', path, {
          token: world.a.tokens.manager,
          body: {
            redirectUris: ['https://app.example.com/two', 'http://localhost:5173/cb'],
            name: 'Renamed',
            kind: 'service-account',
          },
        }),
      );
      expect(changed).toEqual({
        ...registration.client,
        redirectUris: ['https://app.example.com/two', 'http://localhost:5173/cb'],
        updatedAt: expect.any(String),
      });
      expect(changed.updatedAt > registration.client.updatedAt).toBe(true);

      // null / absent refreshTokenLifetime keeps the value; a number changes it.
      expect(
        (await expectJson(await call('PATCH', path, { token: world.a.tokens.admin, body: { refreshTokenLifetime: null } })))
          .refreshTokenLifetime,
      ).toBe(3600);
      expect((await expectJson(await call('PATCH', path, { token: world.a.tokens.admin, body: {} }))).refreshTokenLifetime).toBe(
        3600,
      );
      expect(
        (await expectJson(await call('PATCH', path, { token: world.a.tokens.admin, body: { refreshTokenLifetime: 7200 } })))
          .refreshTokenLifetime,
      ).toBe(7200);

      // Optional lists and URIs can be cleared.
      const cleared = await expectJson(
        await call('PATCH', path, {
          token: world.a.tokens.admin,
          body: {
            postLogoutRedirectUris: [],
            backchannelLogoutUri: null,
            frontchannelLogoutUri: null,
            scopes: ['openid', 'email'],
          },
        }),
      );
      expect(cleared).toMatchObject({
        name: registration.client.name,
        kind: 'application',
        redirectUris: ['https://app.example.com/two', 'http://localhost:5173/cb'],
        postLogoutRedirectUris: [],
        backchannelLogoutUri: null,
        frontchannelLogoutUri: null,
        scopes: ['openid', 'email'],
        refreshTokenLifetime: 7200,
      });
      expect(await expectJson(await call('GET', path, { token: world.a.tokens.admin }))).toEqual(cleared);
    });

    it('validates like registration and changes nothing on a refusal', async () => {
      const registration = await register(server, world.a.tokens.admin, world.a.organization.id, app());
      const path = orgClients(world.a.organization.id, `/${registration.clientId}`);
      const before = await clientRow(server, registration.clientId);
      const cases: Array<[unknown, number, string, string[]?]> = [
        [{ redirectUris: [] }, 400, 'Validation.Failed', ['redirectUris']],
        [{ redirectUris: ['http://app.example.com/cb'] }, 400, 'Validation.Failed', ['redirectUris[0]']],
        [
          { postLogoutRedirectUris: ['https://a.example.com/ok', 'https://a.example.com/x#y'] },
          400,
          'Validation.Failed',
          ['postLogoutRedirectUris[1]'],
        ],
        [{ backchannelLogoutUri: 'nope' }, 400, 'Validation.Failed', ['backchannelLogoutUri']],
        [{ scopes: [] }, 400, 'Validation.Failed', ['scopes']],
        [{ scopes: ['openid', 'unknown.scope'] }, 400, 'Validation.Failed', ['scopes']],
        [{ refreshTokenLifetime: 59 }, 400, 'Validation.Failed', ['refreshTokenLifetime']],
        [{ scopes: ['openid', 'webhooks.manage'] }, 422, 'Identity.PlatformOnlyScope'],
      ];
      for (const [body, status, code, keys] of cases) {
        const problem = await expectProblem(await call('PATCH', path, { token: world.a.tokens.admin, body }), status, code);
        if (keys) expect(Object.keys(problem.errors)).toEqual(keys);
      }
      expect(await clientRow(server, registration.clientId)).toEqual(before);
    });

    it('for a service account, only scopes matter; new scopes apply at the token endpoint at once', async () => {
      const registration = await register(
        server,
        world.a.tokens.admin,
        world.a.organization.id,
        serviceAccount({ scopes: ['users.read'] }),
      );
      expect((await serviceToken(server, registration, 'users.read')).access_token).toBeTruthy();
      const changed = await expectJson(
        await call('PATCH', orgClients(world.a.organization.id, `/${registration.clientId}`), {
          token: world.a.tokens.admin,
          body: {
            scopes: ['roles.read'],
            redirectUris: ['https://sa.example.com/cb'],
            postLogoutRedirectUris: ['https://sa.example.com/out'],
            backchannelLogoutUri: 'https://sa.example.com/bc',
            refreshTokenLifetime: 600,
          },
        }),
      );
      expect(changed).toMatchObject({
        scopes: ['roles.read'],
        redirectUris: [],
        postLogoutRedirectUris: [],
        backchannelLogoutUri: null,
        refreshTokenLifetime: null,
      });
      // oidc-provider grants the allowed part of the requested scopes: users.read is no longer in it.
      const narrowed = await serviceToken(server, registration, 'users.read roles.read');
      expect(narrowed.scope).toBe('roles.read');
      expect(jwtPayload(narrowed.access_token).scope).toBe('roles.read');
      const dropped = await serviceToken(server, registration, 'users.read');
      expect(String(jwtPayload(dropped.access_token).scope ?? '')).not.toContain('users.read');
    });
  });

  describe('branding', () => {
    let application: Awaited<ReturnType<typeof register>>;
    let path: string;
    beforeAll(async () => {
      application = await register(server, world.a.tokens.admin, world.a.organization.id, app({ name: unique('Branded') }));
      path = orgClients(world.a.organization.id, `/${application.clientId}/branding`);
    });

    it('defaults to the client name and no tagline, theme or logo', async () => {
      expect(await expectJson(await call('GET', path, { token: world.a.tokens.manager }))).toEqual({
        displayName: application.client.name,
        tagline: null,
        themeJson: null,
        logo: null,
      });
    });

    it('stores display name, tagline, theme and a PNG, JPEG or WebP logo recognised by its magic bytes', async () => {
      const saved = await expectJson(
        await call('PUT', path, {
          token: world.a.tokens.admin,
          body: { displayName: '  Acme Billing ', tagline: 'Invoices, done.', themeJson: THEME, logo: PNG.toString('base64') },
        }),
      );
      const expected = {
        displayName: 'Acme Billing',
        tagline: 'Invoices, done.',
        themeJson: THEME,
        logo: `data:image/png;base64,${PNG.toString('base64')}`,
      };
      expect(saved).toEqual(expected);
      expect(await expectJson(await call('GET', path, { token: world.a.tokens.admin }))).toEqual(expected);

      for (const [bytes, type] of [
        [JPEG, 'image/jpeg'],
        [WEBP, 'image/webp'],
      ] as const) {
        const body = await expectJson(
          await call('PUT', path, { token: world.a.tokens.admin, body: { displayName: 'Acme', logo: bytes.toString('base64') } }),
        );
        expect(body.logo).toBe(`data:${type};base64,${bytes.toString('base64')}`);
      }
      // Without `logo` the logo is kept; `null` removes it.
      const kept = await expectJson(await call('PUT', path, { token: world.a.tokens.admin, body: { displayName: 'Acme 2' } }));
      expect(kept).toEqual({
        displayName: 'Acme 2',
        tagline: null,
        themeJson: null,
        logo: `data:image/webp;base64,${WEBP.toString('base64')}`,
      });
      const removed = await expectJson(
        await call('PUT', path, { token: world.a.tokens.admin, body: { displayName: 'Acme 3', logo: null } }),
      );
      expect(removed.logo).toBeNull();
    });

    it('refuses other images, non-images, empty and oversized logos, keyed logo', async () => {
      await expectJson(
        await call('PUT', path, { token: world.a.tokens.admin, body: { displayName: 'Kept', logo: PNG.toString('base64') } }),
      );
      const oversized = Buffer.concat([PNG.subarray(0, 8), Buffer.alloc(2 * 1024 * 1024 - 7)]);
      const justFits = Buffer.concat([PNG.subarray(0, 8), Buffer.alloc(2 * 1024 * 1024 - 8)]);
      for (const logo of [
        GIF.toString('base64'),
        Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"></svg>').toString('base64'),
        Buffer.from('just text').toString('base64'),
        '',
        oversized.toString('base64'),
      ]) {
        const problem = await expectProblem(
          await call('PUT', path, { token: world.a.tokens.admin, body: { displayName: 'Refused', logo } }),
          400,
          'Validation.Failed',
        );
        expect(Object.keys(problem.errors)).toEqual(['logo']);
      }
      const current = await expectJson(await call('GET', path, { token: world.a.tokens.admin }));
      expect(current).toMatchObject({ displayName: 'Kept', logo: `data:image/png;base64,${PNG.toString('base64')}` });
      // Exactly 2 MiB is allowed.
      const big = await expectJson(
        await call('PUT', path, { token: world.a.tokens.admin, body: { displayName: 'Big', logo: justFits.toString('base64') } }),
      );
      expect(big.logo.startsWith('data:image/png;base64,')).toBe(true);
    });

    it('validates display name, tagline and theme', async () => {
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{}, ['displayName']],
        [{ displayName: '   ' }, ['displayName']],
        [{ displayName: 'x'.repeat(201) }, ['displayName']],
        [{ displayName: 'ok', tagline: 'x'.repeat(501) }, ['tagline']],
        [{ displayName: 'ok', themeJson: { light: THEME.light } }, ['themeJson.dark']],
        [
          { displayName: 'ok', themeJson: { ...THEME, light: { primary: 'red', primaryForeground: '#fff' } } },
          ['themeJson.light.primary'],
        ],
        [
          { displayName: 'ok', themeJson: { ...THEME, dark: { primary: '#000', primaryForeground: 'url(x)' } } },
          ['themeJson.dark.primaryForeground'],
        ],
      ];
      for (const [body, keys] of cases) {
        const problem = await expectProblem(
          await call('PUT', path, { token: world.a.tokens.admin, body }),
          400,
          'Validation.Failed',
        );
        expect(Object.keys(problem.errors)).toEqual(keys);
      }
      // Exactly at the limits.
      await expectJson(
        await call('PUT', path, {
          token: world.a.tokens.admin,
          body: { displayName: 'x'.repeat(200), tagline: 'y'.repeat(500) },
        }),
      );
    });

    it('has no branding for service accounts (404), nor for other organizations', async () => {
      const sa = await register(server, world.a.tokens.admin, world.a.organization.id, serviceAccount());
      const saPath = orgClients(world.a.organization.id, `/${sa.clientId}/branding`);
      await expectProblem(await call('GET', saPath, { token: world.a.tokens.admin }), 404, 'Clients.NotFound');
      await expectProblem(
        await call('PUT', saPath, { token: world.a.tokens.admin, body: { displayName: 'Robot' } }),
        404,
        'Clients.NotFound',
      );
      expect((await clientRow(server, sa.clientId))?.display_name).toBeNull();
      await expectProblem(
        await call('PUT', path, { token: world.b.tokens.admin, body: { displayName: 'Hijacked' } }),
        404,
        'Clients.NotFound',
      );
      expect((await expectJson(await call('GET', path, { token: world.a.tokens.admin }))).displayName).not.toBe('Hijacked');
    });

    it('is not readable anonymously by client id (not even the theme colors)', async () => {
      await expectJson(
        await call('PUT', path, { token: world.a.tokens.admin, body: { displayName: 'Themed', themeJson: THEME } }),
      );
      const css = await server.fetch(`/connect/assets/theme/${encodeURIComponent(application.clientId)}.css`);
      expect(css.status).toBe(404);
      expect(await css.text()).not.toContain(THEME.light.primary);
      await expectProblem(await call('GET', path), 401, 'Auth.Unauthenticated');
    });
  });

  describe('GET /v1/identity/scopes', () => {
    it('lists the catalog with default and platform-only flags (ScopeRead)', async () => {
      const catalog = await expectJson(await call('GET', '/v1/identity/scopes', { token: world.a.tokens.manager }));
      expect(catalog).toContainEqual({ scope: 'users.read', description: 'Read users', default: true, platformOnly: false });
      expect(catalog).toContainEqual({ scope: 'openid', description: 'Sign you in', default: true, platformOnly: false });
      expect(catalog).toContainEqual({
        scope: 'offline_access',
        description: expect.any(String),
        default: false,
        platformOnly: false,
      });
      expect(
        catalog
          .filter((entry: { platformOnly: boolean }) => entry.platformOnly)
          .map((entry: { scope: string }) => entry.scope)
          .sort(),
      ).toEqual(PLATFORM_ONLY);
      for (const entry of catalog) expect(Object.keys(entry).sort()).toEqual(['default', 'description', 'platformOnly', 'scope']);
    });

    it('needs ScopeRead and a credential', async () => {
      await expectProblem(await call('GET', '/v1/identity/scopes', { token: world.a.tokens.user }), 403, 'Auth.Forbidden');
      await expectProblem(await call('GET', '/v1/identity/scopes'), 401, 'Auth.Unauthenticated');
    });
  });

  describe('platform surface /v1/identity/clients', () => {
    it('is for platform administrators only (403 for everyone else)', async () => {
      const target = await register(server, world.a.tokens.admin, world.a.organization.id, serviceAccount());
      const routes: Array<[string, string, unknown?]> = [
        ['GET', '/v1/identity/clients'],
        ['POST', '/v1/identity/clients', { organizationId: world.a.organization.id, ...serviceAccount() }],
        ['GET', `/v1/identity/clients/${target.clientId}`],
        ['PATCH', `/v1/identity/clients/${target.clientId}`, { scopes: ['users.manage'] }],
        ['DELETE', `/v1/identity/clients/${target.clientId}`],
        ['POST', `/v1/identity/clients/${target.clientId}/rotate-secret`],
        ['POST', `/v1/identity/clients/${target.clientId}/suspend`],
        ['POST', `/v1/identity/clients/${target.clientId}/reinstate`],
      ];
      const before = await clientRow(server, target.clientId);
      for (const token of [world.a.tokens.owner, world.a.tokens.admin, world.a.tokens.manager, world.platformUserToken]) {
        for (const [method, path, body] of routes) {
          await expectProblem(await call(method, path, { token, body }), 403, 'Auth.Forbidden');
        }
      }
      for (const [method, path, body] of routes) {
        await expectProblem(await call(method, path, { body }), 401, 'Auth.Unauthenticated');
      }
      expect(await clientRow(server, target.clientId)).toEqual(before);
    });

    it('lets platform administrators manage any organization’s clients, platform-only scopes included', async () => {
      const registration = await expectJson(
        await call('POST', '/v1/identity/clients', {
          token: world.platformToken,
          body: {
            organizationId: world.b.organization.id,
            kind: 'service-account',
            name: 'Provisioner',
            scopes: ['users.read', ...PLATFORM_ONLY],
          },
        }),
        201,
      );
      const clientId = `sa-${world.b.organization.slug}-provisioner`;
      expect(registration).toEqual({
        client: expect.objectContaining({
          clientId,
          organizationId: world.b.organization.id,
          scopes: ['users.read', ...PLATFORM_ONLY],
          createdByUserId: world.platformAdmin.id,
        }),
        clientSecret: expect.any(String),
        issuer: server.url,
        apiBaseUrl: server.url,
      });
      expect((await clientRow(server, clientId))?.secret_hash).toBe(sha256(registration.clientSecret));

      // The organization sees it on its own surface.
      const own = await expectJson(
        await call('GET', orgClients(world.b.organization.id, `/${clientId}`), { token: world.b.tokens.admin }),
      );
      expect(own).toEqual(registration.client);
      // Its organization may not re-grant the platform-only scopes, but may change others around them.
      await expectProblem(
        await call('PATCH', orgClients(world.b.organization.id, `/${clientId}`), {
          token: world.b.tokens.admin,
          body: { scopes: ['users.read', 'users.manage'] },
        }),
        422,
        'Identity.PlatformOnlyScope',
      );

      const all = await expectJson(await call('GET', '/v1/identity/clients', { token: world.platformToken }));
      const organizations = new Set(all.map((client: { organizationId: string | null }) => client.organizationId));
      expect(organizations.has(world.a.organization.id) && organizations.has(world.b.organization.id)).toBe(true);
      const onlyB = await expectJson(
        await call('GET', `/v1/identity/clients?organizationId=${world.b.organization.id}`, { token: world.platformToken }),
      );
      expect(onlyB.length).toBeGreaterThan(0);
      expect(onlyB.every((client: { organizationId: string }) => client.organizationId === world.b.organization.id)).toBe(true);
      expect(await expectJson(await call('GET', `/v1/identity/clients/${clientId}`, { token: world.platformToken }))).toEqual(
        registration.client,
      );

      const patched = await expectJson(
        await call('PATCH', `/v1/identity/clients/${clientId}`, {
          token: world.platformToken,
          body: { scopes: ['users.manage'] },
        }),
      );
      expect(patched.scopes).toEqual(['users.manage']);
      const rotated = await expectJson(
        await call('POST', `/v1/identity/clients/${clientId}/rotate-secret`, { token: world.platformToken }),
      );
      expect(rotated.clientSecret).not.toBe(registration.clientSecret);
      expect(rotated.client).toMatchObject({ lastRotatedByUserId: world.platformAdmin.id, lastRotatedAt: expect.any(String) });
      expect(
        (await expectJson(await call('POST', `/v1/identity/clients/${clientId}/suspend`, { token: world.platformToken }))).status,
      ).toBe('suspended');
      await expectProblem(
        await call('POST', `/v1/identity/clients/${clientId}/suspend`, { token: world.platformToken }),
        422,
        'Identity.ClientAlreadySuspended',
      );
      expect(
        (await expectJson(await call('POST', `/v1/identity/clients/${clientId}/reinstate`, { token: world.platformToken })))
          .status,
      ).toBe('active');
      await expectProblem(
        await call('POST', `/v1/identity/clients/${clientId}/reinstate`, { token: world.platformToken }),
        422,
        'Identity.ClientNotSuspended',
      );
      expect((await call('DELETE', `/v1/identity/clients/${clientId}`, { token: world.platformToken })).status).toBe(204);
      await expectProblem(
        await call('GET', `/v1/identity/clients/${clientId}`, { token: world.platformToken }),
        404,
        'Clients.NotFound',
      );
      expect(await clientRow(server, clientId)).toBeUndefined();
    });

    it('validates the organization: missing is 400, unknown is 404', async () => {
      const missing = await expectProblem(
        await call('POST', '/v1/identity/clients', { token: world.platformToken, body: serviceAccount() }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(missing.errors)).toEqual(['organizationId']);
      await expectProblem(
        await call('POST', '/v1/identity/clients', {
          token: world.platformToken,
          body: { organizationId: '0196a6c2-0000-7000-8000-000000000000', ...serviceAccount() },
        }),
        404,
        'Clients.NotFound',
      );
      const suspended = await seedOrganization(server.database.db, { status: 'suspended' });
      await expectProblem(
        await call('POST', '/v1/identity/clients', {
          token: world.platformToken,
          body: { organizationId: suspended.id, ...serviceAccount() },
        }),
        422,
        'Clients.OrganizationInactive',
      );
      expect(await server.database.db('oidc_clients').where({ organization_id: suspended.id }).first()).toBeUndefined();
      const uris = await expectProblem(
        await call('POST', '/v1/identity/clients', {
          token: world.platformToken,
          body: { organizationId: world.a.organization.id, ...app({ redirectUris: ['http://a.example.com/cb'] }) },
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(uris.errors)).toEqual(['redirectUris[0]']);
    });
  });

  it('documents every route in /openapi/v1.json', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as {
      paths: Record<string, Record<string, { operationId: string; security?: unknown[]; 'x-problem-codes'?: string[] }>>;
      components: { schemas: { ErrorCode: { enum: string[] } } };
    };
    const operations = Object.values(document.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(operations).toEqual(expect.arrayContaining(OPERATIONS));
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/identity/organizations/{orgId}/clients',
        '/v1/identity/organizations/{orgId}/clients/{clientId}',
        '/v1/identity/organizations/{orgId}/clients/{clientId}/rotate-secret',
        '/v1/identity/organizations/{orgId}/clients/{clientId}/suspend',
        '/v1/identity/organizations/{orgId}/clients/{clientId}/reinstate',
        '/v1/identity/organizations/{orgId}/clients/{clientId}/branding',
        '/v1/identity/clients',
        '/v1/identity/clients/{clientId}',
        '/v1/identity/scopes',
        '/v1/identity/consents',
        '/v1/identity/consents/{clientId}',
        '/v1/identity/auth/authorize-context',
      ]),
    );
    expect(document.paths['/v1/identity/organizations/{orgId}/clients']?.post?.['x-problem-codes']).toEqual(
      expect.arrayContaining(['Clients.IdTaken', 'Identity.PlatformOnlyScope']),
    );
    expect(document.components.schemas.ErrorCode.enum).toEqual(
      expect.arrayContaining([
        'Clients.NotFound',
        'Clients.IdTaken',
        'Identity.PlatformOnlyScope',
        'Identity.ClientAlreadySuspended',
        'Identity.ClientNotSuspended',
        'Authorize.UnknownReturnUrl',
      ]),
    );
    // No anonymous read of branding by client id.
    for (const [path, item] of Object.entries(document.paths)) {
      if (!path.includes('branding')) continue;
      for (const operation of Object.values(item)) expect(operation.security ?? ['inherited']).not.toEqual([]);
    }
  });
});
