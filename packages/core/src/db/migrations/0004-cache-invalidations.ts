import type { Migration } from '../migrations.js';

/**
 * `core_cache_invalidations`: cache evictions for processes that share a
 * SQLite file (a server and the `idt` CLI), which have no LISTEN/NOTIFY.
 * Rows live for minutes; Postgres deployments do not use the table.
 */
export const cacheInvalidationsMigration: Migration = {
  name: '0004_cache_invalidations',
  async up(db) {
    await db.schema.createTable('core_cache_invalidations', (t) => {
      t.increments('id').primary();
      t.string('origin', 64).notNullable();
      t.string('namespace', 100).notNullable();
      t.string('key', 400).notNullable();
      t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
      t.index(['created_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists('core_cache_invalidations');
  },
};
