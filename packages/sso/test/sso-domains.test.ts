import { expectJson, expectProblem, outboxEvents, type TestIdt, testDialects, type World } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDnsServer, sso } from '../src/index.js';
import { type DnsResponder, startDnsResponder } from './support/dns-responder.js';
import { servicesOf, startSsoInstance } from './support/sso-instance.js';

describe.each(testDialects())('verified domains over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let world: World;
  let call: Awaited<ReturnType<typeof startSsoInstance>>['call'];
  let dns: DnsResponder;
  const base = (orgId: string) => `/v1/identity/organizations/${orgId}/domains`;

  beforeAll(async () => {
    dns = await startDnsResponder();
    // The resolver servers come from the environment setting, as a deployment sets them.
    ({ server, world, call } = await startSsoInstance({ dialect, env: { IDT_SSO_DNS_SERVERS: dns.server } }));
  });

  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  it('adds a domain with a TXT token and verifies it against DNS; another organization cannot verify it (409)', async () => {
    const a = world.a;
    const b = world.b;
    const added = await expectJson(
      await call('POST', base(a.organization.id), { token: a.tokens.admin, body: { domain: 'Acme-Corp.Example.' } }),
      201,
    );
    expect(added).toMatchObject({
      organizationId: a.organization.id,
      domain: 'acme-corp.example',
      verified: false,
      verifiedAt: null,
      verification: { type: 'TXT', name: 'acme-corp.example' },
    });
    expect(added.verification.value).toMatch(/^idt-verification=[A-Za-z0-9_-]{43}$/);
    await expectProblem(
      await call('POST', base(a.organization.id), { token: a.tokens.admin, body: { domain: 'acme-corp.example' } }),
      409,
      'Sso.DomainExists',
    );

    // Not published yet: nothing is verified.
    const early = await expectProblem(
      await call('POST', `${base(a.organization.id)}/${added.id}/verify`, { token: a.tokens.admin }),
      422,
      'Sso.DomainVerificationFailed',
    );
    expect(early.detail).toContain(added.verification.value);
    expect(dns.queries).toContain('acme-corp.example');

    // B claims the same domain (allowed) and publishes its token too.
    const claimed = await expectJson(
      await call('POST', base(b.organization.id), { token: b.tokens.owner, body: { domain: 'acme-corp.example' } }),
      201,
    );
    dns.setTxt('acme-corp.example', ['v=spf1 -all', added.verification.value, claimed.verification.value]);

    const verified = await expectJson(
      await call('POST', `${base(a.organization.id)}/${added.id}/verify`, { token: a.tokens.admin }),
    );
    expect(verified).toMatchObject({ verified: true, verifiedAt: server.clock.now().toISOString() });
    // Verifying again answers as it is, without a second event.
    expect(
      await expectJson(await call('POST', `${base(a.organization.id)}/${added.id}/verify`, { token: a.tokens.admin })),
    ).toEqual(verified);
    const events = (await outboxEvents(server.database.db, 'DomainVerifiedEvent')).filter((event) => event.domainId === added.id);
    expect(events).toEqual([
      {
        domainId: added.id,
        organizationId: a.organization.id,
        domain: 'acme-corp.example',
        verifiedBy: a.admin.id,
        verifiedAt: verified.verifiedAt,
      },
    ]);
    expect(await servicesOf(server).domains.verifiedOrganizationOf('Ada@ACME-corp.example')).toBe(a.organization.id);

    await expectProblem(
      await call('POST', `${base(b.organization.id)}/${claimed.id}/verify`, { token: b.tokens.owner }),
      409,
      'Sso.DomainTaken',
    );
    const row = await server.database.db('sso_domains').where({ id: claimed.id }).first();
    expect(row.verified_at).toBeNull();

    // Once A lets go of it, B can verify it.
    expect((await call('DELETE', `${base(a.organization.id)}/${added.id}`, { token: a.tokens.admin })).status).toBe(204);
    expect(
      (await expectJson(await call('POST', `${base(b.organization.id)}/${claimed.id}/verify`, { token: b.tokens.owner })))
        .verified,
    ).toBe(true);
    expect(await servicesOf(server).domains.verifiedOrganizationOf('acme-corp.example')).toBe(b.organization.id);
  });

  it('isolates organizations: B’s admin gets 404 for A’s domains and cannot verify them', async () => {
    const a = world.a;
    const added = await expectJson(
      await call('POST', base(a.organization.id), { token: a.tokens.owner, body: { domain: 'alpha.example' } }),
      201,
    );
    dns.setTxt('alpha.example', [added.verification.value]);
    const intruder = world.b.tokens.admin;
    for (const [method, path] of [
      ['GET', base(a.organization.id)],
      ['GET', `${base(a.organization.id)}/${added.id}`],
      ['POST', `${base(a.organization.id)}/${added.id}/verify`],
      ['DELETE', `${base(a.organization.id)}/${added.id}`],
    ] as const) {
      await expectProblem(await call(method, path, { token: intruder }), 404, 'Identity.OrganizationNotFound');
    }
    await expectProblem(
      await call('POST', base(a.organization.id), { token: intruder, body: { domain: 'beta.example' } }),
      404,
      'Identity.OrganizationNotFound',
    );
    // Through B's own path, A's domain does not exist.
    await expectProblem(
      await call('POST', `${base(world.b.organization.id)}/${added.id}/verify`, { token: intruder }),
      404,
      'Sso.DomainNotFound',
    );
    await expectProblem(await call('GET', base(a.organization.id), { token: a.tokens.manager }), 403, 'Auth.Forbidden');
    const row = await server.database.db('sso_domains').where({ id: added.id }).first();
    expect(row.verified_at).toBeNull();
    expect(
      (await expectJson(await call('GET', base(a.organization.id), { token: world.platformToken }))).map(
        (d: { id: string }) => d.id,
      ),
    ).toContain(added.id);
  });

  it('refuses bad input on every domain route', async () => {
    const a = world.a;
    const token = a.tokens.admin;
    const cases: Array<[string, string, unknown, number, string]> = [
      ['POST', base(a.organization.id), '{"domain":', 400, 'Http.ClientError'],
      ['POST', base(a.organization.id), { domain: 'ok.example', extra: 1 }, 400, 'Validation.Failed'],
      ['POST', base(a.organization.id), { domain: 'x'.repeat(10_240) }, 400, 'Validation.Failed'],
      ['POST', base(a.organization.id), {}, 400, 'Validation.Failed'],
      ['POST', base(a.organization.id), { domain: 42 }, 400, 'Validation.Failed'],
      ['POST', base(a.organization.id), { domain: 'https://example.com/' }, 400, 'Sso.InvalidDomain'],
      ['POST', base(a.organization.id), { domain: 'ada@example.com' }, 400, 'Sso.InvalidDomain'],
      ['POST', base(a.organization.id), { domain: '127.0.0.1' }, 400, 'Sso.InvalidDomain'],
      ['POST', base(a.organization.id), { domain: 'localhost' }, 400, 'Sso.InvalidDomain'],
      ['POST', `${base(a.organization.id)}/not-a-guid/verify`, undefined, 404, 'Sso.DomainNotFound'],
      ['DELETE', `${base(a.organization.id)}/00000000-0000-4000-8000-000000000000`, undefined, 404, 'Sso.DomainNotFound'],
      ['GET', base('not-an-org'), undefined, 400, 'Validation.Failed'],
    ];
    const before = await server.database.db('sso_domains').count({ n: '*' }).first();
    for (const [method, path, body, status, code] of cases) {
      await expectProblem(await call(method, path, { token, ...(body !== undefined ? { body } : {}) }), status, code);
    }
    const after = await server.database.db('sso_domains').count({ n: '*' }).first();
    expect(Number(after?.n)).toBe(Number(before?.n));
  });
});

describe('the DNS server setting', () => {
  it('accepts addresses with optional ports and refuses anything else', () => {
    for (const entry of ['1.1.1.1', '127.0.0.1:5353', '::1', '[::1]:53', '2606:4700:4700::1111'])
      expect(isDnsServer(entry), entry).toBe(true);
    for (const entry of ['dns.example', '127.0.0.1:99999', '[127.0.0.1]:53', '::1:53x', ''])
      expect(isDnsServer(entry), entry).toBe(false);
    const settings = sso().settings;
    expect(settings?.resolve({ IDT_SSO_DNS_SERVERS: ' 127.0.0.1:5300, [::1]:53 ' }, {} as never)).toEqual({
      dnsServers: ['127.0.0.1:5300', '[::1]:53'],
      allowPrivateHosts: false,
    });
    expect(() => settings?.resolve({ IDT_SSO_DNS_SERVERS: 'dns.example' }, {} as never)).toThrow(/IDT_SSO_DNS_SERVERS/);
    expect(() => settings?.resolve({ IDT_SSO_ALLOW_PRIVATE_HOSTS: 'maybe' }, {} as never)).toThrow(/IDT_SSO_ALLOW_PRIVATE_HOSTS/);
  });
});
