import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * `identity_passkeys`: the WebAuthn credentials of users (public key,
 * signature counter, backup flags, transports; the credential id unique
 * across users), and `identity_passkey_challenges`: the challenges handed to
 * browsers, kept only as their SHA-256, bound to an interaction (sign-in) or
 * a session (account), used once and valid 5 minutes.
 */
export const passkeysMigration: Migration = {
  name: '0011_passkeys',
  async up(db) {
    await db.schema.createTable('identity_passkeys', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      // base64url of at most 1,023 bytes (WebAuthn's limit on credential ids).
      t.string('credential_id', 1400).notNullable().unique();
      // base64url of the COSE public key.
      t.text('public_key').notNullable();
      t.bigInteger('counter').notNullable().defaultTo(0);
      t.string('transports', 200).notNullable().defaultTo('');
      t.string('device_type', 16).notNullable();
      t.boolean('backed_up').notNullable().defaultTo(false);
      t.string('aaguid', 36).notNullable();
      t.string('name', 64).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'last_used_at');
      t.index(['user_id']);
    });
    await db.schema.createTable('identity_passkey_challenges', (t) => {
      t.string('id', 36).primary();
      t.string('binding', 120).notNullable();
      t.string('purpose', 16).notNullable();
      t.string('user_id', 36).references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('challenge_hash', 64).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      t.index(['binding', 'purpose']);
      t.index(['expires_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists('identity_passkey_challenges');
    await db.schema.dropTableIfExists('identity_passkeys');
  },
};
