import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * The credentials tables:
 * - `identity_sessions`: sign-in sessions; the cookie value is kept only as its SHA-256 hash.
 * - `identity_api_keys`: API keys of a user in one organization; the key is kept only as its SHA-256 hash.
 * - `identity_email_changes`: the one pending e-mail change of a user (the link token is derived from the id).
 * - `identity_passwordless_requests`: magic links and one-time codes (codes only as an HMAC).
 */
export const credentialsMigration: Migration = {
  name: '0004_credentials',
  async up(db) {
    await db.schema.createTable('identity_sessions', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('token_hash', 64).notNullable().unique();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'last_activity_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      timestampColumn(t, 'revoked_at');
      t.string('revoked_reason', 32);
      t.string('ip_address', 64);
      t.string('user_agent', 512);
      t.string('amr', 200).notNullable().defaultTo('[]');
      t.index(['user_id', 'created_at']);
      t.index(['expires_at']);
    });
    await db.schema.createTable('identity_api_keys', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('name', 100).notNullable();
      t.string('prefix', 16).notNullable();
      t.string('key_hash', 64).notNullable().unique();
      t.text('scopes').notNullable();
      timestampColumn(t, 'expires_at');
      timestampColumn(t, 'last_used_at');
      timestampColumn(t, 'revoked_at');
      timestampColumn(t, 'created_at').notNullable();
      t.index(['user_id', 'organization_id']);
    });
    await db.schema.createTable('identity_email_changes', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().unique().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('new_email', 254).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      timestampColumn(t, 'consumed_at');
    });
    await db.schema.createTable('identity_passwordless_requests', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('kind', 8).notNullable();
      t.string('code_hash', 64);
      t.string('return_to', 2000);
      t.integer('attempts').notNullable().defaultTo(0);
      timestampColumn(t, 'expires_at').notNullable();
      timestampColumn(t, 'consumed_at');
      timestampColumn(t, 'created_at').notNullable();
      t.index(['user_id', 'kind']);
      t.index(['expires_at']);
    });
  },
  async down(db) {
    for (const table of ['identity_passwordless_requests', 'identity_email_changes', 'identity_api_keys', 'identity_sessions']) {
      await db.schema.dropTableIfExists(table);
    }
  },
};
