import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * Second factors (TOTP and recovery codes) and recent authentication:
 *
 * - `identity_totp_enrolments`: TOTP secrets begun but not yet confirmed by a
 *   first code, sealed with the server secret (AES-256-GCM bound to the row
 *   id), working for 15 minutes (`expires_at`);
 * - `identity_totp_factors`: a user's confirmed TOTP (one per user), its
 *   sealed secret and the last time step a code was accepted for
 *   (`last_used_step`, so a code works once);
 * - `identity_recovery_codes`: recovery codes as HMAC-SHA-256 (`code_hash`),
 *   each used once (`used_at`);
 * - `identity_second_factor_locks`: misses of the second step per user
 *   (`failures` since `window_started_at`) and the lock they cause (`locked_until`);
 * - `identity_sessions.authenticated_at`: when the user last proved who they
 *   are in the session (sign-in or re-authentication), back-filled from
 *   `created_at`.
 */
export const secondFactorsMigration: Migration = {
  name: '0010_second_factors',
  async up(db) {
    await db.schema.createTable('identity_totp_enrolments', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.text('secret_sealed').notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      t.index(['user_id']);
      t.index(['expires_at']);
    });
    await db.schema.createTable('identity_totp_factors', (t) => {
      t.string('user_id', 36).primary().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('id', 36).notNullable().unique();
      t.text('secret_sealed').notNullable();
      t.bigInteger('last_used_step');
      timestampColumn(t, 'created_at').notNullable();
    });
    await db.schema.createTable('identity_recovery_codes', (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('code_hash', 64).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'used_at');
      t.unique(['user_id', 'code_hash']);
    });
    await db.schema.createTable('identity_second_factor_locks', (t) => {
      t.string('user_id', 36).primary().references('id').inTable('identity_users').onDelete('CASCADE');
      t.integer('failures').notNullable().defaultTo(0);
      timestampColumn(t, 'window_started_at').notNullable();
      timestampColumn(t, 'locked_until');
    });
    await db.schema.alterTable('identity_sessions', (t) => {
      timestampColumn(t, 'authenticated_at');
    });
    await db('identity_sessions').update({ authenticated_at: db.ref('created_at') });
  },
  async down(db) {
    await db.schema.alterTable('identity_sessions', (t) => {
      t.dropColumn('authenticated_at');
    });
    for (const table of [
      'identity_second_factor_locks',
      'identity_recovery_codes',
      'identity_totp_factors',
      'identity_totp_enrolments',
    ]) {
      await db.schema.dropTableIfExists(table);
    }
  },
};
