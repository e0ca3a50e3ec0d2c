import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { ApiKeyStore, ApiKeyWrites, StoredApiKey } from '../api-keys/store.js';
import { ADMIN_ROLES } from '../authorization/roles.js';
import { type KnexCredentialStoreOptions, lockUser } from './credential-store-deps.js';

const TABLE = 'identity_api_keys';
const COLUMNS = [
  'id',
  'user_id',
  'organization_id',
  'name',
  'prefix',
  'scopes',
  'expires_at',
  'last_used_at',
  'revoked_at',
  'created_at',
] as const;

interface ApiKeyRow {
  id: string;
  user_id: string;
  organization_id: string;
  name: string;
  prefix: string;
  scopes: string;
  expires_at: unknown;
  last_used_at: unknown;
  revoked_at: unknown;
  created_at: unknown;
}

function fromRow(row: ApiKeyRow): StoredApiKey {
  return {
    id: row.id,
    userId: row.user_id,
    organizationId: row.organization_id,
    name: row.name,
    prefix: row.prefix,
    scopes: JSON.parse(row.scopes) as string[],
    expiresAt: toIsoOrNull(row.expires_at),
    lastUsedAt: toIsoOrNull(row.last_used_at),
    revokedAt: toIsoOrNull(row.revoked_at),
    createdAt: toIso(row.created_at),
  };
}

/** The {@link ApiKeyWrites} primitives over one transaction. */
function apiKeyWrites(trx: Knex.Transaction): ApiKeyWrites {
  return {
    lockUser: (userId) => lockUser(trx, userId),
    async countLive(userId, now) {
      const row = await trx(TABLE)
        .where({ user_id: userId })
        .whereNull('revoked_at')
        .andWhere((query) => query.whereNull('expires_at').orWhere('expires_at', '>', now))
        .count({ n: '*' })
        .first();
      return Number(row?.n ?? 0);
    },
    async insert(key) {
      await trx(TABLE).insert({
        id: key.id,
        user_id: key.userId,
        organization_id: key.organizationId,
        name: key.name,
        prefix: key.prefix,
        key_hash: key.keyHash,
        scopes: JSON.stringify(key.scopes),
        expires_at: key.expiresAt,
        last_used_at: null,
        revoked_at: null,
        created_at: key.createdAt,
      });
    },
    async revoke(userId, organizationId, keyId, now) {
      const updated = await trx(TABLE)
        .where({ id: keyId, user_id: userId, organization_id: organizationId })
        .whereNull('revoked_at')
        .update({ revoked_at: now });
      return updated === 1;
    },
  };
}

/**
 * The knex {@link ApiKeyStore}. Keys are found by the SHA-256 of their value
 * (a unique index): the key has 256 bits of entropy, so the lookup reveals
 * nothing an attacker could use, and the value itself is never stored.
 *
 * @example
 * const store = createKnexApiKeyStore({ db, outbox: bus, invalidator });
 */
export function createKnexApiKeyStore(options: KnexCredentialStoreOptions): ApiKeyStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, apiKeyWrites),
    async findByHash(keyHash) {
      const row = (await db(TABLE)
        .where({ key_hash: keyHash })
        .first(...COLUMNS)) as ApiKeyRow | undefined;
      return row ? fromRow(row) : undefined;
    },
    async list(userId, organizationId) {
      const rows = (await db(TABLE)
        .where({ user_id: userId, organization_id: organizationId })
        .whereNull('revoked_at')
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .select(...COLUMNS)) as ApiKeyRow[];
      return rows.map(fromRow);
    },
    async markUsed(keyId, now, staleBefore) {
      await db(TABLE)
        .where({ id: keyId })
        .andWhere((query) => query.whereNull('last_used_at').orWhere('last_used_at', '<', staleBefore))
        .update({ last_used_at: now });
    },
    async isPlatformAdministrator(userId, organizationId) {
      const row = await db('identity_memberships as m')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .where({ 'm.user_id': userId, 'm.organization_id': organizationId, 'm.status': 'active', 'o.status': 'active' })
        .andWhere('o.is_platform', true)
        .whereIn('r.role', [...ADMIN_ROLES])
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
  };
}
