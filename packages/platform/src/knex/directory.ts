import { expandRoles } from '@idt/identity';
import type { Knex } from 'knex';
import type { PlatformDirectory } from '../access.js';

/**
 * The {@link PlatformDirectory} over identity's tables (`@idt/identity`'s
 * migrations run first): the platform organization is the active one with
 * `is_platform`.
 *
 * @example
 * const directory = createKnexPlatformDirectory(db);
 */
export function createKnexPlatformDirectory(db: Knex): PlatformDirectory {
  return {
    async isPlatformOrganization(organizationId) {
      const row = await db('identity_organizations')
        .where({ id: organizationId, is_platform: true, status: 'active' })
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
    async isMember(organizationId, userId) {
      const row = await db('identity_memberships')
        .where({ organization_id: organizationId, user_id: userId, status: 'active' })
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
    async rolesOf(organizationId, userId) {
      const roles: string[] = await db('identity_membership_roles as r')
        .join('identity_memberships as m', 'm.id', 'r.membership_id')
        .where({ 'm.organization_id': organizationId, 'm.user_id': userId, 'm.status': 'active' })
        .pluck('r.role');
      return roles.map((role) => role.toLowerCase());
    },
    async members(organizationId, permission, role) {
      const query = db('identity_memberships as m')
        .join('identity_users as u', 'u.id', 'm.user_id')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .leftJoin('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .where({ 'm.status': 'active', 'u.status': 'active', 'o.status': 'active' })
        .select('m.user_id as userId', 'm.organization_id as organizationId', 'r.role as role');
      if (organizationId !== null) query.where('m.organization_id', organizationId);
      const rows = (await query) as Array<{ userId: string; organizationId: string; role: string | null }>;
      const custom = db('identity_roles').select('organization_id', 'name', 'permissions');
      if (organizationId !== null) custom.where({ organization_id: organizationId });
      const customRoles = new Map<string, Map<string, string[]>>();
      for (const row of (await custom) as Array<{ organization_id: string; name: string; permissions: string }>) {
        const roles = customRoles.get(row.organization_id) ?? new Map<string, string[]>();
        roles.set(row.name.toLowerCase(), JSON.parse(row.permissions) as string[]);
        customRoles.set(row.organization_id, roles);
      }
      const memberships = new Map<string, { userId: string; organizationId: string; roles: string[] }>();
      for (const row of rows) {
        const key = `${row.organizationId} ${row.userId}`;
        const entry = memberships.get(key) ?? { userId: row.userId, organizationId: row.organizationId, roles: [] };
        if (row.role) entry.roles.push(row.role.toLowerCase());
        memberships.set(key, entry);
      }
      return [...memberships.values()]
        .filter((entry) => role === undefined || entry.roles.includes(role.toLowerCase()))
        .filter((entry) => expandRoles(entry.roles, customRoles.get(entry.organizationId)).has(permission))
        .map(({ userId, organizationId: organization }) => ({ userId, organizationId: organization }))
        .sort((x, y) => x.organizationId.localeCompare(y.organizationId) || x.userId.localeCompare(y.userId));
    },
    async platformAdministrators() {
      return (await db('identity_memberships as m')
        .join('identity_users as u', 'u.id', 'm.user_id')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .where({ 'm.status': 'active', 'u.status': 'active', 'o.status': 'active', 'o.is_platform': true })
        .whereExists(
          db('identity_membership_roles as r')
            .whereRaw('r.membership_id = m.id')
            .whereRaw('lower(r.role) in (?, ?)', ['owner', 'admin'])
            .select(db.raw('1')),
        )
        .distinct('m.user_id as userId', 'm.organization_id as organizationId')
        .orderBy('m.user_id')) as Array<{ userId: string; organizationId: string }>;
    },
  };
}
