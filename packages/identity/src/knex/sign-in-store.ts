import { type Clock, createTtlCache, type TtlCache } from '@idt/core';
import { evictFrom, selectRows } from '@idt/core/knex';
import type { Knex } from 'knex';
import { CacheNamespaces, type CacheSubscriber } from '../access/cache-namespaces.js';
import type { SignInStore } from '../sign-in/service.js';

/** Options of {@link createKnexSignInStore}. */
export interface KnexSignInStoreOptions {
  /**
   * Keeps the active users and memberships that token claims are built from
   * (every code exchange and refresh reads them) in memory, evicted by the
   * `identity.users` and `identity.memberships` invalidations every write
   * publishes; without it every claim reads the database.
   */
  readonly cache?: { readonly subscribe: CacheSubscriber; readonly ttlMs?: number; readonly clock?: Clock };
}

/** The knex {@link SignInStore}. */
export function createKnexSignInStore(db: Knex, options: KnexSignInStoreOptions = {}): SignInStore {
  const store = createUncachedSignInStore(db);
  const cache = options.cache;
  if (!cache) return store;
  const ttl = { ttlMs: cache.ttlMs ?? 30_000, ...(cache.clock ? { clock: cache.clock } : {}) };
  type ActiveUser = Awaited<ReturnType<SignInStore['findActiveUser']>>;
  type Membership = Awaited<ReturnType<SignInStore['findMembership']>>;
  const users = createTtlCache<ActiveUser>(ttl);
  const memberships = createTtlCache<Membership>(ttl);
  cache.subscribe(CacheNamespaces.users, evictFrom(users));
  cache.subscribe(CacheNamespaces.memberships, evictFrom(memberships));
  /** A cached lookup (frozen: callers share it); a miss (no such active user or membership) is not kept. */
  const cached = <T extends object | undefined>(entries: TtlCache<T>, key: string, load: () => Promise<T>): Promise<T> =>
    entries.getOrLoad(key, async () => {
      const loaded = await load();
      return (loaded ? Object.freeze(loaded) : loaded) as T;
    });
  return {
    ...store,
    findActiveUser: (userId) => cached(users, userId, () => store.findActiveUser(userId)),
    findMembership: (userId, organizationId) =>
      cached(memberships, `${userId}:${organizationId}`, () => store.findMembership(userId, organizationId)),
  };
}

/** The password check's user read (every sign-in), written once (see `selectRows`). */
const FIND_PASSWORD_USER_SQL =
  "select id, password_hash from identity_users where email = ? and status = 'active' and password_hash is not null limit 1";

function createUncachedSignInStore(db: Knex): SignInStore {
  return {
    async findPasswordUser(email) {
      const [row] = await selectRows(db, FIND_PASSWORD_USER_SQL, [email]);
      return row ? { id: String(row[0]), passwordHash: String(row[1]) } : undefined;
    },
    async findActiveUser(userId) {
      const row = await db('identity_users')
        .where({ id: userId, status: 'active' })
        .first('id', 'email', 'email_verified', 'first_name', 'last_name');
      return row
        ? {
            id: row.id,
            email: row.email,
            emailVerified: Boolean(row.email_verified),
            firstName: row.first_name,
            lastName: row.last_name,
          }
        : undefined;
    },
    async findMembership(userId, organizationId) {
      const row = await db('identity_memberships as m')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .where({ 'm.user_id': userId, 'm.organization_id': organizationId })
        .first('m.id', 'm.status', 'o.name', 'o.status as organization_status');
      if (!row) return undefined;
      const roles = (await db('identity_membership_roles').where({ membership_id: row.id }).pluck('role')) as string[];
      return { status: row.status, roles, organizationName: row.name, organizationStatus: row.organization_status };
    },
    async activeOrganizations(userId) {
      const rows = await db('identity_memberships as m')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .where({ 'm.user_id': userId, 'm.status': 'active', 'o.status': 'active' })
        .orderBy('o.name')
        .select('o.id', 'o.name');
      return rows.map((row: { id: string; name: string }) => ({ id: row.id, name: row.name }));
    },
    async findOrganization(organizationId) {
      const row = await db('identity_organizations')
        .where({ id: organizationId })
        .first('id', 'name', 'slug', 'status', 'is_platform');
      return row
        ? { id: row.id, name: row.name, slug: row.slug, status: row.status, isPlatform: Boolean(row.is_platform) }
        : undefined;
    },
  };
}
