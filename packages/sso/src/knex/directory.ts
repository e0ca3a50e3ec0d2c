import type { Knex } from 'knex';
import type { SsoDirectory } from '../access.js';

/**
 * The {@link SsoDirectory} over identity's tables (`identity_organizations`,
 * `identity_roles`), read-only.
 *
 * @example
 * const directory = createKnexSsoDirectory(db);
 */
export function createKnexSsoDirectory(db: Knex): SsoDirectory {
  return {
    async isPlatformOrganization(organizationId) {
      const row = await db('identity_organizations')
        .where({ id: organizationId, is_platform: true, status: 'active' })
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
    async organizationExists(organizationId) {
      const row = await db('identity_organizations').where({ id: organizationId }).first(db.raw('1 as found'));
      return row !== undefined;
    },
    async hasCustomRole(organizationId, role) {
      const row = await db('identity_roles')
        .where({ organization_id: organizationId })
        .whereRaw('lower(name) = ?', [role.toLowerCase()])
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
  };
}
