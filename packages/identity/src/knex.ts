/**
 * Knex persistence for `@idt/identity`: migrations, stores and the wired module.
 *
 * @packageDocumentation
 */
export { createKnexAccessStore, REVOKE_ALL, writeRevocation } from './knex/access-store.js';
export type { KnexAccountsStoreOptions } from './knex/accounts-shared.js';
export { createKnexApiKeyStore } from './knex/api-key-store.js';
export type { KnexCredentialStoreOptions } from './knex/credential-store-deps.js';
export { createKnexEmailChangeStore } from './knex/email-change-store.js';
// B: verified e-mail and organization security policy
export { createKnexEmailVerificationStore } from './knex/email-verification-store.js';
// C1: TOTP, recovery codes and recent authentication
export { createKnexSecondFactorStore } from './knex/factors-store.js';
export type { AccountsFeature, AccountsServices } from './knex/features/accounts.js';
export { createAccountsFeature } from './knex/features/accounts.js';
export type { FeatureContext, IdentityFeature, IdentitySettings } from './knex/features/context.js';
export type { CredentialsFeature, CredentialsServices } from './knex/features/credentials.js';
export { createCredentialsFeature } from './knex/features/credentials.js';
export type { FactorsFeature, FactorsFeatureDependencies } from './knex/features/factors.js';
export { createFactorsFeature, TOTP_SECRET_PURPOSE } from './knex/features/factors.js';
// SCIM provisioning
export type { ScimFeature, ScimServices } from './knex/features/scim.js';
export type { VerificationFeature, VerificationServices } from './knex/features/verification.js';
export { createVerificationFeature } from './knex/features/verification.js';
export { createKnexInvitationsStore } from './knex/invitations-store.js';
export type { PermittedMember } from './knex/members-with-permission.js';
export { createKnexMemberDirectoryStore, membersWithPermission } from './knex/members-with-permission.js';
export { createKnexMembershipsStore } from './knex/memberships-store.js';
export { identityMigrations } from './knex/migrations.js';
export { secondFactorsMigration } from './knex/migrations-0010-second-factors.js';
// D: passkeys
export { passkeysMigration } from './knex/migrations-0011-passkeys.js';
export { scimMigration } from './knex/migrations-0012-scim.js';
export { scimCountsMigration } from './knex/migrations-0013-scim-counts.js';
export type { KnexIdentity, KnexIdentityOptions } from './knex/module.js';
export { createKnexIdentity } from './knex/module.js';
export { createKnexOperatorStore } from './knex/operator-store.js';
export { createKnexOrganizationPolicyStore } from './knex/organization-policy-store.js';
export { createKnexOrganizationsStore } from './knex/organizations-store.js';
// D: passkeys
export { createKnexPasskeyStore } from './knex/passkeys-store.js';
export { createKnexPasswordlessStore } from './knex/passwordless-store.js';
export { createKnexRolesStore } from './knex/roles-store.js';
export { createKnexScimStore } from './knex/scim-store.js';
export { createKnexSessionStore } from './knex/session-store.js';
export { createKnexSetupStore } from './knex/setup-store.js';
export { createKnexSignInStore, type KnexSignInStoreOptions } from './knex/sign-in-store.js';
export { createKnexUsersStore } from './knex/users-store.js';
