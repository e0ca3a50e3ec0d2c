import { type AuditTrail, type EventOutbox, isUniqueViolation } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { knexUnitOfWork } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { LocalMembership, LocalUser, ProvisioningStore, ProvisioningWrites } from '../sign-in/provisioning-store.js';
import { SSO_DOMAINS_TABLE, SSO_IDENTITIES_TABLE, SSO_SIGN_IN_OUTCOMES_TABLE } from './migrations.js';
import { outcomeRow } from './sign-in-store.js';

const flag = (value: unknown) => value === true || value === 1 || value === '1';

function userFromRow(row: Record<string, unknown>): LocalUser {
  return {
    id: String(row.id),
    email: String(row.email),
    emailVerified: flag(row.email_verified),
    status: row.status === 'active' ? 'active' : 'deactivated',
  };
}

const USER_COLUMNS = ['id', 'email', 'email_verified', 'status'] as const;

function provisioningWrites(trx: Knex.Transaction): ProvisioningWrites {
  return {
    async findIdentity(connectionId, subject) {
      const row = await trx(SSO_IDENTITIES_TABLE).where({ connection_id: connectionId, subject }).first('user_id');
      return row ? { userId: String(row.user_id) } : undefined;
    },
    async touchIdentity(connectionId, subject, email, at) {
      await trx(SSO_IDENTITIES_TABLE)
        .where({ connection_id: connectionId, subject })
        .update({ last_sign_in_at: at, ...(email ? { email } : {}) });
    },
    async linkIdentity(identity) {
      const inserted = await trx(SSO_IDENTITIES_TABLE)
        .insert({
          connection_id: identity.connectionId,
          subject: identity.subject,
          user_id: identity.userId,
          email: identity.email,
          created_at: identity.at,
          last_sign_in_at: identity.at,
        })
        .onConflict(['connection_id', 'subject'])
        .ignore()
        .returning('subject');
      return inserted.length > 0;
    },
    async findUser(userId) {
      const row = await trx('identity_users')
        .where({ id: userId })
        .first(...USER_COLUMNS);
      return row ? userFromRow(row) : undefined;
    },
    async findUserByEmail(email) {
      const row = await trx('identity_users')
        .where({ email })
        .first(...USER_COLUMNS);
      return row ? userFromRow(row) : undefined;
    },
    async insertUser(user) {
      // A savepoint: a unique violation must not abort the surrounding PostgreSQL transaction.
      try {
        await trx.transaction(async (inner) => {
          await inner('identity_users').insert({
            id: user.id,
            email: user.email,
            username: user.email,
            first_name: user.firstName,
            last_name: user.lastName,
            password_hash: null,
            status: 'active',
            email_verified: user.emailVerified,
            created_at: user.at,
            updated_at: user.at,
          });
        });
        return true;
      } catch (error) {
        if (isUniqueViolation(error)) return false;
        throw error;
      }
    },
    async isDomainVerifiedBy(domain, organizationId) {
      const row = await trx(SSO_DOMAINS_TABLE)
        .where({ domain, organization_id: organizationId })
        .whereNotNull('verified_at')
        .first(trx.raw('1 as found'));
      return row !== undefined;
    },
    async lockOrganization(organizationId) {
      const updated = await trx('identity_organizations')
        .where({ id: organizationId })
        .update({ updated_at: trx.ref('updated_at') });
      if (updated === 0) return undefined;
      const row = await trx('identity_organizations').where({ id: organizationId }).first('name', 'status');
      return row ? { name: String(row.name), status: String(row.status) } : undefined;
    },
    async membership(userId, organizationId) {
      const row = await trx('identity_memberships')
        .where({ user_id: userId, organization_id: organizationId })
        .first('id', 'status');
      if (!row) return undefined;
      const roles: Array<{ role: string }> = await trx('identity_membership_roles')
        .where({ membership_id: row.id })
        .orderBy('role')
        .select('role');
      return {
        id: String(row.id),
        status: String(row.status) as LocalMembership['status'],
        roles: roles.map((entry) => String(entry.role)),
      };
    },
    async insertMembership(membership) {
      await trx('identity_memberships').insert({
        id: membership.id,
        organization_id: membership.organizationId,
        user_id: membership.userId,
        status: 'active',
        created_at: membership.at,
        updated_at: membership.at,
      });
      if (membership.roles.length > 0) {
        await trx('identity_membership_roles').insert(membership.roles.map((role) => ({ membership_id: membership.id, role })));
      }
    },
    async updateMembership(id, status, roles, at) {
      await trx('identity_memberships').where({ id }).update({ status, updated_at: at });
      await trx('identity_membership_roles').where({ membership_id: id }).delete();
      if (roles.length > 0) await trx('identity_membership_roles').insert(roles.map((role) => ({ membership_id: id, role })));
    },
    async saveOutcome(handle, outcome) {
      await trx(SSO_SIGN_IN_OUTCOMES_TABLE).insert(outcomeRow(handle, outcome));
    },
  };
}

/**
 * The knex {@link ProvisioningStore}. It writes identity's tables
 * (`identity_users`, `identity_memberships`, `identity_membership_roles`)
 * directly, in the sign-in's one transaction, and evicts identity's caches
 * through the invalidator.
 *
 * @example
 * const store = createKnexProvisioningStore({ db, outbox: bus, invalidator });
 */
export function createKnexProvisioningStore(options: {
  db: Knex;
  outbox: EventOutbox;
  invalidator: Pick<CacheInvalidator, 'invalidateMany'>;
  /** Records the audit entries the service writes in each transaction (`ctx.audit`); none without it. */
  audit?: Pick<AuditTrail, 'record'>;
}): ProvisioningStore {
  return knexUnitOfWork(options, provisioningWrites);
}
