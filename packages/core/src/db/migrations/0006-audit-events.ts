import { timestampColumn } from '../columns.js';
import type { Migration } from '../migrations.js';

/** The audit records: one row per audited action, in its organization's hash chain. */
export const AUDIT_EVENTS_TABLE = 'core_audit_events';

/** One row per chain: its head (last sequence and hash) and where pruning left it. */
export const AUDIT_CHAINS_TABLE = 'core_audit_chains';

/**
 * Creates the audit trail: `core_audit_events` (the records; `chain` is the
 * organization id or `platform`, `seq` numbers a chain's records from 1
 * without gaps, `prev_hash`/`hash` link them) and `core_audit_chains`, whose
 * row per chain is the head writers lock (`FOR UPDATE` on Postgres) to
 * append in order, and the checkpoint pruning leaves (`pruned_seq`,
 * `pruned_hash`: the last removed record) for verification to start from.
 * The indexes serve the read filters, each within a chain by sequence.
 */
export const auditEventsMigration: Migration = {
  name: '0006_audit_events',
  async up(db) {
    await db.schema.createTable(AUDIT_CHAINS_TABLE, (t) => {
      t.string('chain', 36).primary();
      t.bigInteger('seq').notNullable().defaultTo(0);
      t.string('hash', 64).notNullable();
      t.bigInteger('pruned_seq').notNullable().defaultTo(0);
      t.string('pruned_hash', 64).notNullable();
    });
    await db.schema.createTable(AUDIT_EVENTS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('chain', 36).notNullable();
      t.bigInteger('seq').notNullable();
      timestampColumn(t, 'occurred_at').notNullable();
      t.string('organization_id', 36);
      t.string('actor_type', 16).notNullable();
      t.string('actor_id', 200);
      t.string('actor_display', 200);
      t.string('action', 200).notNullable();
      t.string('target_type', 64);
      t.string('target_id', 200);
      t.string('target_display', 200);
      t.string('outcome', 16).notNullable();
      t.string('ip', 64);
      t.string('user_agent', 512);
      t.string('trace_id', 64);
      t.text('metadata').notNullable();
      t.string('prev_hash', 64).notNullable();
      t.string('hash', 64).notNullable();
      t.unique(['chain', 'seq'], { indexName: 'core_audit_events_chain_seq_unique' });
      t.index(['chain', 'action', 'seq'], 'core_audit_events_action_idx');
      t.index(['chain', 'actor_id', 'seq'], 'core_audit_events_actor_idx');
      t.index(['chain', 'target_id', 'seq'], 'core_audit_events_target_idx');
      t.index(['chain', 'occurred_at'], 'core_audit_events_occurred_at_idx');
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(AUDIT_EVENTS_TABLE);
    await db.schema.dropTableIfExists(AUDIT_CHAINS_TABLE);
  },
};
