import { isUniqueViolation } from '@idt/core';
import { ALL_KEYS, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import type { CustomRole, RolesStore } from '../roles/store.js';
import type { Executor, KnexAccountsStoreOptions } from './accounts-shared.js';

type Row = Record<string, unknown>;

function roleFromRow(row: Row): CustomRole {
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    name: String(row.name),
    description: String(row.description),
    permissions: JSON.parse(String(row.permissions)) as string[],
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

async function find(db: Executor, organizationId: string, roleId: string): Promise<CustomRole | undefined> {
  const row = await db('identity_roles').where({ id: roleId, organization_id: organizationId }).first();
  return row ? roleFromRow(row) : undefined;
}

/** The membership-role rows of one organization holding a role name. */
function holders(trx: Knex.Transaction, organizationId: string, name: string) {
  return trx('identity_membership_roles')
    .where({ role: name })
    .whereIn('membership_id', trx('identity_memberships').where({ organization_id: organizationId }).select('id'));
}

/**
 * The knex {@link RolesStore}. Memberships are cached with their
 * organization's custom roles, so every write evicts them all.
 *
 * @example
 * const roles = createKnexRolesStore({ db, outbox: bus, invalidator });
 */
export function createKnexRolesStore(options: KnexAccountsStoreOptions): RolesStore {
  const { db, invalidator } = options;
  const evictAll = (trx: Knex.Transaction) => invalidator.invalidate(CacheNamespaces.memberships, ALL_KEYS, trx);

  return {
    async list(organizationId) {
      const rows = await db('identity_roles').where({ organization_id: organizationId }).orderBy('name');
      return rows.map(roleFromRow);
    },

    find: (organizationId, roleId) => find(db, organizationId, roleId),

    async create(role) {
      try {
        await db.transaction(async (trx) => {
          await trx('identity_roles').insert({
            id: role.id,
            organization_id: role.organizationId,
            name: role.name,
            description: role.description,
            permissions: JSON.stringify(role.permissions),
            created_at: role.createdAt,
            updated_at: role.updatedAt,
          });
          await evictAll(trx);
        });
        return 'created';
      } catch (error) {
        if (isUniqueViolation(error)) return 'name-taken';
        throw error;
      }
    },

    async update(organizationId, roleId, patch, at) {
      try {
        return await db.transaction(async (trx) => {
          // The first statement writes, so SQLite takes its write lock before anything is read.
          const touched = await trx('identity_roles')
            .where({ id: roleId, organization_id: organizationId })
            .update({ updated_at: at });
          if (touched === 0) return undefined;
          const current = await find(trx, organizationId, roleId);
          if (!current) return undefined;
          const changes: Record<string, string> = {};
          if (patch.name !== undefined) changes.name = patch.name;
          if (patch.description !== undefined) changes.description = patch.description;
          if (patch.permissions !== undefined) changes.permissions = JSON.stringify(patch.permissions);
          if (Object.keys(changes).length > 0) {
            await trx('identity_roles').where({ id: roleId, organization_id: organizationId }).update(changes);
          }
          if (patch.name !== undefined && patch.name !== current.name) {
            await holders(trx, organizationId, current.name).update({ role: patch.name });
          }
          await evictAll(trx);
          return find(trx, organizationId, roleId);
        });
      } catch (error) {
        if (isUniqueViolation(error)) return 'name-taken';
        throw error;
      }
    },

    remove: (organizationId, roleId) =>
      db.transaction(async (trx) => {
        const locked = await trx('identity_roles')
          .where({ id: roleId, organization_id: organizationId })
          .update({ updated_at: trx.ref('updated_at') });
        if (locked === 0) return undefined;
        const current = await find(trx, organizationId, roleId);
        if (!current) return undefined;
        await holders(trx, organizationId, current.name).delete();
        await trx('identity_roles').where({ id: roleId }).delete();
        await evictAll(trx);
        return current;
      }),
  };
}
