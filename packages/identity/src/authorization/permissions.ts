/** Every permission of idt; a permission's string value is its name. */
export const PERMISSIONS = [
  'UsersRead',
  'UsersCreate',
  'UsersUpdate',
  'UsersDelete',
  'RolesRead',
  'RolesCreate',
  'RolesUpdate',
  'RolesDelete',
  'OrganizationsRead',
  'OrganizationsUpdate',
  'OrganizationsManageMembers',
  'OrganizationsDelete',
  'OrganizationClientsManage',
  'ApiKeysRead',
  'ApiKeysCreate',
  'ApiKeysUpdate',
  'ApiKeysDelete',
  'ApiKeyManage',
  'NotificationRead',
  'NotificationsWrite',
  'EmailPreferenceManage',
  'WebhooksManage',
  'AdminAccess',
  'SystemSettings',
  'ConfigurationRead',
  'ConfigurationManage',
  'StorageRead',
  'StorageWrite',
  'InquiriesRead',
  'InquiriesWrite',
  'ScopeRead',
  'AnnouncementRead',
  'AnnouncementManage',
  'ChangelogManage',
  // The audit trail (`GET /v1/audit/*`); owners and admins hold it with every other permission.
  'AuditRead',
] as const;

/** A permission name. */
export type Permission = (typeof PERMISSIONS)[number];

const known = new Set<string>(PERMISSIONS);

/** Whether a string names a permission. */
export function isPermission(value: string): value is Permission {
  return known.has(value);
}
