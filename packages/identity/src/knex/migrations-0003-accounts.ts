import type { Migration } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/**
 * - `identity_invitations`: invitations to join an organization. The link
 *   token is derived from the id by HMAC, so no token is stored.
 * - `identity_memberships`: when a membership was requested (enrollment
 *   under `approval_required`) and who decided on it.
 */
export const accountsMigration: Migration = {
  name: '0003_accounts',
  async up(db) {
    await db.schema.createTable('identity_invitations', (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('email', 254).notNullable();
      t.text('roles').notNullable();
      t.string('status', 16).notNullable();
      t.string('invited_by_user_id', 36).references('id').inTable('identity_users').onDelete('SET NULL');
      t.string('accepted_by_user_id', 36).references('id').inTable('identity_users').onDelete('SET NULL');
      timestampColumn(t, 'expires_at').notNullable();
      timestampColumn(t, 'accepted_at');
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.index(['organization_id', 'created_at']);
      t.index(['organization_id', 'email']);
    });
    await db.schema.alterTable('identity_memberships', (t) => {
      timestampColumn(t, 'requested_at');
      t.string('decided_by_user_id', 36);
      timestampColumn(t, 'decided_at');
      t.index(['organization_id', 'status']);
    });
  },
  async down(db) {
    await db.schema.alterTable('identity_memberships', (t) => {
      t.dropIndex(['organization_id', 'status']);
      t.dropColumn('decided_at');
      t.dropColumn('decided_by_user_id');
      t.dropColumn('requested_at');
    });
    await db.schema.dropTableIfExists('identity_invitations');
  },
};
