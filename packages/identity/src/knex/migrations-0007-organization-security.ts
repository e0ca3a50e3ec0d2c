import type { Migration } from '@idt/core/knex';

/**
 * An organization's account-security policy: `require_mfa` (a member needs a
 * second factor before a token for the organization is issued) and
 * `require_verified_email` (a member needs a verified address to sign in to
 * it). Both off for existing organizations.
 */
export const organizationSecurityMigration: Migration = {
  name: '0007_organization_security',
  async up(db) {
    await db.schema.alterTable('identity_organizations', (t) => {
      t.boolean('require_mfa').notNullable().defaultTo(false);
      t.boolean('require_verified_email').notNullable().defaultTo(false);
    });
  },
  async down(db) {
    await db.schema.alterTable('identity_organizations', (t) => {
      t.dropColumn('require_verified_email');
      t.dropColumn('require_mfa');
    });
  },
};
