import {
  Browser,
  caller,
  createTestIdt,
  expectJson,
  seedWorld,
  type TestClient,
  type TestDialect,
  type TestHost,
  type TestIdt,
  type TestServer,
  testDialects,
  type World,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DnsResponder, startDnsResponder } from './support/dns-responder.js';
import { begin, handleOf } from './support/sign-in.js';
import { servicesOf, ssoModules } from './support/sso-instance.js';
import { signInAtUpstream, startUpstreamIdt } from './support/upstream-idt.js';

const DOWNSTREAM = 'http://127.0.0.1:9';
const EMAIL = 'ada@audit.example';

interface Row {
  chain: string;
  action: string;
  actor_type: string;
  actor_id: string | null;
  target_type: string | null;
  target_id: string | null;
  outcome: string;
  metadata: string;
}

let upstream: TestServer;
let client: TestClient;

/** Follows the upstream's sign-in pages to the redirect back to the downstream. */
const signInAt = (url: string, browser: Browser, email = EMAIL): Promise<URL> => signInAtUpstream(url, browser, email);

beforeAll(async () => {
  ({ server: upstream, client } = await startUpstreamIdt(`${DOWNSTREAM}/sso/oidc/callback`, [EMAIL]));
}, 60_000);

afterAll(async () => {
  await upstream?.close();
});

/**
 * The audit actions of `@idt/sso` through the real API: connections,
 * domains, the `ssoRequired` policy, SSO sign-ins and refused callbacks.
 * Exactly one record each, on the organization's trail; none for a refused
 * request; never listed to another organization.
 */
describe.each(testDialects())('the audit actions of single sign-on on %s', (dialect: TestDialect) => {
  let server: TestIdt;
  let world: World;
  let call: ReturnType<typeof caller>;
  let dns: DnsResponder;
  let orgA: string;
  let counter = 0;
  const uid = () => `audit-${dialect}-${++counter}`;

  beforeAll(async () => {
    dns = await startDnsResponder();
    server = (await createTestIdt({
      dialect,
      modules: ssoModules({ allowPrivateHosts: true }),
      env: { IDT_SSO_DNS_SERVERS: dns.server },
      config: { issuer: DOWNSTREAM },
    })) as unknown as TestIdt;
    world = await seedWorld(server as unknown as TestHost);
    call = caller(server as unknown as TestHost);
    orgA = world.a.organization.id;
  });
  afterAll(async () => {
    await server?.close();
    await dns?.close();
  });

  const rows = (where: Partial<Row>): Promise<Row[]> =>
    server.database.db('core_audit_events').where(where).orderBy('seq', 'asc') as Promise<Row[]>;
  const listed = async (token: string, query: string) =>
    (await expectJson(await call('GET', `/v1/audit/events?${query}`, { token }))).items as unknown[];

  it('records each connection change once, with the acting admin, in the organization', async () => {
    const token = world.a.tokens.admin;
    const base = `/v1/identity/organizations/${orgA}/sso/connections`;
    const body = {
      kind: 'oidc',
      name: 'Audit idt',
      oidc: { issuer: upstream.url, clientId: client.clientId, clientSecret: client.clientSecret },
    };
    // Refused: a body that is no connection records nothing.
    expect((await call('POST', base, { token, body: { kind: 'oidc', name: 'Broken' } })).status).toBe(400);
    const created = await expectJson(await call('POST', base, { token, body }), 201);
    const item = `${base}/${created.id}`;
    await expectJson(await call('PATCH', item, { token, body: { name: 'Audit idt 2', oidc: { clientSecret: 'another-one' } } }));
    await expectJson(await call('POST', `${item}/enable`, { token }));
    await expectJson(await call('POST', `${item}/enable`, { token })); // unchanged: no record
    await expectJson(await call('POST', `${item}/disable`, { token }));
    expect((await call('DELETE', item, { token })).status).toBe(204);

    const recorded = await rows({ target_id: created.id });
    expect(recorded.map((row) => row.action)).toEqual([
      'sso.connection.created',
      'sso.connection.updated',
      'sso.connection.enabled',
      'sso.connection.disabled',
      'sso.connection.deleted',
    ]);
    for (const row of recorded) {
      expect(row).toMatchObject({ chain: orgA, actor_type: 'user', actor_id: world.a.admin.id, target_type: 'ssoConnection' });
    }
    expect(JSON.parse(recorded[1]?.metadata ?? '{}')).toEqual({ fields: ['name', 'oidc.clientSecretChanged'] });
    expect(JSON.stringify(recorded)).not.toContain('another-one');
    expect(JSON.stringify(recorded)).not.toContain(client.clientSecret);
    expect(await rows({ action: 'sso.connection.created', chain: orgA })).toHaveLength(1);
    expect(await listed(world.a.tokens.owner, `targetId=${created.id}`)).toHaveLength(5);
    expect(await listed(world.b.tokens.owner, `targetId=${created.id}`)).toEqual([]);
  });

  it('records domains added, verified and deleted, and the ssoRequired policy when it changes', async () => {
    const token = world.a.tokens.admin;
    const base = `/v1/identity/organizations/${orgA}/domains`;
    const added = await expectJson(await call('POST', base, { token, body: { domain: 'audit.example' } }), 201);
    // Not verifiable yet (no TXT record): refused, nothing recorded.
    expect((await call('POST', `${base}/${added.id}/verify`, { token })).status).toBeGreaterThanOrEqual(400);
    dns.setTxt('audit.example', [added.verification.value]);
    await expectJson(await call('POST', `${base}/${added.id}/verify`, { token }));
    const policy = `/v1/identity/organizations/${orgA}/sso/policy`;
    await expectJson(await call('PUT', policy, { token, body: { ssoRequired: true } }));
    await expectJson(await call('PUT', policy, { token, body: { ssoRequired: true } })); // unchanged: no record
    await expectJson(await call('PUT', policy, { token, body: { ssoRequired: false } }));
    const other = await expectJson(await call('POST', base, { token, body: { domain: 'gone.example' } }), 201);
    expect((await call('DELETE', `${base}/${other.id}`, { token })).status).toBe(204);

    expect((await rows({ target_id: added.id })).map((row) => row.action)).toEqual(['sso.domain.added', 'sso.domain.verified']);
    expect(JSON.stringify(await rows({ target_id: added.id }))).not.toContain(added.verification.value);
    expect((await rows({ target_id: other.id })).map((row) => row.action)).toEqual(['sso.domain.added', 'sso.domain.deleted']);
    const changes = await rows({ action: 'sso.policy.changed', chain: orgA });
    expect(changes.map((row) => JSON.parse(row.metadata))).toEqual([
      { from: false, to: true },
      { from: true, to: false },
    ]);
    expect(await listed(world.b.tokens.owner, 'action=sso.policy.changed')).toEqual([]);
  });

  it('records an SSO sign-in (provisioned, then returning) and a refused callback once each', async () => {
    const token = world.a.tokens.admin;
    const connection = await expectJson(
      await call('POST', `/v1/identity/organizations/${orgA}/sso/connections`, {
        token,
        body: {
          kind: 'oidc',
          name: 'Sign-in idt',
          enabled: true,
          oidc: { issuer: upstream.url, clientId: client.clientId, clientSecret: client.clientSecret },
        },
      }),
      201,
    );
    const signIn = async () => {
      const interaction = uid();
      const callback = await signInAt(await begin(server, connection.id, interaction), new Browser());
      const response = await server.fetch(`${callback.pathname}${callback.search}`, { redirect: 'manual' });
      return servicesOf(server).federation.consume(await handleOf(response, interaction), interaction);
    };
    const first = await signIn();
    if (first.kind !== 'signed-in') throw new Error(`not signed in: ${JSON.stringify(first)}`);
    await signIn();
    const signIns = await rows({ action: 'sso.signIn.succeeded', actor_id: first.userId });
    expect(signIns.map((row) => JSON.parse(row.metadata).provisioning)).toEqual(['provisioned', 'returning']);
    expect(signIns.every((row) => row.chain === orgA && row.target_id === first.userId)).toBe(true);

    const interaction = uid();
    const state = new URL(await begin(server, connection.id, interaction)).searchParams.get('state') ?? '';
    const denied = await server.fetch(`/sso/oidc/callback?state=${encodeURIComponent(state)}&error=access_denied`, {
      redirect: 'manual',
    });
    const outcome = await servicesOf(server).federation.consume(await handleOf(denied, interaction), interaction);
    // Recorded here already: the sign-in pages record nothing more.
    expect(outcome).toMatchObject({ kind: 'failed', reason: 'denied', audited: true });
    const failures = await rows({ action: 'sso.signIn.failed', target_id: connection.id });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ chain: orgA, outcome: 'failure', actor_type: 'system' });
    expect(JSON.parse(failures[0]?.metadata ?? '{}')).toEqual({ reason: 'denied' });
    expect(await listed(world.b.tokens.owner, 'action=sso.signIn.failed')).toEqual([]);
  });
});
