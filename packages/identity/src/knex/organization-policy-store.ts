import type { AuditTrail } from '@idt/core';
import { knexUnitOfWork } from '@idt/core/knex';
import type { Knex } from 'knex';
import { ADMIN_ROLES } from '../authorization/roles.js';
import type {
  OrganizationPolicyStore,
  OrganizationPolicyWrites,
  OrganizationSecurityPolicy,
} from '../organization-policy/store.js';
import type { KnexAccountsStoreOptions } from './accounts-shared.js';

const TABLE = 'identity_organizations';

function policyFromRow(row: { require_mfa: unknown; require_verified_email: unknown }): OrganizationSecurityPolicy {
  return { requireMfa: Boolean(row.require_mfa), requireVerifiedEmail: Boolean(row.require_verified_email) };
}

/** The {@link OrganizationPolicyWrites} primitives over one transaction. */
function organizationPolicyWrites(trx: Knex.Transaction): OrganizationPolicyWrites {
  return {
    async update(organizationId, patch, at) {
      const changes: Record<string, unknown> = { updated_at: at };
      if (patch.requireMfa !== undefined) changes.require_mfa = patch.requireMfa;
      if (patch.requireVerifiedEmail !== undefined) changes.require_verified_email = patch.requireVerifiedEmail;
      const count = await trx(TABLE).where({ id: organizationId }).update(changes);
      if (count === 0) return undefined;
      const row = await trx(TABLE).where({ id: organizationId }).first('require_mfa', 'require_verified_email');
      return row ? policyFromRow(row) : undefined;
    },
  };
}

/**
 * The knex {@link OrganizationPolicyStore}: the `require_mfa` and
 * `require_verified_email` columns of `identity_organizations` (migration 0007).
 *
 * @example
 * const store = createKnexOrganizationPolicyStore({ db, outbox: bus, invalidator, audit });
 */
export function createKnexOrganizationPolicyStore(
  options: KnexAccountsStoreOptions & { readonly audit?: Pick<AuditTrail, 'record'> },
): OrganizationPolicyStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, organizationPolicyWrites),
    async find(organizationId) {
      const row = await db(TABLE).where({ id: organizationId }).first('require_mfa', 'require_verified_email');
      return row ? policyFromRow(row) : undefined;
    },
    async anyMembershipRequiresMfa(userId) {
      const row = await db('identity_memberships as m')
        .join(`${TABLE} as o`, 'o.id', 'm.organization_id')
        .where({ 'm.user_id': userId, 'm.status': 'active', 'o.status': 'active', 'o.require_mfa': true })
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
    async isPlatformAdministrator(userId, organizationId) {
      const row = await db('identity_memberships as m')
        .join(`${TABLE} as o`, 'o.id', 'm.organization_id')
        .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .where({ 'm.user_id': userId, 'm.organization_id': organizationId, 'm.status': 'active', 'o.status': 'active' })
        .andWhere('o.is_platform', true)
        .whereIn('r.role', [...ADMIN_ROLES])
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
  };
}
