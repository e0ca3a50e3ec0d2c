import { expectJson, type TestDialect, testDialects } from '@idt/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { refusedByUpstream, signInThroughUpstream, useDownstreamIdt } from './support/downstream-idt.js';
import { upstreamOidcOf, useUpstreamIdt } from './support/upstream-idt.js';

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

const upstream = useUpstreamIdt([EMAIL]);

/**
 * The audit actions of `@idt/sso` through the real API: connections,
 * domains, the `ssoRequired` policy, SSO sign-ins and refused callbacks.
 * Exactly one record each, on the organization's trail; none for a refused
 * request; never listed to another organization.
 */
describe.each(testDialects())('the audit actions of single sign-on on %s', (dialect: TestDialect) => {
  const downstream = useDownstreamIdt(dialect);
  let orgA: string;
  let counter = 0;
  const uid = () => `audit-${dialect}-${++counter}`;

  beforeAll(() => {
    orgA = downstream.world.a.organization.id;
  });

  const rows = (where: Partial<Row>): Promise<Row[]> =>
    downstream.server.database.db('core_audit_events').where(where).orderBy('seq', 'asc') as Promise<Row[]>;
  const listed = async (token: string, query: string) =>
    (await expectJson(await downstream.call('GET', `/v1/audit/events?${query}`, { token }))).items as unknown[];

  it('records each connection change once, with the acting admin, in the organization', async () => {
    const { call, world } = downstream;
    const token = world.a.tokens.admin;
    const base = `/v1/identity/organizations/${orgA}/sso/connections`;
    const body = {
      kind: 'oidc',
      name: 'Audit idt',
      oidc: upstreamOidcOf(upstream),
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
    expect(JSON.stringify(recorded)).not.toContain(upstream.client.clientSecret);
    expect(await rows({ action: 'sso.connection.created', chain: orgA })).toHaveLength(1);
    expect(await listed(world.a.tokens.owner, `targetId=${created.id}`)).toHaveLength(5);
    expect(await listed(world.b.tokens.owner, `targetId=${created.id}`)).toEqual([]);
  });

  it('records domains added, verified and deleted, and the ssoRequired policy when it changes', async () => {
    const { call, world, dns } = downstream;
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
    const { call, world, server } = downstream;
    const token = world.a.tokens.admin;
    const connection = await expectJson(
      await call('POST', `/v1/identity/organizations/${orgA}/sso/connections`, {
        token,
        body: {
          kind: 'oidc',
          name: 'Sign-in idt',
          enabled: true,
          oidc: upstreamOidcOf(upstream),
        },
      }),
      201,
    );
    const signIn = () => signInThroughUpstream(server, connection.id, uid(), EMAIL);
    const first = await signIn();
    if (first.kind !== 'signed-in') throw new Error(`not signed in: ${JSON.stringify(first)}`);
    await signIn();
    const signIns = await rows({ action: 'sso.signIn.succeeded', actor_id: first.userId });
    expect(signIns.map((row) => JSON.parse(row.metadata).provisioning)).toEqual(['provisioned', 'returning']);
    expect(signIns.every((row) => row.chain === orgA && row.target_id === first.userId)).toBe(true);

    const outcome = await refusedByUpstream(server, connection.id, uid());
    // Recorded here already: the sign-in pages record nothing more.
    expect(outcome).toMatchObject({ kind: 'failed', reason: 'denied', audited: true });
    const failures = await rows({ action: 'sso.signIn.failed', target_id: connection.id });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ chain: orgA, outcome: 'failure', actor_type: 'system' });
    expect(JSON.parse(failures[0]?.metadata ?? '{}')).toEqual({ reason: 'denied' });
    expect(await listed(world.b.tokens.owner, 'action=sso.signIn.failed')).toEqual([]);
  });
});
