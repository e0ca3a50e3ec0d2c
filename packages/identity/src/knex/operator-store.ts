import type { Knex } from 'knex';
import type { OperatorStore } from '../operator/store.js';
import { organizationFromRow, USER_COLUMNS, userFromRow } from './accounts-shared.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The knex {@link OperatorStore}.
 *
 * @example
 * const operator = createKnexOperatorStore(db);
 * const organization = await operator.findOrganization('acme');
 */
export function createKnexOperatorStore(db: Knex): OperatorStore {
  return {
    async findOrganization(reference) {
      const oldestFirst = [{ column: 'created_at' }, { column: 'id' }];
      const row =
        (UUID.test(reference) ? await db('identity_organizations').where({ id: reference.toLowerCase() }).first() : undefined) ??
        (await db('identity_organizations').where({ slug: reference }).first()) ??
        (await db('identity_organizations').whereRaw('lower(name) = ?', [reference.toLowerCase()]).orderBy(oldestFirst).first());
      return row ? organizationFromRow(row) : undefined;
    },

    async findUserByEmail(email) {
      const row = await db('identity_users as u')
        .where('u.email', email)
        .first(...USER_COLUMNS);
      return row ? userFromRow(row) : undefined;
    },

    async platformOwner() {
      const row = await db('identity_memberships as m')
        .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .join('identity_users as u', 'u.id', 'm.user_id')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .where({ 'o.is_platform': true, 'o.status': 'active', 'm.status': 'active', 'u.status': 'active', 'r.role': 'owner' })
        .orderBy([{ column: 'm.created_at' }, { column: 'm.id' }])
        .first('m.user_id');
      return row ? String(row.user_id) : undefined;
    },
  };
}
