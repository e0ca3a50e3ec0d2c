import { type Clock, createTtlCache, isUniqueViolation } from '@idt/core';
import { evictFrom } from '@idt/core/knex';
import type { Knex } from 'knex';
import { CacheNamespaces, type CacheSubscriber } from '../access/cache-namespaces.js';
import { UserDeactivatedEvent, UserReactivatedEvent, UserRegisteredEvent } from '../accounts/events.js';
import type { UserRecord } from '../accounts/records.js';
import type { UsersStore } from '../users/store.js';
import { writeRevocation } from './access-store.js';
import { type KnexAccountsStoreOptions, USER_COLUMNS, userFromRow } from './accounts-shared.js';

/**
 * The knex {@link UsersStore}: every write, its events and its cache
 * evictions happen in one transaction.
 *
 * @example
 * const users = createKnexUsersStore({ db, outbox: bus, invalidator });
 */
export function createKnexUsersStore(
  options: KnexAccountsStoreOptions & {
    /**
     * Keeps users read by `find` (the profile behind `GET /users/me`) in memory, evicted by the
     * `identity.users` invalidations every write of a user's columns publishes; without it every
     * `find` reads the database.
     */
    readonly cache?: { readonly subscribe: CacheSubscriber; readonly ttlMs?: number; readonly clock?: Clock };
  },
): UsersStore {
  const { db, outbox, invalidator } = options;

  const find = async (userId: string) => {
    const row = await db('identity_users as u')
      .where('u.id', userId)
      .first(...USER_COLUMNS);
    return row ? userFromRow(row) : undefined;
  };

  const cache = options.cache
    ? createTtlCache<UserRecord | undefined>({
        ttlMs: options.cache.ttlMs ?? 30_000,
        ...(options.cache.clock ? { clock: options.cache.clock } : {}),
      })
    : undefined;
  if (cache) options.cache?.subscribe(CacheNamespaces.users, evictFrom(cache));
  /** `find` through the cache: a hit costs no database round trip; an unknown user is not kept. */
  const findCached = cache
    ? (userId: string) =>
        cache.getOrLoad(userId, async () => {
          const loaded = await find(userId);
          return loaded ? Object.freeze(loaded) : undefined;
        })
    : find;
  /** Drops this instance's copy at once after a write (the invalidation reaches every instance after commit). */
  const forget = (userId: string) => cache?.delete(userId);
  /** Runs a transaction that writes a user, then forgets this instance's copy of the user. */
  const afterWrite = async <T>(userId: string, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> => {
    try {
      return await db.transaction(work);
    } finally {
      forget(userId);
    }
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

    find: findCached,

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
      forget(userId);
      return updated > 0 ? find(userId) : undefined;
    },

    async listInOrganization(organizationId, page) {
      // Memberships are read from identity_memberships(organization_id, created_at, id) in index order
      // (no sort): from the cursor's key on, or from the start, joining each row's user as it comes; a
      // deep `page` skips its offset on the index alone (a subquery of ids) before joining. The total is
      // the per-organization count the triggers of 0005_member_counts keep: one primary-key read.
      // The total rides along as a constant column of the page (one statement, one round trip); an
      // empty page, past the end, reads it on its own.
      const total = db.raw('(select members from identity_organization_counts where organization_id = ?) as total_members', [
        organizationId,
      ]);
      const columns = [...USER_COLUMNS, 'm.created_at as membership_created_at', 'm.id as membership_id', total];
      const order = [{ column: 'm.created_at' }, { column: 'm.id' }];
      const offset = page.cursor ? 0 : (page.page - 1) * page.pageSize;
      let query: Knex.QueryBuilder;
      if (offset === 0) {
        query = db('identity_memberships as m')
          .join('identity_users as u', 'u.id', 'm.user_id')
          .where('m.organization_id', organizationId)
          .orderBy(order)
          .limit(page.pageSize + 1)
          .select(columns);
        if (page.cursor) {
          const [createdAt = '', membershipId = ''] = page.cursor.after;
          // A row-value comparison, which both engines turn into a range of the index (an OR of the two
          // columns would be a filter over every row before the cursor).
          query.andWhereRaw('(m.created_at, m.id) > (?, ?)', [createdAt, membershipId]);
        }
      } else {
        const ids = db('identity_memberships')
          .where('organization_id', organizationId)
          .orderBy([{ column: 'created_at' }, { column: 'id' }])
          .limit(page.pageSize + 1)
          .offset(offset)
          .select('id');
        query = db('identity_memberships as m')
          .join('identity_users as u', 'u.id', 'm.user_id')
          .whereIn('m.id', ids)
          .orderBy(order)
          .select(columns);
      }
      const rows: Array<Record<string, unknown>> = await query;
      const counted =
        rows.length > 0
          ? { members: rows[0]?.total_members }
          : await db('identity_organization_counts').where('organization_id', organizationId).first('members');
      const more = rows.length > page.pageSize;
      const items = more ? rows.slice(0, page.pageSize) : rows;
      const last = items.at(-1);
      return {
        totalCount: Number(counted?.members ?? 0),
        items: items.map(userFromRow),
        ...(more && last ? { next: [toSortKey(last.membership_created_at), String(last.membership_id)] } : {}),
      };
    },

    async findInOrganization(organizationId, userId) {
      const row = await inOrganization(db, organizationId)
        .where('u.id', userId)
        .first(...USER_COLUMNS);
      return row ? userFromRow(row) : undefined;
    },

    deactivate: (userId, at, byUserId) =>
      afterWrite(userId, async (trx) => {
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
      afterWrite(userId, async (trx) => {
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

/** A timestamp as the cursor keeps it: SQLite's stored text as is, Postgres' `Date` as ISO 8601 (exact to the millisecond it stores). */
function toSortKey(value: unknown): string {
  return value instanceof Date ? value.toISOString() : String(value);
}
