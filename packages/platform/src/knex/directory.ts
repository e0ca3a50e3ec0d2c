import type { MemberDirectory } from '@idt/identity';
import type { Knex } from 'knex';
import type { PlatformDirectory } from '../access.js';

/**
 * The {@link PlatformDirectory} over identity's tables (`@idt/identity`'s
 * migrations run first): the platform organization is the active one with
 * `is_platform`. Who holds a permission is the identity module's answer
 * (its `members` service).
 *
 * @example
 * const directory = createKnexPlatformDirectory(db, idt.services.identity.members);
 */
export function createKnexPlatformDirectory(db: Knex, members: Pick<MemberDirectory, 'withPermission'>): PlatformDirectory {
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
      const permitted = await members.withPermission(permission, { organizationId, ...(role === undefined ? {} : { role }) });
      return permitted.map(({ userId, organizationId: organization }) => ({ userId, organizationId: organization }));
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
