import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defineAuditActions } from '../src/audit/actions.js';
import type { AuditEntry, AuditMetadata } from '../src/audit/entry.js';
import { type AuditTrail, createAuditTrail } from '../src/audit/trail.js';
import { createManualClock, type ManualClock } from '../src/clock.js';
import {
  AUDIT_CHAINS_TABLE,
  AUDIT_EVENTS_TABLE,
  coreMigrations,
  createDatabase,
  createEventBus,
  createKnexAuditStore,
  verifyAuditChain,
} from '../src/knex.js';

const Actions = defineAuditActions('tests', {
  renamed: { action: 'tests.thing.renamed', description: 'A thing was renamed.', targetType: 'thing' },
  deleted: { action: 'tests.thing.deleted', description: 'A thing was deleted.', targetType: 'thing' },
});

const ORG_A = '0b9c6a1e-0d4e-4a57-9d0c-6a1f7e2b3c4d';
const ORG_B = '1c0d7b2f-1e5f-4b68-8e1d-7b2a8f3c4d5e';

function entry(organizationId: string | null, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    action: Actions.renamed.action,
    organizationId,
    actor: { type: 'user', id: 'u-1', display: 'ada@example.com' },
    target: { type: 'thing', id: 't-1', display: 'Thing' },
    ip: '203.0.113.9',
    userAgent: 'vitest',
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    metadata: { from: 'Old', to: 'New', apiKeyId: 'k-1', nested: { tokenCount: 2 } },
    ...overrides,
  };
}

describe.each(testDialects())('the audit trail on %s', (dialect) => {
  let database: TestDatabase;
  let db: Knex;
  let clock: ManualClock;
  let audit: AuditTrail;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations]);
    db = database.db;
  });
  afterAll(async () => {
    await database.destroy();
  });
  beforeEach(async () => {
    await db(AUDIT_EVENTS_TABLE).delete();
    await db(AUDIT_CHAINS_TABLE).delete();
    await db('core_outbox_deliveries').delete();
    await db('core_outbox_events').delete();
    clock = createManualClock('2026-03-01T10:00:00.000Z');
    audit = createAuditTrail({ store: createKnexAuditStore(db), clock, retentionDays: 30 });
    audit.register(Object.values(Actions));
  });

  const record = (entries: AuditEntry | AuditEntry[]) => db.transaction((trx) => audit.record(entries, trx));

  it('records in the caller’s transaction, with the clock’s time, a sequence and linked hashes', async () => {
    const [first] = await record(entry(ORG_A));
    const [second, third] = await record([entry(ORG_A, { action: Actions.deleted.action }), entry(ORG_A)]);
    expect(first).toMatchObject({
      sequence: 1,
      occurredAt: '2026-03-01T10:00:00.000Z',
      organizationId: ORG_A,
      outcome: 'success',
      prevHash: '0'.repeat(64),
    });
    expect(first?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(second).toMatchObject({ sequence: 2, prevHash: first?.hash });
    expect(third).toMatchObject({ sequence: 3, prevHash: second?.hash });
    const listed = await audit.list({ organizationId: ORG_A }, { limit: 10 });
    expect(listed.map((item) => item.sequence)).toEqual([3, 2, 1]);
    expect(listed[2]).toEqual(first);
    expect(await verifyAuditChain(db, ORG_A)).toMatchObject({ valid: true, checked: 3, headSequence: 3, broken: null });
  });

  it('records nothing for a change that rolls back', async () => {
    await expect(
      db.transaction(async (trx) => {
        await audit.record(entry(ORG_A), trx);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await db(AUDIT_EVENTS_TABLE).count({ n: '*' }).first()).toMatchObject({ n: expect.anything() });
    expect(Number((await db(AUDIT_EVENTS_TABLE).count({ n: '*' }).first())?.n)).toBe(0);
    const [after] = await record(entry(ORG_A));
    expect(after?.sequence).toBe(1);
  });

  it('keeps one chain per organization and one for the platform', async () => {
    await record([entry(ORG_A), entry(ORG_B), entry(null), entry(ORG_A)]);
    expect((await audit.list({ organizationId: ORG_A }, { limit: 10 })).map((item) => item.sequence)).toEqual([2, 1]);
    expect((await audit.list({ organizationId: ORG_B }, { limit: 10 })).map((item) => item.sequence)).toEqual([1]);
    expect((await audit.list({ organizationId: null }, { limit: 10 })).map((item) => item.organizationId)).toEqual([null]);
    for (const organizationId of [ORG_A, ORG_B, null]) expect((await verifyAuditChain(db, organizationId)).valid).toBe(true);
  });

  it('refuses an unregistered action, a malformed entry, secret-looking metadata and a missing transaction', async () => {
    await expect(record(entry(ORG_A, { action: 'tests.thing.unknown' }))).rejects.toThrow(/not registered/);
    await expect(record(entry(ORG_A, { action: 'Not A Name' }))).rejects.toThrow(/dotted/);
    for (const metadata of [
      { password: 'x' } as AuditMetadata,
      { clientSecret: 'x' },
      { reset_token: 'x' },
      { code: '123456' },
      { apiKey: 'x' },
      { passwordHash: 'x' },
      { nested: [{ recoveryCodes: ['a'] }] },
      { note: 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln' },
    ]) {
      await expect(record(entry(ORG_A, { metadata }))).rejects.toThrow(/secret/);
    }
    await expect(audit.record(entry(ORG_A), db as unknown as Knex.Transaction)).rejects.toThrow(TypeError);
    expect(Number((await db(AUDIT_EVENTS_TABLE).count({ n: '*' }).first())?.n)).toBe(0);
  });

  it('records an unregistered action with a warning in Production (strict off)', async () => {
    const lenient = createAuditTrail({ store: createKnexAuditStore(db), clock, strict: false });
    const [stored] = await db.transaction((trx) => lenient.record(entry(ORG_A, { action: 'tests.thing.unknown' }), trx));
    expect(stored?.action).toBe('tests.thing.unknown');
  });

  it('filters by action, actor, target, outcome and time, and pages by sequence', async () => {
    await record(entry(ORG_A));
    clock.advance(60_000);
    await record(
      entry(ORG_A, { action: Actions.deleted.action, outcome: 'failure', actor: { type: 'apiKey', id: 'k-9', display: null } }),
    );
    clock.advance(60_000);
    await record(entry(ORG_A, { target: { type: 'thing', id: 't-2', display: null } }));
    const ids = async (query: Parameters<AuditTrail['list']>[0]) =>
      (await audit.list(query, { limit: 10 })).map((item) => item.sequence);
    expect(await ids({ organizationId: ORG_A, action: Actions.deleted.action })).toEqual([2]);
    expect(await ids({ organizationId: ORG_A, actorId: 'k-9' })).toEqual([2]);
    expect(await ids({ organizationId: ORG_A, targetId: 't-2' })).toEqual([3]);
    expect(await ids({ organizationId: ORG_A, outcome: 'failure' })).toEqual([2]);
    expect(await ids({ organizationId: ORG_A, from: '2026-03-01T10:01:00.000Z' })).toEqual([3, 2]);
    expect(await ids({ organizationId: ORG_A, to: '2026-03-01T10:01:00.000Z' })).toEqual([1]);
    expect((await audit.list({ organizationId: ORG_A }, { beforeSequence: 3, limit: 1 })).map((item) => item.sequence)).toEqual([
      2,
    ]);
    const batches: number[][] = [];
    for await (const batch of audit.batches({ organizationId: ORG_A }, 2)) batches.push(batch.map((item) => item.sequence));
    expect(batches).toEqual([[1, 2], [3]]);
  });

  it('publishes AuditEventRecordedEvent in the same transaction when it has an outbox', async () => {
    const bus = createEventBus({ db, clock });
    const published = createAuditTrail({ store: createKnexAuditStore(db), clock, outbox: bus });
    published.register(Object.values(Actions));
    await expect(
      db.transaction(async (trx) => {
        await published.record(entry(ORG_A), trx);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow();
    expect(await db('core_outbox_events').where({ type: 'AuditEventRecordedEvent' })).toHaveLength(0);
    const [stored] = await db.transaction((trx) => published.record(entry(ORG_A), trx));
    const rows = await db('core_outbox_events').where({ type: 'AuditEventRecordedEvent' });
    expect(rows).toHaveLength(1);
    const payload = typeof rows[0].payload === 'string' ? JSON.parse(rows[0].payload) : rows[0].payload;
    expect(payload).toMatchObject({ id: stored?.id, organizationId: ORG_A, action: Actions.renamed.action, sequence: 1 });
    expect(payload).not.toHaveProperty('hash');
    await bus.stop();
  });

  describe('tamper evidence', () => {
    beforeEach(async () => {
      for (let index = 0; index < 5; index += 1) await record(entry(ORG_A, { metadata: { index } }));
      expect((await verifyAuditChain(db, ORG_A)).valid).toBe(true);
    });
    const idOf = async (seq: number) => (await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq }).first('id')).id as string;

    it('finds a row edited by hand', async () => {
      const id = await idOf(3);
      await db(AUDIT_EVENTS_TABLE).where({ id }).update({ actor_display: 'someone else' });
      expect(await verifyAuditChain(db, ORG_A)).toMatchObject({
        valid: false,
        checked: 2,
        broken: { sequence: 3, id, reason: 'edited' },
      });
    });

    it('finds metadata edited by hand', async () => {
      const id = await idOf(2);
      await db(AUDIT_EVENTS_TABLE).where({ id }).update({ metadata: '{"index":7}' });
      expect((await verifyAuditChain(db, ORG_A)).broken).toMatchObject({ sequence: 2, reason: 'edited' });
    });

    it('finds a row deleted by hand, in the middle, at the start and at the end', async () => {
      await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 4 }).delete();
      expect((await verifyAuditChain(db, ORG_A)).broken).toMatchObject({ sequence: 4, id: null, reason: 'missing' });
      await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 1 }).delete();
      expect((await verifyAuditChain(db, ORG_A)).broken).toMatchObject({ sequence: 1, reason: 'missing' });
    });

    it('finds the last row deleted by hand', async () => {
      await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 5 }).delete();
      expect((await verifyAuditChain(db, ORG_A)).broken).toMatchObject({ sequence: 5, reason: 'missing' });
    });

    it('finds rows reordered by hand, and a hash rewritten to match an edit', async () => {
      await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 2 }).update({ seq: 99 });
      await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 3 }).update({ seq: 2 });
      await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 99 }).update({ seq: 3 });
      expect((await verifyAuditChain(db, ORG_A)).broken).toMatchObject({ sequence: 2, reason: 'relinked' });
    });

    it('finds a record whose hash was recomputed after an edit (the next link breaks)', async () => {
      const [row] = await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 3 });
      const { auditRecordFromRow } = await import('../src/knex.js');
      const { hashAuditRecord } = await import('../src/audit/chain.js');
      const { hash: _hash, prevHash, ...fields } = auditRecordFromRow({ ...row, actor_display: 'forged' });
      await db(AUDIT_EVENTS_TABLE)
        .where({ id: row.id })
        .update({ actor_display: 'forged', hash: hashAuditRecord(fields, prevHash) });
      expect((await verifyAuditChain(db, ORG_A)).broken).toMatchObject({ sequence: 4, reason: 'relinked' });
    });

    it('reports progress per batch', async () => {
      const seen: number[] = [];
      await verifyAuditChain(db, ORG_A, { batchSize: 2, onProgress: (checked) => seen.push(checked) });
      expect(seen).toEqual([2, 4, 5]);
    });
  });

  it('prunes past the retention and still verifies, from the checkpoint', async () => {
    for (let index = 0; index < 4; index += 1) {
      await record(entry(ORG_A, { metadata: { index } }));
      clock.advance(10 * 86_400_000);
    }
    await record(entry(null));
    clock.advance(60_000);
    // Now: day 40 and a minute. Retention 30 days: records of day 0 and day 10 go (and the platform record stays).
    expect(await audit.prune()).toBe(2);
    expect((await audit.list({ organizationId: ORG_A }, { limit: 10 })).map((item) => item.sequence)).toEqual([4, 3]);
    expect(await verifyAuditChain(db, ORG_A)).toMatchObject({ valid: true, anchorSequence: 2, checked: 2, headSequence: 4 });
    expect(await audit.prune()).toBe(0);
    // The oldest kept record deleted by hand is still found: the checkpoint says where the chain resumes.
    await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A, seq: 3 }).delete();
    expect((await verifyAuditChain(db, ORG_A)).broken).toMatchObject({ sequence: 3, reason: 'missing' });
  });

  it('verifies an empty chain', async () => {
    expect(await verifyAuditChain(db, ORG_B)).toMatchObject({ valid: true, checked: 0, headSequence: 0 });
  });

  it.runIf(dialect === 'postgres')('serializes concurrent writers of one chain (a chain head locked FOR UPDATE)', async () => {
    const second = createDatabase(database.url);
    try {
      const trails = [db, second].map((pool) => {
        const trail = createAuditTrail({ store: createKnexAuditStore(pool), clock });
        trail.register(Object.values(Actions));
        return { pool, trail };
      });
      await Promise.all(
        Array.from({ length: 40 }, (_, index) => {
          const { pool, trail } = trails[index % 2] as (typeof trails)[number];
          return pool.transaction(async (trx) => {
            await trail.record([entry(ORG_A, { metadata: { index } }), entry(index % 3 === 0 ? ORG_B : ORG_A)], trx);
          });
        }),
      );
      const rows = await db(AUDIT_EVENTS_TABLE).where({ chain: ORG_A }).orderBy('seq').select('seq');
      expect(rows.map((row) => Number(row.seq))).toEqual(Array.from({ length: rows.length }, (_, index) => index + 1));
      expect(await verifyAuditChain(db, ORG_A)).toMatchObject({ valid: true, checked: rows.length });
      expect((await verifyAuditChain(db, ORG_B)).valid).toBe(true);
    } finally {
      await second.destroy();
    }
  });
});
