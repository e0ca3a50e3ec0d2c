import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';
import { accessMigration } from './migrations-0002-access.js';
import { accountsMigration } from './migrations-0003-accounts.js';
import { credentialsMigration } from './migrations-0004-credentials.js';
import { memberCountsMigration } from './migrations-0005-member-counts.js';
import { activeSessionsMigration } from './migrations-0006-active-sessions.js';
import { organizationSecurityMigration } from './migrations-0007-organization-security.js';
import { passwordResetMigration } from './migrations-0008-password-reset.js';
import { emailVerificationMigration } from './migrations-0009-email-verification.js';
import { secondFactorsMigration } from './migrations-0010-second-factors.js';
import { passkeysMigration } from './migrations-0011-passkeys.js';
import { scimMigration } from './migrations-0012-scim.js';
import { scimCountsMigration } from './migrations-0013-scim-counts.js';

const accounts: Migration = {
  name: '0001_accounts',
  async up(db) {
    await db.schema.createTable('identity_users', (t) => {
      t.string('id', 36).primary();
      t.string('email', 254).notNullable().unique();
      t.string('username', 254).notNullable().unique();
      t.string('first_name', 100).notNullable();
      t.string('last_name', 100).notNullable();
      t.text('password_hash');
      t.string('status', 16).notNullable().defaultTo('active');
      t.boolean('email_verified').notNullable().defaultTo(false);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
    });
    await db.schema.createTable('identity_organizations', (t) => {
      t.string('id', 36).primary();
      t.string('name', 200).notNullable();
      t.string('slug', 200).notNullable().unique();
      t.string('enrollment_policy', 32).notNullable().defaultTo('invitation_only');
      t.string('status', 16).notNullable().defaultTo('active');
      t.boolean('is_platform').notNullable().defaultTo(false);
      t.string('created_by_user_id', 36).references('id').inTable('identity_users').onDelete('SET NULL');
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
    });
    await db.schema.createTable('identity_memberships', (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('status', 16).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.unique(['organization_id', 'user_id']);
      t.index(['user_id']);
    });
    await db.schema.createTable('identity_membership_roles', (t) => {
      t.string('membership_id', 36).notNullable().references('id').inTable('identity_memberships').onDelete('CASCADE');
      t.string('role', 64).notNullable();
      t.primary(['membership_id', 'role']);
    });
    await db.schema.createTable('identity_setup_lock', (t) => {
      t.integer('id').primary();
      timestampColumn(t, 'locked_at');
    });
    await db('identity_setup_lock').insert({ id: 1, locked_at: null });
  },
  async down(db) {
    for (const table of [
      'identity_setup_lock',
      'identity_membership_roles',
      'identity_memberships',
      'identity_organizations',
      'identity_users',
    ]) {
      await db.schema.dropTableIfExists(table);
    }
  },
};

/** The migrations of `@idt/identity`, recorded in `idt_identity_migrations`. */
export const identityMigrations: MigrationSet = {
  owner: '@idt/identity',
  tableName: 'idt_identity_migrations',
  dependsOn: ['@idt/core'],
  migrations: [
    accounts,
    accessMigration,
    accountsMigration,
    credentialsMigration,
    memberCountsMigration,
    activeSessionsMigration,
    organizationSecurityMigration,
    passwordResetMigration,
    emailVerificationMigration,
    secondFactorsMigration,
    passkeysMigration,
    scimMigration,
    scimCountsMigration,
  ],
};
