import { type Clock, createTtlCache, isUniqueViolation } from '@idt/core';
import { evictFrom, knexEffects, selectRows } from '@idt/core/knex';
import type { Knex } from 'knex';
import { CacheNamespaces, type CacheSubscriber } from '../access/cache-namespaces.js';
import type { UserRecord } from '../accounts/records.js';
import type { UsersStore, UsersWrites } from '../users/store.js';
import { writeRevocation } from './access-store.js';
import { type KnexAccountsStoreOptions, USER_COLUMNS, userFromRow } from './accounts-shared.js';

/**
 * The statements of `listInOrganization`, written once: the same SQL on both
 * engines (knex numbers the `?` for PostgreSQL). Each reads a page of the
 * organization's memberships in the order of the index (organization_id,
 * created_at, id): the member's user id, the membership's sort key, and the
 * organization's member count (kept by the triggers of 0005_member_counts) as
 * a constant column that saves a second round trip. The users themselves
 * come from the cache `find` uses, or from one read of the missing ones.
 */
const MEMBERS_COLUMNS =
  'm.user_id, m.created_at, m.id, (select members from identity_organization_counts where organization_id = ?) as total_members';
const MEMBERS_ORDER = 'order by m.created_at asc, m.id asc';
const MEMBERS_SQL = {
  /** From the start: `[org, org, limit]`. */
  first: `select ${MEMBERS_COLUMNS} from identity_memberships as m where m.organization_id = ? ${MEMBERS_ORDER} limit ?`,
  /**
   * After a cursor's key, `[org, org, createdAt, id, limit]`: a row-value comparison, which both engines
   * turn into a range of the index (an OR of the two columns would filter every row before the cursor).
   */
  after: `select ${MEMBERS_COLUMNS} from identity_memberships as m where m.organization_id = ? and (m.created_at, m.id) > (?, ?) ${MEMBERS_ORDER} limit ?`,
  /** Page N by offset, `[org, org, limit, offset]`: the offset is skipped on the index alone (a subquery of ids). */
  skip: `select ${MEMBERS_COLUMNS} from identity_memberships as m where m.id in (select id from identity_memberships where organization_id = ? ${MEMBERS_ORDER.replaceAll('m.', '')} limit ? offset ?) ${MEMBERS_ORDER}`,
} as const;

/**
 * The knex {@link UsersStore}. Its transaction forgets this instance's
 * cached copy of every user its primitives wrote, once it ends.
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
  const { db } = options;

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
  /** Users by id, in that order, `undefined` for an unknown one: what the cache lacks is read in one statement. */
  const loadMany = async (userIds: readonly string[]) => {
    const rows = await db('identity_users as u')
      .whereIn('u.id', [...new Set(userIds)])
      .select(...USER_COLUMNS);
    return new Map(rows.map((row) => [String(row.id), Object.freeze(userFromRow(row))] as const));
  };
  const findMany = async (userIds: readonly string[]): Promise<Array<UserRecord | undefined>> => {
    if (userIds.length === 0) return [];
    if (cache) return cache.getOrLoadMany(userIds, loadMany);
    const loaded = await loadMany(userIds);
    return userIds.map((userId) => loaded.get(userId));
  };
  /** Drops this instance's copy at once after a write (the invalidation reaches every instance after commit). */
  const forget = (userId: string) => cache?.delete(userId);

  /** The {@link UsersWrites} primitives over one transaction; `written` collects the users they changed. */
  const usersWrites = (trx: Knex.Transaction, written: Set<string>): UsersWrites => ({
    async insert(user) {
      try {
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
        return true;
      } catch (error) {
        if (isUniqueViolation(error)) return false;
        throw error;
      }
    },
    async updateProfile(userId, patch, at) {
      const changes: Record<string, string> = {};
      if (patch.firstName !== undefined) changes.first_name = patch.firstName;
      if (patch.lastName !== undefined) changes.last_name = patch.lastName;
      written.add(userId);
      const count = await trx('identity_users')
        .where({ id: userId })
        .update({ ...changes, updated_at: at });
      return count > 0;
    },
    async deactivate(userId, at) {
      written.add(userId);
      const updated = await trx('identity_users')
        .where({ id: userId, status: 'active' })
        .update({ status: 'deactivated', updated_at: at });
      if (updated === 0) return false;
      await writeRevocation(trx, 'user', userId, new Date(at));
      return true;
    },
    async reactivate(userId, at) {
      written.add(userId);
      const updated = await trx('identity_users')
        .where({ id: userId, status: 'deactivated' })
        .update({ status: 'active', updated_at: at });
      return updated > 0;
    },
  });

  const inOrganization = (executor: Knex, organizationId: string) =>
    executor('identity_users as u')
      .join('identity_memberships as m', 'm.user_id', 'u.id')
      .where('m.organization_id', organizationId);

  return {
    /** Runs the transaction, then forgets this instance's copy of every user it wrote (committed or not). */
    async transaction(work) {
      const written = new Set<string>();
      try {
        return await db.transaction((trx) => work({ ...usersWrites(trx, written), ...knexEffects(options, trx) }));
      } finally {
        for (const userId of written) forget(userId);
      }
    },

    find: findCached,
    findMany,

    async listInOrganization(organizationId, page) {
      const limit = page.pageSize + 1;
      let rows: unknown[][];
      if (page.cursor) {
        const [createdAt = '', membershipId = ''] = page.cursor.after;
        rows = await selectRows(db, MEMBERS_SQL.after, [organizationId, organizationId, createdAt, membershipId, limit]);
      } else if (page.page === 1) {
        rows = await selectRows(db, MEMBERS_SQL.first, [organizationId, organizationId, limit]);
      } else {
        rows = await selectRows(db, MEMBERS_SQL.skip, [organizationId, organizationId, limit, (page.page - 1) * page.pageSize]);
      }
      // An empty page (past the end) reads the count on its own.
      const total = rows.length
        ? rows[0]?.[3]
        : (await db('identity_organization_counts').where('organization_id', organizationId).first('members'))?.members;
      const more = rows.length > page.pageSize;
      const members = more ? rows.slice(0, page.pageSize) : rows;
      const users = await findMany(members.map((row) => String(row[0])));
      const last = members.at(-1);
      return {
        totalCount: Number(total ?? 0),
        // A user deleted since the memberships were read (their memberships went with them) is left out.
        items: users.filter((user): user is UserRecord => user !== undefined),
        ...(more && last ? { next: [toSortKey(last[1]), String(last[2])] } : {}),
      };
    },

    async findInOrganization(organizationId, userId) {
      const row = await inOrganization(db, organizationId)
        .where('u.id', userId)
        .first(...USER_COLUMNS);
      return row ? userFromRow(row) : undefined;
    },
  };
}

/** A timestamp as the cursor keeps it: SQLite's stored text as is, Postgres' `Date` as ISO 8601 (exact to the millisecond it stores). */
function toSortKey(value: unknown): string {
  return value instanceof Date ? value.toISOString() : String(value);
}
