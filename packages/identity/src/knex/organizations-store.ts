import { knexUnitOfWork, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { MembershipStatus } from '../access/store.js';
import type { OrganizationsStore, OrganizationsWrites } from '../organizations/store.js';
import { type KnexAccountsStoreOptions, organizationFromRow, rolesOf } from './accounts-shared.js';

/** The first of `base`, `base-2`, `base-3`… that no organization uses. */
async function freeSlug(trx: Knex.Transaction, base: string): Promise<string> {
  const taken = new Set<string>(
    await trx('identity_organizations').where('slug', base).orWhere('slug', 'like', `${base}-%`).pluck('slug'),
  );
  if (!taken.has(base)) return base;
  for (let suffix = 2; ; suffix++) {
    const candidate = `${base}-${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** The {@link OrganizationsWrites} primitives over one transaction. */
function organizationsWrites(trx: Knex.Transaction): OrganizationsWrites {
  return {
    async insert(organization) {
      // A write first: on SQLite it takes the write lock before the slugs are read.
      await trx('identity_users')
        .where({ id: organization.ownerUserId })
        .update({ updated_at: trx.ref('updated_at') });
      const slug = await freeSlug(trx, organization.slug);
      const at = organization.createdAt;
      const row = {
        id: organization.id,
        name: organization.name,
        slug,
        enrollment_policy: organization.enrollmentPolicy,
        status: 'active',
        is_platform: false,
        created_at: at,
        updated_at: at,
      };
      await trx('identity_organizations').insert({ ...row, created_by_user_id: organization.ownerUserId });
      await trx('identity_memberships').insert({
        id: organization.membershipId,
        organization_id: organization.id,
        user_id: organization.ownerUserId,
        status: 'active',
        created_at: at,
        updated_at: at,
      });
      await trx('identity_membership_roles').insert({ membership_id: organization.membershipId, role: 'owner' });
      return organizationFromRow(row);
    },
    async update(organizationId, patch, at) {
      const changes: Record<string, string> = {};
      if (patch.name !== undefined) changes.name = patch.name;
      if (patch.enrollmentPolicy !== undefined) changes.enrollment_policy = patch.enrollmentPolicy;
      const count = await trx('identity_organizations')
        .where({ id: organizationId })
        .update({ ...changes, updated_at: at });
      return count > 0;
    },
  };
}

/**
 * The knex {@link OrganizationsStore}.
 *
 * @example
 * const organizations = createKnexOrganizationsStore({ db, outbox: bus, invalidator });
 */
export function createKnexOrganizationsStore(options: KnexAccountsStoreOptions): OrganizationsStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, organizationsWrites),

    async find(organizationId) {
      const row = await db('identity_organizations').where({ id: organizationId }).first();
      return row ? organizationFromRow(row) : undefined;
    },

    async listForUser(userId) {
      const rows = await db('identity_memberships as m')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .where('m.user_id', userId)
        .orderBy([{ column: 'm.created_at' }, { column: 'm.id' }])
        .select(
          'm.id as membership_id',
          'm.status as membership_status',
          'm.created_at as membership_created_at',
          'o.id',
          'o.name',
          'o.slug',
          'o.enrollment_policy',
          'o.status',
          'o.is_platform',
          'o.created_at',
          'o.updated_at',
        );
      const roles = await rolesOf(
        db,
        rows.map((row) => row.membership_id as string),
      );
      return rows.map((row) => {
        const { createdAt: _created, updatedAt: _updated, ...organization } = organizationFromRow(row);
        return {
          organization,
          membership: {
            status: row.membership_status as MembershipStatus,
            roles: roles.get(row.membership_id) ?? [],
            createdAt: toIso(row.membership_created_at),
          },
        };
      });
    },
  };
}
