import { expectJson, expectProblem, outboxEvents, type TestIdt, testDialects, type World } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetadataServer, startMetadataServer } from './support/metadata-server.js';
import { createTestIdentityProvider } from './support/saml-idp.js';
import { servicesOf, startSsoInstance } from './support/sso-instance.js';

const idp = createTestIdentityProvider({ entityId: 'https://idp.acme.test/metadata', ssoUrl: 'https://idp.acme.test/sso' });
const SECRET = 'upstream-client-secret-0123456789';

function oidcBody(overrides: Record<string, unknown> = {}) {
  return {
    kind: 'oidc',
    name: 'Acme Google Workspace',
    oidc: { issuer: 'https://accounts.acme.test', clientId: 'idt-downstream', clientSecret: SECRET },
    ...overrides,
  };
}

function samlBody(overrides: Record<string, unknown> = {}) {
  return { kind: 'saml', name: 'Acme Okta', saml: { metadataXml: idp.metadata }, ...overrides };
}

describe.each(testDialects())('sso connections over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let world: World;
  let call: Awaited<ReturnType<typeof startSsoInstance>>['call'];
  let metadata: MetadataServer;
  const orgBase = () => `/v1/identity/organizations/${world.a.organization.id}/sso/connections`;

  beforeAll(async () => {
    metadata = await startMetadataServer();
    ({ server, world, call } = await startSsoInstance({ dialect, sso: { allowPrivateHosts: true } }));
  });

  afterAll(async () => {
    await server?.close();
    await metadata?.close();
  });

  it('creates, reads, changes, enables, disables and deletes an OIDC connection; the secret never comes back', async () => {
    const token = world.a.tokens.admin;
    const response = await call('POST', orgBase(), {
      token,
      body: oidcBody({ roleMapping: [{ group: 'engineers', role: 'manager' }] }),
    });
    const raw = await response.clone().text();
    const created = await expectJson(response, 201);
    expect(raw).not.toContain(SECRET);
    expect(response.headers.get('location')).toBe(`${orgBase()}/${created.id}`);
    expect(created).toMatchObject({
      organizationId: world.a.organization.id,
      kind: 'oidc',
      name: 'Acme Google Workspace',
      enabled: false,
      defaultRole: 'user',
      roleMapping: [{ group: 'engineers', role: 'manager' }],
      attributeMapping: { email: 'email', emailVerified: 'email_verified', groups: 'groups' },
      oidc: {
        issuer: 'https://accounts.acme.test',
        clientId: 'idt-downstream',
        clientSecretSet: true,
        scopes: ['openid', 'email', 'profile'],
        redirectUri: `${server.url}/sso/oidc/callback`,
      },
      saml: null,
    });

    // Sealed at rest: the row holds no plain secret, and the module opens it.
    const row = await server.database.db('sso_connections').where({ id: created.id }).first();
    expect(row.sealed_secret).toBeTruthy();
    expect(row.sealed_secret).not.toContain(SECRET);
    expect(JSON.stringify(row)).not.toContain(SECRET);
    expect((await servicesOf(server).connections.find(created.id))?.clientSecret).toBe(SECRET);

    const listed = await expectJson(await call('GET', orgBase(), { token }));
    expect(listed.map((entry: { id: string }) => entry.id)).toContain(created.id);
    expect(JSON.stringify(listed)).not.toContain(SECRET);
    expect(await expectJson(await call('GET', `${orgBase()}/${created.id}`, { token }))).toEqual(created);

    // A change without a secret keeps it; a new secret is sealed again.
    const renamed = await expectJson(
      await call('PATCH', `${orgBase()}/${created.id}`, {
        token,
        body: { name: 'Acme Workspace', oidc: { scopes: ['email'] }, attributeMapping: { groups: 'roles' } },
      }),
    );
    expect(renamed).toMatchObject({
      name: 'Acme Workspace',
      oidc: { clientSecretSet: true, scopes: ['openid', 'email'] },
      attributeMapping: { email: 'email', groups: 'roles' },
    });
    expect((await servicesOf(server).connections.find(created.id))?.clientSecret).toBe(SECRET);
    await expectJson(
      await call('PATCH', `${orgBase()}/${created.id}`, { token, body: { oidc: { clientSecret: 'rotated-secret' } } }),
    );
    expect((await servicesOf(server).connections.find(created.id))?.clientSecret).toBe('rotated-secret');
    const resealed = await server.database.db('sso_connections').where({ id: created.id }).first();
    expect(resealed.sealed_secret).not.toContain('rotated-secret');

    expect((await expectJson(await call('POST', `${orgBase()}/${created.id}/enable`, { token }))).enabled).toBe(true);
    expect((await expectJson(await call('POST', `${orgBase()}/${created.id}/enable`, { token }))).enabled).toBe(true);
    expect((await expectJson(await call('POST', `${orgBase()}/${created.id}/disable`, { token }))).enabled).toBe(false);

    expect((await call('DELETE', `${orgBase()}/${created.id}`, { token })).status).toBe(204);
    await expectProblem(await call('GET', `${orgBase()}/${created.id}`, { token }), 404, 'Sso.ConnectionNotFound');
    await expectProblem(await call('DELETE', `${orgBase()}/${created.id}`, { token }), 404, 'Sso.ConnectionNotFound');

    const changes = (await outboxEvents(server.database.db, 'SsoConnectionChangedEvent'))
      .filter((event) => event.connectionId === created.id)
      .map((event) => [event.change, event.enabled]);
    // The second enable changed nothing and published nothing.
    expect(changes).toEqual([
      ['created', false],
      ['updated', false],
      ['updated', false],
      ['enabled', true],
      ['disabled', false],
      ['deleted', false],
    ]);
  });

  it('creates a SAML connection from metadata XML and serves its service provider metadata', async () => {
    const token = world.a.tokens.owner;
    const created = await expectJson(
      await call('POST', orgBase(), {
        token,
        body: samlBody({ saml: { metadataXml: idp.metadata, allowIdpInitiated: true, defaultRelayState: '/account' } }),
      }),
      201,
    );
    const acsUrl = `${server.url}/sso/saml/${created.id}/acs`;
    const metadataUrl = `${server.url}/sso/saml/${created.id}/metadata`;
    expect(created).toMatchObject({
      kind: 'saml',
      oidc: null,
      saml: {
        idpEntityId: idp.entityId,
        idpSsoUrl: idp.ssoUrl,
        metadataUrl: null,
        allowIdpInitiated: true,
        defaultRelayState: '/account',
        spEntityId: metadataUrl,
        acsUrl,
        spMetadataUrl: metadataUrl,
      },
    });
    expect(created.saml.idpCertificates).toHaveLength(1);
    expect(created.saml.idpCertificates[0].fingerprintSha256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);

    const served = await server.fetch(`/sso/saml/${created.id}/metadata`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toContain('application/samlmetadata+xml');
    const xml = await served.text();
    expect(xml).toContain(`entityID="${metadataUrl}"`);
    expect(xml).toContain(`Location="${acsUrl}"`);

    await expectProblem(
      await server.fetch('/sso/saml/00000000-0000-4000-8000-000000000000/metadata'),
      404,
      'Sso.ConnectionNotFound',
    );
    await expectProblem(await server.fetch('/sso/saml/not-a-guid/metadata'), 404, 'Sso.ConnectionNotFound');

    // Switching IdP-initiated sign-in off; new metadata replaces the IdP.
    const other = createTestIdentityProvider({
      entityId: 'https://idp2.acme.test/metadata',
      ssoUrl: 'https://idp2.acme.test/sso',
    });
    const changed = await expectJson(
      await call('PATCH', `${orgBase()}/${created.id}`, {
        token,
        body: { saml: { metadataXml: other.metadata, allowIdpInitiated: false, defaultRelayState: null } },
      }),
    );
    expect(changed.saml).toMatchObject({ idpEntityId: other.entityId, allowIdpInitiated: false, defaultRelayState: null });
  });

  it('creates a SAML connection from a metadata URL through the outbound guard', async () => {
    metadata.publish('/idp/metadata', idp.metadata);
    metadata.publish('/moved', '', { status: 302, location: '/idp/metadata' });
    metadata.publish('/huge', `<x>${'a'.repeat(1_100_000)}</x>`);
    const token = world.a.tokens.admin;
    const url = `${metadata.origin}/idp/metadata`;
    const created = await expectJson(
      await call('POST', orgBase(), { token, body: samlBody({ saml: { metadataUrl: url } }) }),
      201,
    );
    expect(created.saml).toMatchObject({ idpEntityId: idp.entityId, metadataUrl: url });
    expect(metadata.requests).toContain('/idp/metadata');

    for (const path of ['/missing', '/moved', '/huge']) {
      const refused = await call('POST', orgBase(), {
        token,
        body: samlBody({ saml: { metadataUrl: `${metadata.origin}${path}` } }),
      });
      await expectProblem(refused, 422, 'Sso.MetadataUnreachable');
    }
    await expectProblem(
      await call('POST', orgBase(), {
        token,
        body: samlBody({ saml: { metadataUrl: 'http://169.254.169.254/latest/meta-data' } }),
      }),
      422,
      'Sso.MetadataUnreachable',
    );
    await expectProblem(
      await call('POST', orgBase(), { token, body: samlBody({ saml: { metadataUrl: 'file:///etc/passwd' } }) }),
      400,
      'Sso.InvalidConnection',
    );
  });

  it('refuses bad input on every route, writing nothing', async () => {
    const token = world.a.tokens.admin;
    const before = await server.database.db('sso_connections').count({ n: '*' }).first();
    const existing = await expectJson(await call('POST', orgBase(), { token, body: oidcBody() }), 201);
    const item = `${orgBase()}/${existing.id}`;
    const long = 'x'.repeat(10_240);
    const doctype = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${idp.metadata.replace(/^<\?xml[^>]*\?>/, '')}`;

    const cases: Array<[string, string, unknown, number, string]> = [
      ['POST', orgBase(), '{"kind": "oidc",', 400, 'Http.ClientError'],
      ['PATCH', item, '{"name": ', 400, 'Http.ClientError'],
      ['POST', orgBase(), { ...oidcBody(), extra: true }, 400, 'Validation.Failed'],
      ['POST', orgBase(), oidcBody({ oidc: { ...oidcBody().oidc, tokenEndpoint: 'https://x.test' } }), 400, 'Validation.Failed'],
      ['POST', orgBase(), { ...oidcBody(), kind: 'ldap' }, 400, 'Validation.Failed'],
      ['POST', orgBase(), { ...oidcBody(), kind: undefined }, 400, 'Validation.Failed'],
      ['POST', orgBase(), { ...samlBody(), kind: 'oidc' }, 400, 'Validation.Failed'],
      ['POST', orgBase(), samlBody({ oidc: oidcBody().oidc }), 400, 'Validation.Failed'],
      ['POST', orgBase(), samlBody({ saml: { metadataXml: doctype } }), 400, 'Sso.InvalidMetadata'],
      ['POST', orgBase(), samlBody({ saml: { metadataXml: '<not-metadata/>' } }), 400, 'Sso.InvalidMetadata'],
      ['POST', orgBase(), samlBody({ saml: {} }), 400, 'Validation.Failed'],
      [
        'POST',
        orgBase(),
        samlBody({ saml: { metadataXml: idp.metadata, metadataUrl: 'https://x.test/m' } }),
        400,
        'Validation.Failed',
      ],
      [
        'POST',
        orgBase(),
        samlBody({ saml: { metadataXml: idp.metadata, allowIdpInitiated: true } }),
        400,
        'Sso.InvalidConnection',
      ],
      [
        'POST',
        orgBase(),
        samlBody({ saml: { metadataXml: idp.metadata, defaultRelayState: 'https://evil.test/' } }),
        400,
        'Sso.InvalidConnection',
      ],
      ['POST', orgBase(), oidcBody({ name: long }), 400, 'Validation.Failed'],
      ['POST', orgBase(), oidcBody({ name: 'two\nlines' }), 400, 'Validation.Failed'],
      ['POST', orgBase(), oidcBody({ oidc: { ...oidcBody().oidc, clientSecret: long } }), 400, 'Validation.Failed'],
      ['POST', orgBase(), oidcBody({ oidc: { ...oidcBody().oidc, issuer: 'not a url' } }), 400, 'Sso.InvalidConnection'],
      [
        'POST',
        orgBase(),
        oidcBody({ oidc: { ...oidcBody().oidc, issuer: 'https://acme.test/?q=1' } }),
        400,
        'Sso.InvalidConnection',
      ],
      [
        'POST',
        orgBase(),
        oidcBody({ oidc: { ...oidcBody().oidc, issuer: 'http://169.254.169.254' } }),
        400,
        'Sso.InvalidConnection',
      ],
      ['POST', orgBase(), oidcBody({ oidc: { ...oidcBody().oidc, scopes: ['open id'] } }), 400, 'Validation.Failed'],
      ['POST', orgBase(), oidcBody({ defaultRole: 'owner' }), 400, 'Sso.InvalidConnection'],
      ['POST', orgBase(), oidcBody({ roleMapping: [{ group: 'g', role: 'no-such-role' }] }), 400, 'Sso.InvalidConnection'],
      ['POST', orgBase(), oidcBody({ roleMapping: [{ group: 'g', role: 'user', extra: 1 }] }), 400, 'Validation.Failed'],
      ['POST', orgBase(), oidcBody({ attributeMapping: { mail: 'email' } }), 400, 'Validation.Failed'],
      ['POST', orgBase(), oidcBody({ enabled: 'yes' }), 400, 'Validation.Failed'],
      ['PATCH', item, {}, 400, 'Validation.Failed'],
      ['PATCH', item, { kind: 'saml' }, 400, 'Validation.Failed'],
      ['PATCH', item, { enabled: true }, 400, 'Validation.Failed'],
      ['PATCH', item, { saml: { metadataXml: idp.metadata } }, 400, 'Sso.InvalidConnection'],
      ['PATCH', item, { name: long }, 400, 'Validation.Failed'],
      ['PATCH', `${orgBase()}/not-a-guid`, { name: 'x' }, 404, 'Sso.ConnectionNotFound'],
      ['GET', '/v1/identity/organizations/not-an-org/sso/connections', undefined, 400, 'Validation.Failed'],
      ['POST', '/v1/admin/sso/connections', oidcBody({ defaultRole: 'user' }), 403, 'Auth.Forbidden'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const response = await call(method, path, { token, ...(body !== undefined ? { body } : {}) });
      expect({ method, path, body: JSON.stringify(body)?.slice(0, 120), status: response.status }).toEqual({
        method,
        path,
        body: JSON.stringify(body)?.slice(0, 120),
        status,
      });
      await expectProblem(response, status, code);
    }
    const after = await server.database.db('sso_connections').count({ n: '*' }).first();
    expect(Number(after?.n)).toBe(Number(before?.n) + 1);
    expect((await expectJson(await call('GET', item, { token }))).name).toBe('Acme Google Workspace');
  });

  it('isolates organizations: B’s admin gets 404 for A’s connections; members without the permission get 403', async () => {
    const created = await expectJson(await call('POST', orgBase(), { token: world.a.tokens.admin, body: oidcBody() }), 201);
    const item = `${orgBase()}/${created.id}`;
    const intruder = world.b.tokens.admin;
    for (const [method, path, body] of [
      ['GET', orgBase(), undefined],
      ['POST', orgBase(), oidcBody()],
      ['GET', item, undefined],
      ['PATCH', item, { name: 'Mine now' }],
      ['DELETE', item, undefined],
      ['POST', `${item}/enable`, undefined],
      ['POST', `${item}/disable`, undefined],
    ] as const) {
      await expectProblem(
        await call(method, path, { token: intruder, ...(body ? { body } : {}) }),
        404,
        'Identity.OrganizationNotFound',
      );
    }
    // B's own path does not reach A's connection either.
    const bItem = `/v1/identity/organizations/${world.b.organization.id}/sso/connections/${created.id}`;
    await expectProblem(await call('GET', bItem, { token: intruder }), 404, 'Sso.ConnectionNotFound');
    await expectProblem(await call('DELETE', bItem, { token: intruder }), 404, 'Sso.ConnectionNotFound');
    for (const role of ['manager', 'user'] as const) {
      await expectProblem(await call('GET', orgBase(), { token: world.a.tokens[role] }), 403, 'Auth.Forbidden');
      await expectProblem(
        await call('POST', orgBase(), { token: world.a.tokens[role], body: oidcBody() }),
        403,
        'Auth.Forbidden',
      );
    }
    // The platform administrator reaches any organization's connections.
    expect((await expectJson(await call('GET', item, { token: world.platformToken }))).id).toBe(created.id);
    const unchanged = await expectJson(await call('GET', item, { token: world.a.tokens.admin }));
    expect(unchanged).toMatchObject({ name: 'Acme Google Workspace', enabled: false });
  });

  it('manages platform connections for platform administrators only', async () => {
    const base = '/v1/admin/sso/connections';
    await expectProblem(await call('GET', base, { token: world.a.tokens.owner }), 403, 'Auth.Forbidden');
    await expectProblem(await call('POST', base, { token: world.a.tokens.owner, body: oidcBody() }), 403, 'Auth.Forbidden');
    const created = await expectJson(
      await call('POST', base, { token: world.platformToken, body: oidcBody({ name: 'Google', enabled: true }) }),
      201,
    );
    expect(created).toMatchObject({ organizationId: null, enabled: true, defaultRole: null });
    expect((await expectJson(await call('GET', base, { token: world.platformToken }))).map((c: { id: string }) => c.id)).toEqual([
      created.id,
    ]);
    // A platform connection is not an organization's.
    await expectProblem(
      await call('GET', `${orgBase()}/${created.id}`, { token: world.a.tokens.admin }),
      404,
      'Sso.ConnectionNotFound',
    );
    await expectProblem(
      await call('POST', base, { token: world.platformToken, body: oidcBody({ roleMapping: [{ group: 'g', role: 'user' }] }) }),
      400,
      'Sso.InvalidConnection',
    );
    expect((await call('DELETE', `${base}/${created.id}`, { token: world.platformToken })).status).toBe(204);
  });

  it('documents its routes in the OpenAPI document', async () => {
    const document = await expectJson(await server.fetch('/openapi/v1.json'));
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/identity/organizations/{orgId}/sso/connections',
        '/v1/identity/organizations/{orgId}/sso/connections/{connectionId}',
        '/v1/identity/organizations/{orgId}/sso/connections/{connectionId}/enable',
        '/v1/admin/sso/connections/{connectionId}/disable',
        '/v1/identity/organizations/{orgId}/domains/{domainId}/verify',
        '/sso/saml/{connectionId}/metadata',
      ]),
    );
  });

  it('answers over a real socket too', async () => {
    const { url } = await server.idt.listen(0, '127.0.0.1');
    const created = await expectJson(
      await fetch(`${url}${orgBase()}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${world.a.tokens.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify(samlBody()),
      }),
      201,
    );
    const served = await fetch(`${url}/sso/saml/${created.id}/metadata`);
    expect(served.status).toBe(200);
    expect(await served.text()).toContain(created.saml.acsUrl);
  });
});

describe.each(testDialects())('the registration rate policy on sso connections on %s', (dialect) => {
  let instance: Awaited<ReturnType<typeof startSsoInstance>>;

  beforeAll(async () => {
    instance = await startSsoInstance({ dialect, env: { IDT_RATE_LIMIT_REGISTRATION_PERMIT_LIMIT: '3' } });
  });

  afterAll(async () => {
    await instance?.server.close();
  });

  it('counts creating, changing and deleting; reading is free; a refused change writes nothing', async () => {
    const { call, world, server } = instance;
    const token = world.a.tokens.admin;
    const base = `/v1/identity/organizations/${world.a.organization.id}/sso/connections`;
    const created = await expectJson(await call('POST', base, { token, body: oidcBody() }), 201);
    for (let i = 0; i < 5; i++) await expectJson(await call('GET', `${base}/${created.id}`, { token }));
    await expectJson(await call('PATCH', `${base}/${created.id}`, { token, body: { name: 'Renamed' } }));
    await expectJson(await call('POST', `${base}/${created.id}/enable`, { token }));
    await expectProblem(await call('POST', base, { token, body: oidcBody() }), 429, 'RateLimit.Exceeded');
    await expectProblem(await call('DELETE', `${base}/${created.id}`, { token }), 429, 'RateLimit.Exceeded');
    const rows = await server.database.db('sso_connections').select('id', 'name', 'enabled');
    expect(rows.map((row) => [row.id, row.name, Boolean(row.enabled)])).toEqual([[created.id, 'Renamed', true]]);
  });
});
