import type { Migration } from '@idt/core/knex';

/**
 * The SCIM `Users` list of an organization counts its members without
 * reading them: `totalResults` is the trigger-kept member count
 * (`identity_organization_counts`, migration 0005) less the members SCIM
 * does not list, which are few: memberships `pending` or `denied` (the index
 * on `(organization_id, status)`), and users the directory deleted, whose
 * membership stays, suspended: `identity_scim_users_deleted_index`, a
 * partial index of those.
 */
export const scimCountsMigration: Migration = {
  name: '0013_scim_counts',
  async up(db) {
    await db.raw(
      'create index identity_scim_users_deleted_index on identity_scim_users (organization_id, user_id) where deleted_at is not null',
    );
  },
  async down(db) {
    await db.raw('drop index if exists identity_scim_users_deleted_index');
  },
};
