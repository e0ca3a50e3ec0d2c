import type { Knex } from 'knex';
import {
  type ActiveMembership,
  createMemberDirectory,
  type MemberDirectoryStore,
  type PermittedMember,
} from '../memberships/member-directory.js';

export type { PermittedMember };

/**
 * The {@link MemberDirectoryStore} over identity's tables: two reads, the
 * memberships with their roles and the custom roles of the same
 * organizations.
 *
 * @example
 * const members = createMemberDirectory(createKnexMemberDirectoryStore(db));
 */
export function createKnexMemberDirectoryStore(db: Knex): MemberDirectoryStore {
  return {
    async activeMemberships(organizationId) {
      const query = db('identity_memberships as m')
        .join('identity_users as u', 'u.id', 'm.user_id')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .leftJoin('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .where({ 'm.status': 'active', 'u.status': 'active', 'o.status': 'active' })
        .select('m.user_id as userId', 'm.organization_id as organizationId', 'u.email as email', 'r.role as role');
      const custom = db('identity_roles').select('organization_id', 'name', 'permissions');
      if (organizationId !== null) {
        query.where('m.organization_id', organizationId);
        custom.where({ organization_id: organizationId });
      }
      const [rows, customRows] = (await Promise.all([query, custom])) as [
        Array<{ userId: string; organizationId: string; email: string; role: string | null }>,
        Array<{ organization_id: string; name: string; permissions: string }>,
      ];
      const customRoles = new Map<string, Map<string, string[]>>();
      for (const row of customRows) {
        const roles = customRoles.get(row.organization_id) ?? new Map<string, string[]>();
        roles.set(row.name.toLowerCase(), JSON.parse(row.permissions) as string[]);
        customRoles.set(row.organization_id, roles);
      }
      const memberships = new Map<string, ActiveMembership & { roles: string[] }>();
      for (const row of rows) {
        const key = `${row.organizationId} ${row.userId}`;
        const entry = memberships.get(key) ?? {
          userId: row.userId,
          organizationId: row.organizationId,
          email: row.email,
          roles: [],
        };
        if (row.role) entry.roles.push(row.role.toLowerCase());
        memberships.set(key, entry);
      }
      return { memberships: [...memberships.values()], customRoles };
    },
  };
}

/**
 * Active members, with active accounts, of active organizations whose roles
 * (custom roles of their organization included) grant `permission`: of
 * `organizationId`, or of every organization when it is `null`; with
 * `role`, only those holding that role (case-insensitive). One entry per
 * membership, ordered by organization then user.
 *
 * @deprecated Modules ask the identity module's services:
 * `ctx.module<IdentityServices>('identity').members.withPermission(permission, scope)`
 * (a `MemberDirectory`); over a database of your own, `createMemberDirectory(createKnexMemberDirectoryStore(db))`.
 *
 * @example
 * const staff = await membersWithPermission(db, 'InquiriesRead', { organizationId });
 */
export function membersWithPermission(
  db: Knex,
  permission: string,
  scope: { readonly organizationId: string | null; readonly role?: string },
): Promise<PermittedMember[]> {
  return createMemberDirectory(createKnexMemberDirectoryStore(db)).withPermission(permission, scope);
}
