import { PERMISSIONS, type Permission } from './permissions.js';

/** The built-in roles; names compare case-insensitively. */
export const BUILT_IN_ROLES = ['owner', 'admin', 'manager', 'user'] as const;

/** A built-in role name. */
export type BuiltInRole = (typeof BUILT_IN_ROLES)[number];

/** What each built-in role grants (SPEC-NOTES). */
export const BUILT_IN_ROLE_PERMISSIONS: Readonly<Record<BuiltInRole, readonly Permission[]>> = Object.freeze({
  owner: PERMISSIONS,
  admin: PERMISSIONS,
  manager: [
    'UsersRead',
    'OrganizationsRead',
    'OrganizationsManageMembers',
    'OrganizationClientsManage',
    'ScopeRead',
    'ApiKeysRead',
    'ApiKeysCreate',
    'ApiKeysUpdate',
    'ApiKeysDelete',
    'ConfigurationManage',
    'InquiriesRead',
  ],
  user: [
    'OrganizationsRead',
    'NotificationRead',
    'EmailPreferenceManage',
    'AnnouncementRead',
    'StorageRead',
    'StorageWrite',
    'ApiKeysRead',
    'ApiKeysCreate',
    'ApiKeyManage',
    'InquiriesWrite',
    'ConfigurationRead',
  ],
});

/** Normalizes a role name for comparison and storage: trimmed, lowercase. */
export function normalizeRoleName(name: string): string {
  return name.trim().toLowerCase();
}

/** Whether a role name is built in. */
export function isBuiltInRole(name: string): name is BuiltInRole {
  return (BUILT_IN_ROLES as readonly string[]).includes(normalizeRoleName(name));
}

/** Roles that count as administrators (of setup mode, and of the platform organization). */
export const ADMIN_ROLES: readonly BuiltInRole[] = ['owner', 'admin'];

/**
 * The union of the permissions of a member's roles. Built-in roles come from
 * the table above; `customRoles` maps other (normalized) role names of the
 * same organization to their permissions. Unknown roles grant nothing.
 */
export function expandRoles(
  roles: readonly string[],
  customRoles: ReadonlyMap<string, readonly string[]> = new Map(),
): Set<string> {
  const permissions = new Set<string>();
  for (const role of roles) {
    const name = normalizeRoleName(role);
    const granted = isBuiltInRole(name) ? BUILT_IN_ROLE_PERMISSIONS[name] : (customRoles.get(name) ?? []);
    for (const permission of granted) permissions.add(permission);
  }
  return permissions;
}
