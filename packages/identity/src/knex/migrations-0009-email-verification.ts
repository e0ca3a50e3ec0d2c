import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * `identity_email_verifications`: links that verify a user's e-mail
 * address. The mailed link's token is derived from the id with the server's
 * MAC key and kept only as its SHA-256 (`token_hash`); a link is used once
 * (`consumed_at`), works for 24 hours (`expires_at`) and only while the
 * account still uses `email`.
 */
export const emailVerificationMigration: Migration = {
  name: '0009_email_verification',
  async up(db) {
    await db.schema.createTable('identity_email_verifications', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('email', 254).notNullable();
      t.string('token_hash', 64).notNullable().unique();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      timestampColumn(t, 'consumed_at');
      t.index(['user_id']);
      t.index(['expires_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists('identity_email_verifications');
  },
};
