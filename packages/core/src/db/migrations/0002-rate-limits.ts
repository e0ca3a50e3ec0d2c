import type { Migration } from '../migrations.js';

/** The table of fixed-window rate-limit counters (see `createWindowCounter`). */
export const RATE_LIMIT_COUNTERS_TABLE = 'core_rate_limit_counters';

/**
 * Creates `core_rate_limit_counters`: one row per counted key with the count
 * of its current window, the window start and its expiry (epoch
 * milliseconds), indexed by expiry for pruning.
 */
export const rateLimitsMigration: Migration = {
  name: '0002_rate_limits',
  async up(db) {
    await db.schema.createTable(RATE_LIMIT_COUNTERS_TABLE, (t) => {
      t.string('key', 512).primary();
      t.integer('count').notNullable();
      t.bigInteger('window_started_at').notNullable();
      t.bigInteger('expires_at').notNullable();
      t.index(['expires_at'], 'core_rate_limit_counters_expires_at_idx');
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(RATE_LIMIT_COUNTERS_TABLE);
  },
};
