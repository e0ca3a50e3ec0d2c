import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../auth/principal.js';
import { AUDIT_EVENTS_TABLE } from '../db/migrations/0006-audit-events.js';
import { coreMigrations } from '../knex.js';
import { defineAuditActions } from './actions.js';
import { canonicalAuditRecord, canonicalJson } from './chain.js';
import type { AuditEntry, AuditRecord } from './entry.js';
import { createKnexAuditStore } from './knex-store.js';
import { auditCsvLine, createAuditRoutes } from './routes.js';
import { createAuditTrail } from './trail.js';
import { verifyAuditStoreChain } from './verify.js';

/** canonicalJson as it was first written (map, filter, sort, join): the form every stored hash covers. */
function referenceCanonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((item) => referenceCanonicalJson(item)).join(',')}]`;
  const keys = Object.keys(value as Record<string, unknown>)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${referenceCanonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
}

/** auditCsvLine as it was first written (an array of fields, mapped and joined): the format CSV exports keep. */
function referenceCsvLine(record: AuditRecord): string {
  const field = (value: string | number | null): string => {
    if (value === null) return '';
    if (typeof value === 'number') return String(value);
    const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
    return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  const values: Array<string | number | null> = [
    record.id,
    record.sequence,
    record.occurredAt,
    record.organizationId,
    record.actor.type,
    record.actor.id,
    record.actor.display,
    record.action,
    record.target?.type ?? null,
    record.target?.id ?? null,
    record.target?.display ?? null,
    record.outcome,
    record.ip,
    record.userAgent,
    record.traceId,
    JSON.stringify(record.metadata),
    record.prevHash,
    record.hash,
  ];
  return `${values.map(field).join(',')}\r\n`;
}

const Actions = defineAuditActions('tests', {
  exported: { action: 'tests.thing.exported', description: 'A thing was exported.', targetType: 'thing' },
});
const ORG = '2d1e8c3a-2f6a-4c79-9f2e-8c3b9a4d5e6f';

describe('the canonical form', () => {
  it('is the same text as the first implementation, for every kind of value', () => {
    const sparse: unknown[] = [1];
    sparse[3] = 'x';
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`k${(index * 7) % 40}`, index]));
    const values: unknown[] = [
      null,
      undefined,
      0,
      -1.5e-7,
      'a "quoted" \\ line\nbreak \u2028 é 𝄞 \ud800',
      [],
      {},
      [1, 'two', null, undefined, { b: 1, a: [true, false] }],
      sparse,
      { b: 1, a: 2, A: 3, _: 4, '': 5, 10: 'ten', 9: 'nine', '-1': 'minus', ü: 6, z: undefined },
      { nested: { z: { y: { x: [{ d: 1, c: 2 }] } } }, via: 'operator', roles: ['owner'], record: 12 },
      many,
      new Date(0),
    ];
    for (const value of values) expect(canonicalJson(value)).toBe(referenceCanonicalJson(value));
  });

  it('of a record is the form its hash was written over', () => {
    const record: Omit<AuditRecord, 'hash' | 'prevHash'> = {
      id: '0190a7a0-0000-7000-8000-000000000001',
      sequence: 7,
      occurredAt: '2026-03-01T10:00:00.000Z',
      organizationId: ORG,
      actor: { type: 'user', id: 'u-1', display: 'Ada "the first"' },
      action: Actions.exported.action,
      target: { type: 'thing', id: null, display: '=SUM(A1)' },
      outcome: 'success',
      ip: null,
      userAgent: 'vitest',
      traceId: null,
      metadata: { 2: 'two', b: [1, { y: 2, x: 1 }], a: null },
    };
    const reference = referenceCanonicalJson({
      v: 1,
      id: record.id,
      sequence: record.sequence,
      occurredAt: record.occurredAt,
      organizationId: record.organizationId,
      actor: record.actor,
      action: record.action,
      target: record.target,
      outcome: record.outcome,
      ip: record.ip,
      userAgent: record.userAgent,
      traceId: record.traceId,
      metadata: record.metadata,
    });
    expect(canonicalAuditRecord(record)).toBe(reference);
    expect(canonicalAuditRecord({ ...record, target: null })).toBe(
      referenceCanonicalJson({ ...JSON.parse(reference), target: null }),
    );
  });
});

describe.each(testDialects())('the audit export on %s', (dialect) => {
  let database: TestDatabase;
  const records = 613;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
    const audit = createAuditTrail({ store: createKnexAuditStore(database.db) });
    audit.register(Object.values(Actions));
    const entries: AuditEntry[] = Array.from({ length: records }, (_, index) => ({
      action: Actions.exported.action,
      organizationId: ORG,
      actor: { type: 'user', id: `u-${index}`, display: index % 3 === 0 ? `Zoë "${index}", ☃` : `user-${index}` },
      target:
        index % 5 === 0 ? null : { type: 'thing', id: `t-${index}`, display: index % 7 === 0 ? '=1+1' : 'é'.repeat(index % 300) },
      ip: index % 2 ? '203.0.113.9' : null,
      userAgent: 'vitest\r\nagent',
      metadata: { 10: 'ten', 9: 'nine', index, nested: { b: 1, a: [index, 'x'] } },
    }));
    await database.db.transaction((trx) => audit.record(entries, trx));
  });
  afterAll(async () => {
    await database?.destroy();
  });

  async function exported(format: 'ndjson' | 'csv', exportBatchSize?: number): Promise<string> {
    const audit = createAuditTrail({ store: createKnexAuditStore(database.db) });
    const routes = createAuditRoutes({
      audit,
      isPlatformAdministrator: async () => true,
      ...(exportBatchSize ? { exportBatchSize } : {}),
    });
    const route = routes.find((candidate) => candidate.operationId === 'exportAuditEvents');
    const principal = { organizationId: ORG } as Principal;
    const response = (await route?.handler({
      principal,
      query: { format },
      signal: new AbortController().signal,
    } as never)) as Response;
    return response.text();
  }

  async function oldestFirst(): Promise<AuditRecord[]> {
    const audit = createAuditTrail({ store: createKnexAuditStore(database.db) });
    return (await audit.list({ organizationId: ORG }, { limit: records + 1 })).reverse();
  }

  it('writes each record as JSON.stringify of the record, oldest first, across batches and chunks', async () => {
    const expected = (await oldestFirst()).map((record) => `${JSON.stringify(record)}\n`).join('');
    for (const text of [await exported('ndjson'), await exported('ndjson', 7)]) {
      // Compared line by line: a failing comparison of the whole text takes vitest minutes to print.
      expect(text.split('\n')).toEqual(expected.split('\n'));
    }
  });

  it('writes CSV with its header and one line per record, as first written', async () => {
    const list = await oldestFirst();
    for (const record of list) expect(auditCsvLine(record)).toBe(referenceCsvLine(record));
    for (const text of [await exported('csv'), await exported('csv', 7)]) {
      expect(text.startsWith('id,sequence,occurredAt,organizationId,actorType,')).toBe(true);
      expect(text.slice(text.indexOf('\r\n') + 2) === list.map(referenceCsvLine).join('')).toBe(true);
    }
  });

  it('stops verifying at the head it read, past full batches of newer records', async () => {
    const store = createKnexAuditStore(database.db);
    const state = await store.chain(ORG);
    const row = await database.db(AUDIT_EVENTS_TABLE).where({ chain: ORG, seq: 300 }).first('hash');
    const older = { ...store, chain: async () => (state ? { ...state, sequence: 300, hash: row.hash } : undefined) };
    const result = await verifyAuditStoreChain(older, ORG, { batchSize: 100 });
    expect(result).toMatchObject({ valid: true, checked: 300, headSequence: 300, broken: null });
    expect(await verifyAuditStoreChain(store, ORG, { batchSize: 100 })).toMatchObject({ valid: true, checked: records });
  });
});
