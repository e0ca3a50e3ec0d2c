import type { Permission } from './permissions.js';

/** An entry of the scope catalog (SPEC 2.2). */
export interface ScopeDefinition {
  readonly scope: string;
  readonly description: string;
  /** Granted by default to new clients. */
  readonly default: boolean;
  /** Listed, but grantable only by platform administrators (never on the organization surface). */
  readonly platformOnly: boolean;
  /** The permissions this scope grants to service-account and API-key callers. */
  readonly permissions: readonly Permission[];
  /** `login` (OpenID Connect) or `api`. */
  readonly kind: 'login' | 'api';
}

const api = (
  scope: string,
  description: string,
  isDefault: boolean,
  permissions: readonly Permission[],
  platformOnly = false,
): ScopeDefinition => ({ scope, description, default: isDefault, platformOnly, permissions, kind: 'api' });

/** The scope catalog: the login scopes and the API scopes with their defaults and permissions. */
export const SCOPE_CATALOG: readonly ScopeDefinition[] = Object.freeze([
  { scope: 'openid', description: 'Sign you in', default: true, platformOnly: false, permissions: [], kind: 'login' },
  {
    scope: 'profile',
    description: 'Your name and organization',
    default: true,
    platformOnly: false,
    permissions: [],
    kind: 'login',
  },
  { scope: 'email', description: 'Your e-mail address', default: true, platformOnly: false, permissions: [], kind: 'login' },
  {
    scope: 'offline_access',
    description: 'Keep you signed in (refresh tokens)',
    default: false,
    platformOnly: false,
    permissions: [],
    kind: 'login',
  },
  {
    scope: 'roles',
    description: 'Your roles in the organization',
    default: false,
    platformOnly: false,
    permissions: [],
    kind: 'login',
  },
  api('users.read', 'Read users', true, ['UsersRead']),
  api('users.write', 'Update users', false, ['UsersUpdate']),
  api('users.manage', 'Manage users', false, ['UsersDelete'], true),
  api('roles.read', 'Read roles', true, ['RolesRead']),
  api('roles.write', 'Update roles', false, ['RolesUpdate']),
  api('roles.manage', 'Manage roles', false, ['RolesDelete'], true),
  api('organizations.read', 'Read organizations', true, ['OrganizationsRead']),
  api('organizations.write', 'Update organizations', false, ['OrganizationsUpdate']),
  api('organizations.manage', 'Manage organization members', false, ['OrganizationsManageMembers'], true),
  api('apikeys.read', 'Read API keys', true, ['ApiKeysRead']),
  api('apikeys.write', 'Update API keys', false, ['ApiKeysUpdate']),
  api('apikeys.manage', 'Manage API keys', false, ['ApiKeyManage'], true),
  api('storage.read', 'Read stored files', true, ['StorageRead']),
  api('storage.write', 'Upload and delete files', false, ['StorageWrite']),
  api('announcements.read', 'Read announcements', true, ['AnnouncementRead']),
  api('announcements.manage', 'Manage announcements', false, ['AnnouncementManage']),
  api('changelog.manage', 'Manage the changelog', false, ['ChangelogManage']),
  api('notifications.read', 'Read notifications', false, ['NotificationRead']),
  api('notifications.write', 'Send notifications', false, ['NotificationsWrite']),
  api('configuration.read', 'Read configuration', true, ['ConfigurationRead']),
  api('configuration.manage', 'Manage configuration', false, ['ConfigurationManage']),
  api('inquiries.read', 'Read inquiries', false, ['InquiriesRead']),
  api('inquiries.write', 'Submit and update inquiries', false, ['InquiriesWrite']),
  api('webhooks.manage', 'Manage webhooks', false, ['WebhooksManage'], true),
  api('audit.read', 'Read the audit trail', false, ['AuditRead']),
]);

const byScope = new Map(SCOPE_CATALOG.map((entry) => [entry.scope, entry]));

/** The catalog entry of a scope, or `undefined`. */
export function scopeDefinition(scope: string): ScopeDefinition | undefined {
  return byScope.get(scope);
}

/** Splits a space-separated scope string into a set (empty entries dropped). */
export function parseScopes(scope: string | undefined | null): Set<string> {
  return new Set((scope ?? '').split(' ').filter((entry) => entry.length > 0));
}

/** The permissions a set of scopes grants to service-account and API-key callers; unknown scopes grant nothing. */
export function permissionsForScopes(scopes: Iterable<string>): Set<string> {
  const permissions = new Set<string>();
  for (const scope of scopes) for (const permission of byScope.get(scope)?.permissions ?? []) permissions.add(permission);
  return permissions;
}

/** The API scopes whose permissions all lie within `permissions` (what a caller may delegate). */
export function scopesWithin(permissions: ReadonlySet<string>, options: { includePlatformOnly?: boolean } = {}): string[] {
  return SCOPE_CATALOG.filter(
    (entry) =>
      entry.kind === 'api' &&
      (options.includePlatformOnly || !entry.platformOnly) &&
      entry.permissions.every((permission) => permissions.has(permission)),
  ).map((entry) => entry.scope);
}
