import { defineAuditActions } from '@idt/core';
import { AUDIT_EVENTS_TABLE } from '@idt/core/knex';
import { testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliFixture, idt, jsonOf, startCliFixture } from './support.js';

const Actions = defineAuditActions('tests', {
  renamed: { action: 'tests.thing.renamed', description: 'A thing was renamed.' },
});
const ORG = '2d1e8c3a-2f60-4c79-9f2e-8c3b9a4d5e6f';

describe.each(testDialects())('idt audit verify on %s', (dialect) => {
  let fixture: CliFixture;

  beforeAll(async () => {
    fixture = await startCliFixture(dialect, 'idt-audit-');
    const audit = fixture.server.idt.infrastructure.audit;
    audit.register(Object.values(Actions));
    const entry = (organizationId: string | null) => ({
      action: Actions.renamed.action,
      organizationId,
      actor: { type: 'operator' as const, id: null, display: null },
    });
    await fixture.database.db.transaction((trx) => audit.record([entry(ORG), entry(ORG), entry(ORG), entry(null)], trx));
  });
  afterAll(async () => {
    await fixture?.close();
  });

  it('reports every chain intact, in words and as JSON', async () => {
    const human = await idt(fixture.env, ['audit', 'verify']);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toContain(`${ORG}: intact (3 checked, records 1–3)`);
    expect(human.stdout).toContain('platform: intact (1 checked');
    expect(human.stderr).toContain('Verifying platform…');

    const json = await idt(fixture.env, ['audit', 'verify', '--org', ORG, '--json']);
    expect(json.exitCode).toBe(0);
    expect(jsonOf(json)).toMatchObject({
      ok: true,
      valid: true,
      chains: [{ organizationId: ORG, valid: true, checked: 3, headSequence: 3, broken: null }],
    });
    expect(json.stderr).toBe('');
  });

  it('refuses an --org that is neither an id nor platform (usage, exit 2)', async () => {
    const result = await idt(fixture.env, ['audit', 'verify', '--org', 'acme']);
    expect(result.exitCode).toBe(2);
  });

  it('names the first broken link of a chain changed by hand (exit 1, Audit.ChainBroken)', async () => {
    const { db } = fixture.database;
    await db(AUDIT_EVENTS_TABLE).where({ chain: ORG, seq: 2 }).delete();
    const human = await idt(fixture.env, ['audit', 'verify']);
    expect(human.exitCode).toBe(1);
    expect(human.stdout).toContain(`${ORG}: BROKEN at 2 (missing)`);
    expect(human.stderr).toContain('(Audit.ChainBroken)');
    const json = await idt(fixture.env, ['audit', 'verify', '--org', ORG, '--json']);
    expect(json.exitCode).toBe(1);
    expect(jsonOf(json)).toMatchObject({ ok: false, error: { code: 'Audit.ChainBroken' } });
    // The platform chain alone is still intact.
    expect((await idt(fixture.env, ['audit', 'verify', '--org', 'platform'])).exitCode).toBe(0);
  });
});
