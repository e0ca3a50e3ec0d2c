import { isUniqueViolation } from '@idt/core';
import type { Knex } from 'knex';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { UserDeactivatedEvent, UserReactivatedEvent, UserRegisteredEvent } from '../accounts/events.js';
import type { UsersStore } from '../users/store.js';
import { writeRevocation } from './access-store.js';
import { countOf, type KnexAccountsStoreOptions, paged, USER_COLUMNS, userFromRow } from './accounts-shared.js';

/**
 * The knex {@link UsersStore}: every write, its events and its cache
 * evictions happen in one transaction.
 *
 * @example
 * const users = createKnexUsersStore({ db, outbox: bus, invalidator });
 */
export function createKnexUsersStore(options: KnexAccountsStoreOptions): UsersStore {
  const { db, outbox, invalidator } = options;

  const find = async (userId: string) => {
    const row = await db('identity_users as u')
      .where('u.id', userId)
      .first(...USER_COLUMNS);
    return row ? userFromRow(row) : undefined;
  };

  const inOrganization = (executor: Knex, organizationId: string) =>
    executor('identity_users as u')
      .join('identity_memberships as m', 'm.user_id', 'u.id')
      .where('m.organization_id', organizationId);

  return {
    async register(user) {
      try {
        await db.transaction(async (trx) => {
          await trx('identity_users').insert({
            id: user.id,
            email: user.email,
            username: user.email,
            first_name: user.firstName,
            last_name: user.lastName,
            password_hash: user.passwordHash,
            status: 'active',
            email_verified: false,
            created_at: user.createdAt,
            updated_at: user.createdAt,
          });
          await outbox.write(trx, [{ event: UserRegisteredEvent, payload: { userId: user.id, email: user.email } }]);
        });
        return 'created';
      } catch (error) {
        if (isUniqueViolation(error)) return 'email-taken';
        throw error;
      }
    },

    find,

    async updateProfile(userId, patch, at) {
      const changes: Record<string, string> = {};
      if (patch.firstName !== undefined) changes.first_name = patch.firstName;
      if (patch.lastName !== undefined) changes.last_name = patch.lastName;
      if (Object.keys(changes).length === 0) return find(userId);
      const updated = await db.transaction(async (trx) => {
        const count = await trx('identity_users')
          .where({ id: userId })
          .update({ ...changes, updated_at: at });
        if (count > 0) await invalidator.invalidate(CacheNamespaces.users, userId, trx);
        return count;
      });
      return updated > 0 ? find(userId) : undefined;
    },

    async listInOrganization(organizationId, page) {
      const [totalCount, rows] = await Promise.all([
        countOf(inOrganization(db, organizationId)),
        paged(inOrganization(db, organizationId).orderBy([{ column: 'm.created_at' }, { column: 'm.id' }]), page).select(
          ...USER_COLUMNS,
        ),
      ]);
      return { totalCount, items: rows.map(userFromRow) };
    },

    async findInOrganization(organizationId, userId) {
      const row = await inOrganization(db, organizationId)
        .where('u.id', userId)
        .first(...USER_COLUMNS);
      return row ? userFromRow(row) : undefined;
    },

    deactivate: (userId, at, byUserId) =>
      db.transaction(async (trx) => {
        const updated = await trx('identity_users')
          .where({ id: userId, status: 'active' })
          .update({ status: 'deactivated', updated_at: at });
        if (updated === 0) return false;
        await writeRevocation(trx, 'user', userId, new Date(at));
        await invalidator.invalidate(CacheNamespaces.users, userId, trx);
        await invalidator.invalidate(CacheNamespaces.revocations, `user:${userId}`, trx);
        await outbox.write(trx, [
          { event: UserDeactivatedEvent, payload: { userId, deactivatedAt: at, deactivatedByUserId: byUserId } },
        ]);
        return true;
      }),

    reactivate: (userId, at, byUserId) =>
      db.transaction(async (trx) => {
        const updated = await trx('identity_users')
          .where({ id: userId, status: 'deactivated' })
          .update({ status: 'active', updated_at: at });
        if (updated === 0) return false;
        await invalidator.invalidate(CacheNamespaces.users, userId, trx);
        await outbox.write(trx, [
          { event: UserReactivatedEvent, payload: { userId, reactivatedAt: at, reactivatedByUserId: byUserId } },
        ]);
        return true;
      }),
  };
}
