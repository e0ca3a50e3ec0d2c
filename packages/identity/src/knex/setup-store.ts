import type { AuditTrail } from '@idt/core';
import type { Knex } from 'knex';
import type { FirstAdministrator, SetupStore } from '../setup/store.js';

/** Roles whose active membership counts as an administrator for setup mode. */
const ADMIN_ROLES = ['owner', 'admin'];

async function hasAdministrator(db: Knex | Knex.Transaction): Promise<boolean> {
  const row = await db('identity_memberships as m')
    .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
    .join('identity_users as u', 'u.id', 'm.user_id')
    .join('identity_organizations as o', 'o.id', 'm.organization_id')
    .where('m.status', 'active')
    .andWhere('u.status', 'active')
    .andWhere('o.status', 'active')
    .whereIn('r.role', ADMIN_ROLES)
    .first(db.raw('1 as found'));
  return row !== undefined;
}

/** Options of {@link createKnexSetupStore}. */
export interface KnexSetupStoreOptions {
  /** Records the bootstrap's audit entries in its transaction (`ctx.audit`); without it nothing is recorded. */
  readonly audit?: Pick<AuditTrail, 'record'>;
}

/**
 * The knex implementation of {@link SetupStore}. The bootstrap updates the
 * singleton `identity_setup_lock` row first, which serializes concurrent
 * bootstraps on Postgres (row lock) and SQLite (write lock).
 */
export function createKnexSetupStore(db: Knex, options: KnexSetupStoreOptions = {}): SetupStore {
  return {
    hasAdministrator: () => hasAdministrator(db),
    createFirstAdministrator: (admin: FirstAdministrator, audit = []) =>
      db.transaction(async (trx) => {
        await trx('identity_setup_lock').where({ id: 1 }).update({ locked_at: admin.createdAt });
        if (await hasAdministrator(trx)) return 'already-complete' as const;
        await trx('identity_users').insert({
          id: admin.user.id,
          email: admin.user.email,
          username: admin.user.email,
          first_name: admin.user.firstName,
          last_name: admin.user.lastName,
          password_hash: admin.user.passwordHash,
          status: 'active',
          email_verified: false,
          created_at: admin.createdAt,
          updated_at: admin.createdAt,
        });
        await trx('identity_organizations').insert({
          id: admin.organization.id,
          name: admin.organization.name,
          slug: admin.organization.slug,
          enrollment_policy: 'invitation_only',
          status: 'active',
          is_platform: true,
          created_by_user_id: admin.user.id,
          created_at: admin.createdAt,
          updated_at: admin.createdAt,
        });
        await trx('identity_memberships').insert({
          id: admin.membershipId,
          organization_id: admin.organization.id,
          user_id: admin.user.id,
          status: 'active',
          created_at: admin.createdAt,
          updated_at: admin.createdAt,
        });
        await trx('identity_membership_roles').insert({ membership_id: admin.membershipId, role: 'owner' });
        if (audit.length > 0) await options.audit?.record(audit, trx);
        return 'created' as const;
      }),
  };
}
