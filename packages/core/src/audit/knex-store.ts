import type { Knex } from 'knex';
import { dialectOf, toIso } from '../db/database.js';
import { AUDIT_CHAINS_TABLE, AUDIT_EVENTS_TABLE } from '../db/migrations/0006-audit-events.js';
import { canonicalJson, chainOf, GENESIS_HASH, hashAuditRecord, PLATFORM_CHAIN } from './chain.js';
import type { AuditActorType, AuditMetadata, AuditOutcome, AuditRecord } from './entry.js';
import type { AppendableAuditEntry, AuditChainState, AuditQuery, AuditStore } from './store.js';
import { type AuditChainVerification, type VerifyAuditChainOptions, verifyAuditStoreChain } from './verify.js';

/** A row of `core_audit_events`. */
export interface AuditEventRow {
  id: string;
  chain: string;
  seq: number | string;
  occurred_at: unknown;
  organization_id: string | null;
  actor_type: string;
  actor_id: string | null;
  actor_display: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  target_display: string | null;
  outcome: string;
  ip: string | null;
  user_agent: string | null;
  trace_id: string | null;
  metadata: string;
  prev_hash: string;
  hash: string;
}

interface ChainRow {
  chain: string;
  seq: number | string;
  hash: string;
  pruned_seq: number | string;
  pruned_hash: string;
}

/** A stored row as a record. */
export function auditRecordFromRow(row: AuditEventRow): AuditRecord {
  return {
    id: row.id,
    sequence: Number(row.seq),
    occurredAt: toIso(row.occurred_at),
    organizationId: row.organization_id,
    actor: { type: row.actor_type as AuditActorType, id: row.actor_id, display: row.actor_display },
    action: row.action,
    target: row.target_type === null ? null : { type: row.target_type, id: row.target_id, display: row.target_display },
    outcome: row.outcome as AuditOutcome,
    ip: row.ip,
    userAgent: row.user_agent,
    traceId: row.trace_id,
    metadata: JSON.parse(row.metadata) as AuditMetadata,
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

function rowOf(record: AuditRecord): AuditEventRow {
  return {
    id: record.id,
    chain: chainOf(record.organizationId),
    seq: record.sequence,
    occurred_at: record.occurredAt,
    organization_id: record.organizationId,
    actor_type: record.actor.type,
    actor_id: record.actor.id,
    actor_display: record.actor.display,
    action: record.action,
    target_type: record.target?.type ?? null,
    target_id: record.target?.id ?? null,
    target_display: record.target?.display ?? null,
    outcome: record.outcome,
    ip: record.ip,
    user_agent: record.userAgent,
    trace_id: record.traceId,
    metadata: canonicalJson(record.metadata),
    prev_hash: record.prevHash,
    hash: record.hash,
  };
}

function stateOf(row: ChainRow): AuditChainState {
  return {
    organizationId: row.chain === PLATFORM_CHAIN ? null : row.chain,
    sequence: Number(row.seq),
    hash: row.hash,
    prunedSequence: Number(row.pruned_seq),
    prunedHash: row.pruned_hash,
  };
}

/**
 * Locks a chain's head row for the rest of `trx` (creating it first when
 * the chain is new) and returns it. Postgres: `SELECT … FOR UPDATE`, so a
 * second writer of the chain waits until the first commits or rolls back.
 * SQLite: one writer at a time already.
 */
async function lockHead(trx: Knex.Transaction, chain: string, postgres: boolean): Promise<ChainRow> {
  const select = () => {
    const query = trx<ChainRow>(AUDIT_CHAINS_TABLE).where({ chain }).first();
    return postgres ? query.forUpdate() : query;
  };
  let head = await select();
  if (!head) {
    await trx(AUDIT_CHAINS_TABLE)
      .insert({ chain, seq: 0, hash: GENESIS_HASH, pruned_seq: 0, pruned_hash: GENESIS_HASH })
      .onConflict('chain')
      .ignore();
    head = await select();
  }
  if (!head) throw new Error(`The audit chain ${chain} could not be created`);
  return head;
}

/** Rows per insert statement (far below both engines' parameter limits). */
const INSERT_BATCH = 100;

function filtered(db: Knex, query: AuditQuery): Knex.QueryBuilder<AuditEventRow> {
  const builder = db<AuditEventRow>(AUDIT_EVENTS_TABLE).where('chain', chainOf(query.organizationId));
  if (query.action !== undefined) builder.andWhere('action', query.action);
  if (query.actorId !== undefined) builder.andWhere('actor_id', query.actorId);
  if (query.targetId !== undefined) builder.andWhere('target_id', query.targetId);
  if (query.outcome !== undefined) builder.andWhere('outcome', query.outcome);
  if (query.from !== undefined) builder.andWhere('occurred_at', '>=', query.from);
  if (query.to !== undefined) builder.andWhere('occurred_at', '<', query.to);
  return builder;
}

/**
 * The audit store on knex (SQLite and Postgres).
 *
 * @example
 * const store = createKnexAuditStore(db);
 * await db.transaction((trx) => store.append(trx, [entry]));
 */
export function createKnexAuditStore(db: Knex): AuditStore {
  const postgres = dialectOf(db) === 'postgres';
  return {
    async append(trx, entries) {
      if (entries.length === 0) return [];
      const byChain = new Map<string, AppendableAuditEntry[]>();
      for (const entry of entries) {
        const chain = chainOf(entry.organizationId);
        const list = byChain.get(chain);
        if (list) list.push(entry);
        else byChain.set(chain, [entry]);
      }
      const records = new Map<AppendableAuditEntry, AuditRecord>();
      // A fixed order: two transactions that each write two chains cannot wait on each other.
      for (const chain of [...byChain.keys()].sort()) {
        const head = await lockHead(trx, chain, postgres);
        let sequence = Number(head.seq);
        let prevHash = head.hash;
        const rows: AuditEventRow[] = [];
        for (const entry of byChain.get(chain) ?? []) {
          sequence += 1;
          const fields = {
            id: entry.id,
            sequence,
            occurredAt: entry.occurredAt,
            organizationId: entry.organizationId,
            actor: entry.actor,
            action: entry.action,
            target: entry.target,
            outcome: entry.outcome,
            ip: entry.ip,
            userAgent: entry.userAgent,
            traceId: entry.traceId,
            metadata: entry.metadata,
          };
          const hash = hashAuditRecord(fields, prevHash);
          const record: AuditRecord = { ...fields, prevHash, hash };
          records.set(entry, record);
          rows.push(rowOf(record));
          prevHash = hash;
        }
        for (let index = 0; index < rows.length; index += INSERT_BATCH) {
          await trx(AUDIT_EVENTS_TABLE).insert(rows.slice(index, index + INSERT_BATCH));
        }
        await trx(AUDIT_CHAINS_TABLE).where({ chain }).update({ seq: sequence, hash: prevHash });
      }
      return entries.map((entry) => records.get(entry) as AuditRecord);
    },

    async list(query, page) {
      const builder = filtered(db, query);
      if (page.beforeSequence !== undefined) builder.andWhere('seq', '<', page.beforeSequence);
      const rows = (await builder.orderBy('seq', 'desc').limit(page.limit)) as AuditEventRow[];
      return rows.map(auditRecordFromRow);
    },

    async listAscending(query, page) {
      const rows = (await filtered(db, query)
        .andWhere('seq', '>', page.afterSequence)
        .orderBy('seq', 'asc')
        .limit(page.limit)) as AuditEventRow[];
      return rows.map(auditRecordFromRow);
    },

    async chain(organizationId) {
      const row = await db<ChainRow>(AUDIT_CHAINS_TABLE)
        .where({ chain: chainOf(organizationId) })
        .first();
      return row ? stateOf(row) : undefined;
    },

    async chains() {
      const rows = await db<ChainRow>(AUDIT_CHAINS_TABLE).orderBy('chain').select('chain');
      return rows.map((row) => (row.chain === PLATFORM_CHAIN ? null : row.chain));
    },

    prune(organizationId, before, limit) {
      const chain = chainOf(organizationId);
      return db.transaction(async (trx) => {
        const head = await lockHead(trx, chain, postgres);
        const from = Number(head.pruned_seq);
        // The newest record to remove: among the next `limit`, the last that occurred before the cut.
        const last = await trx<AuditEventRow>(AUDIT_EVENTS_TABLE)
          .where('chain', chain)
          .andWhere('seq', '>', from)
          .andWhere('seq', '<=', from + limit)
          .andWhere('occurred_at', '<', before)
          .orderBy('seq', 'desc')
          .first('seq', 'hash');
        if (!last) return 0;
        const through = Number(last.seq);
        const removed = await trx(AUDIT_EVENTS_TABLE).where('chain', chain).andWhere('seq', '<=', through).delete();
        await trx(AUDIT_CHAINS_TABLE).where({ chain }).update({ pruned_seq: through, pruned_hash: last.hash });
        return Number(removed);
      });
    },
  };
}

/**
 * Walks an organization's audit chain (`null`: the platform chain) from its
 * pruning checkpoint to its head and names the first broken link: a record
 * edited, deleted or reordered by hand. See {@link verifyAuditStoreChain}.
 *
 * @example
 * const result = await verifyAuditChain(db, organizationId);
 * if (!result.valid) console.error(result.broken?.message);
 */
export function verifyAuditChain(
  db: Knex,
  organizationId: string | null,
  options: VerifyAuditChainOptions = {},
): Promise<AuditChainVerification> {
  return verifyAuditStoreChain(createKnexAuditStore(db), organizationId, options);
}
