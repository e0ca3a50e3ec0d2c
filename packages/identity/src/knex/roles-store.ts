import { isUniqueViolation } from '@idt/core';
import { knexUnitOfWork, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { CustomRole, RolesStore, RolesWrites } from '../roles/store.js';
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

/** The {@link RolesWrites} primitives over one transaction. */
function rolesWrites(trx: Knex.Transaction): RolesWrites {
  return {
    async insert(role) {
      try {
        await trx('identity_roles').insert({
          id: role.id,
          organization_id: role.organizationId,
          name: role.name,
          description: role.description,
          permissions: JSON.stringify(role.permissions),
          created_at: role.createdAt,
          updated_at: role.updatedAt,
        });
        return true;
      } catch (error) {
        if (isUniqueViolation(error)) return false;
        throw error;
      }
    },

    async update(organizationId, roleId, patch, at) {
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
      try {
        if (Object.keys(changes).length > 0) {
          await trx('identity_roles').where({ id: roleId, organization_id: organizationId }).update(changes);
        }
        if (patch.name !== undefined && patch.name !== current.name) {
          await holders(trx, organizationId, current.name).update({ role: patch.name });
        }
      } catch (error) {
        if (isUniqueViolation(error)) return 'name-taken';
        throw error;
      }
      return find(trx, organizationId, roleId);
    },

    async remove(organizationId, roleId) {
      const locked = await trx('identity_roles')
        .where({ id: roleId, organization_id: organizationId })
        .update({ updated_at: trx.ref('updated_at') });
      if (locked === 0) return undefined;
      const current = await find(trx, organizationId, roleId);
      if (!current) return undefined;
      await holders(trx, organizationId, current.name).delete();
      await trx('identity_roles').where({ id: roleId }).delete();
      return current;
    },
  };
}

/**
 * The knex {@link RolesStore}.
 *
 * @example
 * const roles = createKnexRolesStore({ db, outbox: bus, invalidator });
 */
export function createKnexRolesStore(options: KnexAccountsStoreOptions): RolesStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, rolesWrites),

    async list(organizationId) {
      const rows = await db('identity_roles').where({ organization_id: organizationId }).orderBy('name');
      return rows.map(roleFromRow);
    },

    find: (organizationId, roleId) => find(db, organizationId, roleId),
  };
}
