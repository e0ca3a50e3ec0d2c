import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * - `identity_token_revocations`: "tokens valid after" watermarks. A token
 *   whose `iat` is before the watermark of its user, client or session is
 *   refused, so revocation needs no per-token rows.
 * - `identity_roles`: custom roles of an organization (built-in roles live in code).
 */
export const accessMigration: Migration = {
  name: '0002_access',
  async up(db) {
    await db.schema.createTable('identity_token_revocations', (t) => {
      t.string('subject_type', 16).notNullable();
      t.string('subject_id', 200).notNullable();
      t.bigInteger('not_before').notNullable();
      timestampColumn(t, 'created_at').notNullable();
      t.primary(['subject_type', 'subject_id']);
    });
    await db.schema.createTable('identity_roles', (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('name', 64).notNullable();
      t.string('description', 500).notNullable().defaultTo('');
      t.text('permissions').notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.unique(['organization_id', 'name']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists('identity_roles');
    await db.schema.dropTableIfExists('identity_token_revocations');
  },
};
