/**
 * The identity module of idt: users, organizations, memberships, roles and
 * setup mode. Persistence adapters live in `@idt/identity/knex`.
 *
 * @packageDocumentation
 */
import './problems.js';
import './accounts/problems.js';
import './credentials/problems.js';

export type { CacheSubscriber, Eviction } from './access/cache-namespaces.js';
export { CacheNamespaces, EVERY_KEY } from './access/cache-namespaces.js';
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
export { GRANT_CLAIM } from './access/store.js';
export type { AccountsActor } from './accounts/actor.js';
export {
  accountsEvents,
  InvitationAcceptedEvent,
  InvitationCreatedEvent,
  InvitationRevokedEvent,
  MemberJoinedEvent,
  MembershipApprovedEvent,
  MembershipDeniedEvent,
  MembershipReinstatedEvent,
  MembershipRemovedEvent,
  MembershipRequestedEvent,
  MembershipRolesChangedEvent,
  MembershipSuspendedEvent,
  OrganizationCreatedEvent,
  UserDeactivatedEvent,
  UserReactivatedEvent,
  UserRegisteredEvent,
} from './accounts/events.js';
export { AccountsCodes } from './accounts/problems.js';
export type { EnrollmentPolicy } from './accounts/records.js';
export {
  EnrollmentPolicySchema,
  InvitationRecord,
  InvitationStatusSchema,
  MemberRecord,
  MembershipStatusSchema,
  OrganizationRecord,
  OrganizationStatusSchema,
  OrganizationSummary,
  RoleRecord,
  UserOrganization,
  UserRecord,
  UserStatusSchema,
} from './accounts/records.js';
export { MEMBER_ROLE, OWNER_ROLE, RoleListSchema, RoleNameSchema } from './accounts/role-policy.js';
export type {
  ApiKeyCaller,
  ApiKeyRecord,
  ApiKeyService,
  ApiKeyServiceOptions,
  CreatedApiKey,
} from './api-keys/service.js';
export { API_KEY_DISPLAY_LENGTH, API_KEY_PREFIX, CreateApiKeyInput, createApiKeyService } from './api-keys/service.js';
export type { ApiKeyStore, ApiKeyWrites, NewApiKey, StoredApiKey } from './api-keys/store.js';
export type { OrganizationAuditContext } from './audit/organization-actions.js';
export { OrganizationAuditActions } from './audit/organization-actions.js';
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
export { CredentialCodes } from './credentials/problems.js';
export { UserEmailChangedEvent, UserEmailChangeRequestedEvent } from './email-change/events.js';
export type { EmailChangeService, EmailChangeServiceOptions, PendingEmailChange } from './email-change/service.js';
export {
  ChangeEmailInput,
  ConfirmEmailChangeInput,
  createEmailChangeService,
  EMAIL_CHANGE_TOKEN_PURPOSE,
} from './email-change/service.js';
export type {
  AddressChange,
  EmailChange,
  EmailChangeConfirmation,
  EmailChangeConsumption,
  EmailChangeStore,
  EmailChangeUser,
  EmailChangeWrites,
  NewEmailChange,
} from './email-change/store.js';
// B: verified e-mail and organization security policy
export { UserEmailVerificationRequestedEvent, UserEmailVerifiedEvent } from './email-verification/events.js';
export { EmailVerificationCodes } from './email-verification/problems.js';
export { createRegistrationVerificationHandler } from './email-verification/registration-handler.js';
export type {
  EmailVerificationRequestOutcome,
  EmailVerificationService,
  EmailVerificationServiceOptions,
  EmailVerificationTokenState,
  PendingEmailVerification,
} from './email-verification/service.js';
export {
  ConfirmEmailVerificationInput,
  createEmailVerificationService,
  EMAIL_VERIFICATION_PAGE_PATH,
  EMAIL_VERIFICATION_TOKEN_PURPOSE,
  ResendVerificationInput,
} from './email-verification/service.js';
export type {
  AddressVerification,
  EmailVerification,
  EmailVerificationConsumption,
  EmailVerificationStore,
  EmailVerificationUser,
  EmailVerificationWrites,
  NewEmailVerification,
} from './email-verification/store.js';
// C1: TOTP, recovery codes and recent authentication
export { UserSecondFactorAddedEvent, UserSecondFactorRemovedEvent, UserSecondFactorsResetEvent } from './factors/events.js';
export { SecondFactorCodes } from './factors/problems.js';
export type {
  Reauthentication,
  RecentAuthentication,
  RecentAuthenticationOptions,
} from './factors/recent-authentication.js';
export { createRecentAuthentication, ReauthenticationInput } from './factors/recent-authentication.js';
export type {
  PasskeyCount,
  RecoveryCodeVerification,
  SecondFactorService,
  SecondFactorServiceOptions,
  SecondFactorStatus,
  TotpEnrolmentStart,
  TotpVerification,
} from './factors/service.js';
export { createSecondFactorService } from './factors/service.js';
export type {
  SecondFactorAttempts,
  SecondFactorStore,
  SecondFactorWrites,
  StoredTotpEnrolment,
  StoredTotpFactor,
} from './factors/store.js';
export { prefersHtml, resultPage } from './http/pages.js';
export { createApiKeyRoutes } from './http/routes/api-keys.js';
export { createEmailChangeRoutes, EmailChangeResult } from './http/routes/email-change.js';
export { createEmailVerificationRoutes } from './http/routes/email-verification.js';
export { createSecondFactorRoutes, SecondFactorsResponse } from './http/routes/factors.js';
export { createInvitationRoutes } from './http/routes/invitations.js';
export { createMemberRoutes } from './http/routes/members.js';
export { createOrganizationSecurityPolicyRoutes } from './http/routes/organization-security-policy.js';
export { createOrganizationRoutes } from './http/routes/organizations.js';
// D: passkeys
export { createPasskeyRoutes } from './http/routes/passkeys.js';
export { createPasswordlessRoutes } from './http/routes/passwordless.js';
export { createRoleRoutes } from './http/routes/roles.js';
export { createSessionRoutes, SessionResponse } from './http/routes/sessions.js';
export { createSetupRoutes } from './http/routes/setup.js';
export { createUserRoutes } from './http/routes/users.js';
export type { InvitationMailHandlerOptions } from './invitations/mail.js';
export { createInvitationMailHandler } from './invitations/mail.js';
export type { InvitationListQuery, InvitationsService, InvitationsServiceOptions } from './invitations/service.js';
export {
  AcceptInvitationInput,
  CreateInvitationInput,
  createInvitationsService,
  INVITATION_LIFETIME_MS,
  INVITATION_TOKEN_PURPOSE,
  presentInvitation,
} from './invitations/service.js';
export type {
  AcceptanceDecision,
  AcceptanceSnapshot,
  InvitationDecision,
  InvitationRevocation,
  InvitationSnapshot,
  InvitationsStore,
  InvitationsWrites,
  StoredInvitation,
} from './invitations/store.js';
export type {
  ActiveMembership,
  ActiveMemberships,
  MemberDirectory,
  MemberDirectoryStore,
  PermittedMember,
  PermittedMemberScope,
} from './memberships/member-directory.js';
export { createMemberDirectory } from './memberships/member-directory.js';
export type { EnrollmentOutcome, MembershipsService, MembershipsServiceOptions } from './memberships/service.js';
export { createMembershipsService, MemberListQuery, SetMemberRolesInput } from './memberships/service.js';
export type {
  ChangeEvent,
  EnrollmentDecision,
  EnrollmentRequest,
  MemberListRequest,
  MembershipChange,
  MembershipChangeRequest,
  MembershipSnapshot,
  MembershipsStore,
  MembershipsWrites,
  OrganizationContext,
} from './memberships/store.js';
export type { IdentityModuleOptions, IdentityModuleSettings, IdentityServices } from './module.js';
export {
  CLIENT_LOOKUP_CAPABILITY,
  EMAIL_CHANGE_MAIL_CAPABILITY,
  identity,
  identityVariables,
  SESSION_COOKIE_NAME,
} from './module.js';
export type { AddedMember, OperatorService, OperatorServiceOptions } from './operator/service.js';
export { AddMemberInput, createOperatorService } from './operator/service.js';
export type { OperatorStore } from './operator/store.js';
export { OrganizationSecurityPolicyChangedEvent } from './organization-policy/events.js';
export type { OrganizationSecurityPolicyServiceOptions } from './organization-policy/service.js';
export {
  createOrganizationSecurityPolicyService,
  ORGANIZATION_POLICY_PERMISSION,
  type OrganizationSecurityPolicy,
  OrganizationSecurityPolicyRecord,
  type OrganizationSecurityPolicyService,
  UpdateOrganizationSecurityPolicyInput,
} from './organization-policy/service.js';
export type {
  OrganizationPolicyStore,
  OrganizationPolicyWrites,
  OrganizationSecurityPolicyPatch,
} from './organization-policy/store.js';
export type { OrganizationsService, OrganizationsServiceOptions } from './organizations/service.js';
export { CreateOrganizationInput, createOrganizationsService, UpdateOrganizationInput } from './organizations/service.js';
export type { NewOrganization, OrganizationPatch, OrganizationsStore, OrganizationsWrites } from './organizations/store.js';
export { UserPasskeyAddedEvent, UserPasskeyRemovedEvent } from './passkeys/events.js';
export { PasskeyCodes } from './passkeys/problems.js';
export type {
  PasskeyAuthentication,
  PasskeyBinding,
  PasskeySecondFactorPolicy,
  PasskeyService,
  PasskeyServiceOptions,
} from './passkeys/service.js';
export {
  AuthenticationResponseSchema,
  createPasskeyService,
  PasskeyNameSchema,
  PasskeyRecord,
  passkeyAmr,
  RegisterPasskeyInput,
  RegistrationResponseSchema,
  RenamePasskeyInput,
} from './passkeys/service.js';
export type {
  PasskeyChallenge,
  PasskeyChallengePurpose,
  PasskeyStore,
  PasskeyUser,
  PasskeyWrites,
  StoredPasskey,
} from './passkeys/store.js';
export type {
  BreachedPasswordCheck,
  RangeBreachedPasswordCheckOptions,
} from './password-policy/breached.js';
export { createRangeBreachedPasswordCheck } from './password-policy/breached.js';
export type { PasswordContext, PasswordPolicy, PasswordPolicyOptions, PasswordVerdict } from './password-policy/policy.js';
export {
  createPasswordPolicy,
  DEFAULT_PASSWORD_MIN_LENGTH,
  normalizePassword,
  PasswordReasons,
  PasswordRejectedError,
  verifyPassword,
} from './password-policy/policy.js';
export { PasswordPolicyCodes } from './password-policy/problems.js';
export {
  UserPasswordChangedEvent,
  UserPasswordResetEvent,
  UserPasswordResetRequestedEvent,
} from './password-reset/events.js';
export { PasswordResetCodes } from './password-reset/problems.js';
export type {
  PasswordChangeService,
  PasswordResetService,
  PasswordResetTokenState,
  PendingPasswordReset,
} from './password-reset/service.js';
export {
  ChangePasswordInput,
  PASSWORD_RESET_PAGE_PATH,
  PasswordResetConfirmInput,
  PasswordResetRequestInput,
} from './password-reset/service.js';
export type { PasswordlessService, PasswordlessServiceOptions, PasswordlessSignIn } from './passwordless/service.js';
export {
  CodeRequestInput,
  CodeVerifyInput,
  createPasswordlessService,
  MAGIC_LINK_TOKEN_PURPOSE,
  MagicLinkRequestInput,
  ReturnToSchema,
} from './passwordless/service.js';
export type {
  NewPasswordlessRequest,
  PasswordlessCode,
  PasswordlessKind,
  PasswordlessStore,
  PasswordlessUser,
  PasswordlessWrites,
} from './passwordless/store.js';
export type { Argon2Options, PasswordHasher } from './passwords.js';
export { createArgon2Hasher, defaultArgon2Concurrency, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.js';
export { IdentityCodes } from './problems.js';
export type { RolesService, RolesServiceOptions } from './roles/service.js';
export { CreateRoleInput, createRolesService, PermissionSchema, UpdateRoleInput } from './roles/service.js';
export type { CustomRole, CustomRolePatch, RolesStore, RolesWrites } from './roles/store.js';
export { EmailSchema, OrganizationNameSchema, PasswordSchema, PersonNameSchema } from './schemas.js';
// SCIM provisioning
export type { CreatedScimToken, ScimAdminService, ScimAdminServiceOptions } from './scim/admin-service.js';
export { CreateScimTokenInput, createScimAdminService, MAX_SCIM_TOKENS, ScimRoleMappingsInput } from './scim/admin-service.js';
export type { ScimType } from './scim/errors.js';
export { SCIM_ERROR_SCHEMA, SCIM_MEDIA_TYPE, ScimError } from './scim/errors.js';
export { ScimUserProvisionedEvent } from './scim/events.js';
export type { ScimCondition } from './scim/filter.js';
export { GROUP_FILTER_ATTRIBUTES, parseScimFilter, USER_FILTER_ATTRIBUTES } from './scim/filter.js';
export type { ScimGroupInput, ScimGroupRecord } from './scim/groups.js';
export type { ScimGroupsService, ScimGroupsServiceOptions } from './scim/groups-service.js';
export { createScimGroupsService } from './scim/groups-service.js';
export { SCIM_BASE_PATH } from './scim/http.js';
export { ScimCodes } from './scim/problems.js';
export { rolesFromGroups } from './scim/roles.js';
export { ENTERPRISE_USER_SCHEMA, GROUP_SCHEMA, USER_SCHEMA } from './scim/schemas.js';
export type {
  NewScimToken,
  ScimLink,
  ScimMembership,
  ScimPage,
  ScimStore,
  ScimTokenIdentity,
  ScimTokenRecord,
  ScimWrites,
} from './scim/store.js';
export type { ScimUserAttributes, ScimUserInput, ScimUserRecord } from './scim/users.js';
export { parseUserInput, toScimUser } from './scim/users.js';
export type { ScimUsersService, ScimUsersServiceOptions } from './scim/users-service.js';
export { createScimUsersService } from './scim/users-service.js';
export { formatClearedSessionCookie, formatSessionCookie, SESSION_COOKIE_ATTRIBUTES } from './sessions/cookie.js';
export { UserSessionEvictedEvent, UserSessionRevokedEvent } from './sessions/events.js';
export { sessionEvictions, sessionsToEvict } from './sessions/policy.js';
export type {
  SessionRecord,
  SessionService,
  SessionServiceOptions,
  StartedSession,
  StartSessionOptions,
} from './sessions/service.js';
export { createSessionService } from './sessions/service.js';
export { OidcSessionEndedEvent } from './sessions/single-sign-on-events.js';
export type {
  NewSession,
  SessionAuthentication,
  SessionEndReason,
  SessionStore,
  SessionWrites,
  StoredSession,
} from './sessions/store.js';
export type { SetupResult, SetupService, SetupServiceOptions } from './setup/service.js';
export { createSetupService, SetupAdminInput } from './setup/service.js';
export type { FirstAdministrator, SetupStore } from './setup/store.js';
export type { SignInClaims, SignInMembershipState, SignInOrganization, SignInService, SignInStore } from './sign-in/service.js';
export { createSignInService } from './sign-in/service.js';
export { slugify } from './slug.js';
export type { TokenMac } from './tokens.js';
export { createTokenMac } from './tokens.js';
export type { UserListQuery, UsersService, UsersServiceOptions } from './users/service.js';
export { createUsersService, RegisterInput, UpdateProfileInput } from './users/service.js';
export type { NewUser, ProfilePatch, UsersStore, UsersWrites } from './users/store.js';
