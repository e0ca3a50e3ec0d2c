import { timestampColumn } from '../columns.js';
import type { Migration } from '../migrations.js';

/** The table of outbox events: one row per event, written in the transaction of the change that caused it. */
export const OUTBOX_EVENTS_TABLE = 'core_outbox_events';

/** The table of outbox deliveries: one row per (event, handler subscribed when the event was written). */
export const OUTBOX_DELIVERIES_TABLE = 'core_outbox_deliveries';

/**
 * Creates the durable event outbox: `core_outbox_events` (id, type, JSON
 * payload, occurrence time) and `core_outbox_deliveries`, one row per event
 * and subscribed handler that dispatchers claim under a lease
 * (`claimed_by`, `claimed_until`), retry with backoff (`attempts`,
 * `next_attempt_at`, `last_error`) and finally mark `delivered` or `dead`.
 */
export const outboxMigration: Migration = {
  name: '0001_outbox',
  async up(db) {
    await db.schema.createTable(OUTBOX_EVENTS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('type', 200).notNullable();
      t.text('payload').notNullable();
      timestampColumn(t, 'occurred_at').notNullable();
      t.index(['occurred_at'], 'core_outbox_events_occurred_at_idx');
    });
    await db.schema.createTable(OUTBOX_DELIVERIES_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('event_id', 36).notNullable().references('id').inTable(OUTBOX_EVENTS_TABLE).onDelete('CASCADE');
      t.string('handler', 200).notNullable();
      t.string('status', 16).notNullable().defaultTo('pending');
      t.integer('attempts').notNullable().defaultTo(0);
      timestampColumn(t, 'next_attempt_at').notNullable();
      t.string('claimed_by', 200);
      timestampColumn(t, 'claimed_until');
      timestampColumn(t, 'delivered_at');
      t.text('last_error');
      t.unique(['event_id', 'handler'], { indexName: 'core_outbox_deliveries_event_handler_unique' });
      t.index(['status', 'next_attempt_at'], 'core_outbox_deliveries_due_idx');
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(OUTBOX_DELIVERIES_TABLE);
    await db.schema.dropTableIfExists(OUTBOX_EVENTS_TABLE);
  },
};
