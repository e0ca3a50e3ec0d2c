/**
 * The identity module of idt: users, organizations, memberships, roles and
 * setup mode. Persistence adapters live in `@idt/identity/knex`.
 *
 * @packageDocumentation
 */
import './problems.js';

export type { CacheSubscriber } from './access/cache-namespaces.js';
export { CacheNamespaces } from './access/cache-namespaces.js';
export type { CredentialResolverOptions } from './access/credential-resolver.js';
export { createCredentialResolver } from './access/credential-resolver.js';
export type {
  AccessStore,
  ApiKeyAccess,
  ApiKeyLookup,
  ClientAccess,
  ClientLookup,
  MembershipAccess,
  MembershipStatus,
  RevocationSubject,
  SessionAccess,
  SessionLookup,
  UserAccess,
} from './access/store.js';
export type { Permission } from './authorization/permissions.js';
export { isPermission, PERMISSIONS } from './authorization/permissions.js';
export type { BuiltInRole } from './authorization/roles.js';
export {
  ADMIN_ROLES,
  BUILT_IN_ROLE_PERMISSIONS,
  BUILT_IN_ROLES,
  expandRoles,
  isBuiltInRole,
  normalizeRoleName,
} from './authorization/roles.js';
export type { ScopeDefinition } from './authorization/scopes.js';
export { parseScopes, permissionsForScopes, SCOPE_CATALOG, scopeDefinition, scopesWithin } from './authorization/scopes.js';

export { createSetupRoutes } from './http/routes/setup.js';
export type { Argon2Options, PasswordHasher } from './passwords.js';
export { createArgon2Hasher, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.js';
export { IdentityCodes } from './problems.js';
export { EmailSchema, OrganizationNameSchema, PasswordSchema, PersonNameSchema } from './schemas.js';
export type { SetupResult, SetupService, SetupServiceOptions } from './setup/service.js';
export { createSetupService, SetupAdminInput } from './setup/service.js';
export type { FirstAdministrator, SetupStore } from './setup/store.js';
export { slugify } from './slug.js';
export type { TokenMac } from './tokens.js';
export { createTokenMac } from './tokens.js';
