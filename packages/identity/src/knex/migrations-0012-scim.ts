import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * SCIM 2.0 provisioning per organization:
 * - `identity_scim_tokens`: bearer tokens of an organization's SCIM client,
 *   kept only as their SHA-256 (unique, so a token resolves by one lookup);
 * - `identity_scim_users`: the SCIM view of a membership (userName, externalId,
 *   names and the other attributes the directory sends), `owned` when this
 *   organization's SCIM created the user, `deleted_at` after a DELETE;
 * - `identity_scim_groups` and `identity_scim_group_members`: the directory's groups;
 * - `identity_scim_role_mappings`: which roles a group (by display name) grants.
 */
export const scimMigration: Migration = {
  name: '0012_scim',
  async up(db) {
    await db.schema.createTable('identity_scim_tokens', (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('name', 100).notNullable();
      t.string('prefix', 16).notNullable();
      t.string('token_hash', 64).notNullable().unique();
      t.string('created_by_user_id', 36).references('id').inTable('identity_users').onDelete('SET NULL');
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'last_used_at');
      timestampColumn(t, 'revoked_at');
      t.index(['organization_id']);
    });
    await db.schema.createTable('identity_scim_users', (t) => {
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('user_name', 254).notNullable();
      // Lowercase userName: SCIM compares it case-insensitively, and it is unique per organization.
      t.string('user_name_key', 254).notNullable();
      t.string('external_id', 254);
      t.string('given_name', 100);
      t.string('family_name', 100);
      t.text('attributes').notNullable().defaultTo('{}');
      t.boolean('owned').notNullable().defaultTo(false);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      timestampColumn(t, 'deleted_at');
      t.primary(['organization_id', 'user_id']);
      t.unique(['organization_id', 'user_name_key']);
      t.index(['organization_id', 'external_id']);
    });
    await db.schema.createTable('identity_scim_groups', (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('display_name', 200).notNullable();
      t.string('display_name_key', 200).notNullable();
      t.string('external_id', 254);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.unique(['organization_id', 'display_name_key']);
    });
    await db.schema.createTable('identity_scim_group_members', (t) => {
      t.string('group_id', 36).notNullable().references('id').inTable('identity_scim_groups').onDelete('CASCADE');
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.primary(['group_id', 'user_id']);
      t.index(['user_id']);
    });
    await db.schema.createTable('identity_scim_role_mappings', (t) => {
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('group_name_key', 200).notNullable();
      t.string('group_name', 200).notNullable();
      t.text('roles').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.primary(['organization_id', 'group_name_key']);
    });
  },
  async down(db) {
    for (const table of [
      'identity_scim_role_mappings',
      'identity_scim_group_members',
      'identity_scim_groups',
      'identity_scim_users',
      'identity_scim_tokens',
    ]) {
      await db.schema.dropTableIfExists(table);
    }
  },
};
