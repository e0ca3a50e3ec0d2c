import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * `identity_password_resets`: forgotten-password requests. The mailed link's
 * token is derived from the id with the server's MAC key and kept only as
 * its SHA-256 (`token_hash`); a reset is used once (`consumed_at`) and works
 * for an hour (`expires_at`).
 */
export const passwordResetMigration: Migration = {
  name: '0008_password_reset',
  async up(db) {
    await db.schema.createTable('identity_password_resets', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('token_hash', 64).notNullable().unique();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      timestampColumn(t, 'consumed_at');
      t.index(['user_id']);
      t.index(['expires_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists('identity_password_resets');
  },
};
