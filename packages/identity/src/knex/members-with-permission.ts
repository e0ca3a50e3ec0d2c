import { compareCodeUnits } from '@idt/core';
import type { Knex } from 'knex';
import { expandRoles } from '../authorization/roles.js';

/** A membership {@link membersWithPermission} found. */
export interface PermittedMember {
  readonly userId: string;
  readonly organizationId: string;
  readonly email: string;
}

/**
 * Active members, with active accounts, of active organizations whose roles
 * (custom roles of their organization included) grant `permission`: of
 * `organizationId`, or of every organization when it is `null`; with
 * `role`, only those holding that role (case-insensitive). One entry per
 * membership, ordered by organization then user. Who to notify of an
 * inquiry, an announcement, ...
 *
 * @example
 * const staff = await membersWithPermission(db, 'InquiriesRead', { organizationId });
 */
export async function membersWithPermission(
  db: Knex,
  permission: string,
  scope: { readonly organizationId: string | null; readonly role?: string },
): Promise<PermittedMember[]> {
  const query = db('identity_memberships as m')
    .join('identity_users as u', 'u.id', 'm.user_id')
    .join('identity_organizations as o', 'o.id', 'm.organization_id')
    .leftJoin('identity_membership_roles as r', 'r.membership_id', 'm.id')
    .where({ 'm.status': 'active', 'u.status': 'active', 'o.status': 'active' })
    .select('m.user_id as userId', 'm.organization_id as organizationId', 'u.email as email', 'r.role as role');
  const custom = db('identity_roles').select('organization_id', 'name', 'permissions');
  if (scope.organizationId !== null) {
    query.where('m.organization_id', scope.organizationId);
    custom.where({ organization_id: scope.organizationId });
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
  const memberships = new Map<string, PermittedMember & { roles: string[] }>();
  for (const row of rows) {
    const key = `${row.organizationId} ${row.userId}`;
    const entry = memberships.get(key) ?? { userId: row.userId, organizationId: row.organizationId, email: row.email, roles: [] };
    if (row.role) entry.roles.push(row.role.toLowerCase());
    memberships.set(key, entry);
  }
  const role = scope.role?.toLowerCase();
  return [...memberships.values()]
    .filter((entry) => role === undefined || entry.roles.includes(role))
    .filter((entry) => expandRoles(entry.roles, customRoles.get(entry.organizationId)).has(permission))
    .map(({ userId, organizationId, email }) => ({ userId, organizationId, email }))
    .sort((x, y) => compareCodeUnits(x.organizationId, y.organizationId) || compareCodeUnits(x.userId, y.userId));
}
