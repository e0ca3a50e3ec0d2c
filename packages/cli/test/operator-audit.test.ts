import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mintAccessToken, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliFixture, idt, jsonOf, serviceAccountArgs, startCliFixture, writeOperatorSeed } from './support.js';

type Row = Record<string, any>;

/**
 * The operator's changes at the command line are on the audit trail with
 * the `operator` actor (issue 51): one record per change, none for a
 * refused command, and only the organization concerned lists them.
 */
describe.each(testDialects())('operator audit records on %s', (dialect) => {
  let fixture: CliFixture;
  let env: Record<string, string>;
  let seedFile: string;

  const records = async (action: string): Promise<Row[]> => fixture.database.db('core_audit_events').where({ action });
  const metadataOf = (row: Row) => (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata);

  /** Runs a command and returns the one record of `action` it wrote (asserting there is exactly one). */
  async function one(action: string, argv: string[], options: { stdin?: string } = {}): Promise<Row> {
    const before = new Set((await records(action)).map((row) => row.id));
    const result = await idt(env, argv, options);
    expect(result.exitCode, result.stderr).toBe(0);
    const added = (await records(action)).filter((row) => !before.has(row.id));
    expect(added).toHaveLength(1);
    return added[0] as Row;
  }

  /** Runs a refused command and asserts the trail did not grow. */
  async function none(argv: string[]): Promise<void> {
    const count = async () => Number((await fixture.database.db('core_audit_events').count({ n: '*' }))[0]?.n);
    const before = await count();
    expect((await idt(env, argv)).exitCode).not.toBe(0);
    expect(await count()).toBe(before);
  }

  beforeAll(async () => {
    fixture = await startCliFixture(dialect, 'idt-operator-audit-');
    env = fixture.env;
    seedFile = writeOperatorSeed(fixture.dir);
  });
  afterAll(async () => {
    await fixture?.close();
  });

  it('records one cli.seed.applied per seed that changed something, in its transaction', async () => {
    const invalid = join(fixture.dir, 'invalid.json');
    writeFileSync(invalid, JSON.stringify({ users: [{ email: 'not an address' }] }));
    await none(['seed', '--file', invalid]);

    const seeded = await one('cli.seed.applied', ['seed', '--file', seedFile]);
    expect(seeded).toMatchObject({
      chain: 'platform',
      organization_id: null,
      actor_type: 'operator',
      actor_id: null,
      target_type: 'seedFile',
      target_display: 'seed.json',
      outcome: 'success',
    });
    expect(metadataOf(seeded)).toMatchObject({
      command: 'idt seed',
      counts: { organization: { created: 1 }, user: { created: 1 } },
    });
    // The same file again changes nothing, and records nothing.
    const again = await idt(env, ['seed', '--file', seedFile]);
    expect(again.exitCode).toBe(0);
    expect(await records('cli.seed.applied')).toHaveLength(1);
  });

  it('names the operator on the records of register-client, rotate-secret and clients delete', async () => {
    const registered = await one('oidc.client.registered', [...serviceAccountArgs('Audited'), '--json']);
    const acme = await fixture.database.db('identity_organizations').where({ slug: 'acme' }).first();
    expect(registered).toMatchObject({ chain: acme.id, actor_type: 'operator', actor_id: null, target_type: 'client' });
    const clientId = String(registered.target_id);

    const rotated = await one('oidc.client.secretRotated', ['rotate-secret', clientId, '--json']);
    expect(rotated).toMatchObject({ chain: acme.id, actor_type: 'operator', target_id: clientId });
    expect(JSON.stringify(rotated)).not.toMatch(/"clientSecret"/);

    await none(['clients', 'delete', 'no-such-client', '--yes']);
    const deleted = await one('oidc.client.deleted', ['clients', 'delete', clientId, '--yes']);
    expect(deleted).toMatchObject({ chain: acme.id, actor_type: 'operator', target_id: clientId });

    // Acme's owner lists them; Globex's admin does not.
    const ada = await fixture.database.db('identity_users').where({ email: 'ada@example.com' }).first();
    const bob = await fixture.database.db('identity_users').where({ email: 'bob@example.com' }).first();
    const globex = await fixture.database.db('identity_organizations').where({ slug: 'globex' }).first();
    const list = async (sub: string, org: string) => {
      const token = await mintAccessToken(fixture.server, { sub, org_id: org });
      const response = await fixture.server.fetch(`/v1/audit/events?targetId=${clientId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { items: Row[] }).items.map((item) => item.action);
    };
    expect((await list(ada.id, acme.id)).sort()).toEqual(
      ['oidc.client.deleted', 'oidc.client.registered', 'oidc.client.secretRotated'].sort(),
    );
    expect(await list(bob.id, globex.id)).toEqual([]);
    expect(jsonOf(await idt(env, ['clients', 'list', '--json'])).clients.map((c: Row) => c.clientId)).not.toContain(clientId);
  });
});
