/**
 * Federation for idt (work in progress, issue 50). The `sso()` module:
 * single sign-on connections of organizations and of the platform (OpenID
 * Connect and SAML 2.0, secrets sealed at rest), verified domains, and the
 * SAML service provider metadata route; the knex stores and migrations are
 * in `@idt/sso/knex`. Also the protocol building blocks: a SAML 2.0 service
 * provider over `@node-saml/node-saml` whose every time rule reads an
 * injected clock, IdP metadata parsing with a parser that refuses DOCTYPEs,
 * the replay and request cache ports, and DNS TXT domain verification
 * through a resolver port; the OpenID Connect relying party of `oidc`
 * connections over `openid-client` (discovery through the outbound guard,
 * authorization code with PKCE, state and nonce, typed refusals) and the
 * claim, attribute and role mapping helpers; and the sign-in round trip
 * (the `SignInFederation` oidc's sign-in steps call, the OIDC callback and
 * SAML ACS routes, just-in-time provisioning and linking, `ssoRequired`).
 *
 * @packageDocumentation
 */
import './problems.js';

export type { SsoActor, SsoDirectory } from './access.js';
export {
  authorizeOrganization,
  authorizePlatform,
  isPlatformAdministrator,
  SSO_ORGANIZATION_PERMISSION,
  SSO_PLATFORM_PERMISSION,
} from './access.js';
export type { MappedProfile } from './connections/claim-mapping.js';
export {
  MAX_MAPPED_GROUPS,
  MAX_MAPPED_NAME_LENGTH,
  mapSamlAttributes,
  mapUpstreamClaims,
  rolesForGroups,
  SAML_ATTRIBUTE_FALLBACKS,
} from './connections/claim-mapping.js';
export type { MetadataFetcher, MetadataFetcherOptions } from './connections/metadata-source.js';
export { createMetadataFetcher, METADATA_FETCH_TIMEOUT_MS, METADATA_MAX_BYTES } from './connections/metadata-source.js';
export type {
  AttributeMapping,
  ConnectionKind,
  ConnectionRecord,
  DomainRecord,
  OidcConnectionConfig,
  RoleMappingEntry,
  SamlConnectionConfig,
  SsoIdentityRecord,
} from './connections/records.js';
export { CONNECTION_KINDS } from './connections/records.js';
export {
  AddDomainInput,
  AttributeMappingInput,
  CertificateSummary,
  ConnectionResponse,
  CreateConnectionInput,
  DomainResponse,
  OidcConfigInput,
  OidcConfigPatch,
  RoleMappingInput,
  SamlConfigInput,
  SamlConfigPatch,
  SSO_LIMITS,
  UpdateConnectionInput,
} from './connections/schemas.js';
export type { ConnectionUrls, SsoConnectionsService, SsoConnectionsServiceOptions } from './connections/service.js';
export {
  ASSIGNABLE_BUILT_IN_ROLES,
  createSsoConnectionsService,
  DEFAULT_JIT_ROLE,
  DEFAULT_OIDC_MAPPING,
  DEFAULT_OIDC_SCOPES,
  DEFAULT_SAML_MAPPING,
} from './connections/service.js';
export type { ConnectionsStore, ConnectionsWrites } from './connections/store.js';
export { normalizeDomain } from './domains/domain-name.js';
export type { SsoDomainsService, SsoDomainsServiceOptions } from './domains/service.js';
export { createSsoDomainsService, MAX_DOMAINS_PER_ORGANIZATION, toDomainResponse } from './domains/service.js';
export type { DomainsStore, DomainsWrites } from './domains/store.js';
export type { DnsTxtResolverOptions, TxtLookup, TxtResolver } from './domains/txt-resolver.js';
export { createDnsTxtResolver } from './domains/txt-resolver.js';
export type { DomainVerification, DomainVerifier, DomainVerifierOptions } from './domains/verifier.js';
export { createDomainVerifier, VERIFICATION_PREFIX } from './domains/verifier.js';
export type {
  DomainVerifiedPayload,
  SsoConnectionChangedPayload,
  SsoPolicyChangedPayload,
  UserSignedInWithSsoPayload,
} from './events.js';
export {
  CONNECTION_CHANGES,
  DomainVerifiedEvent,
  SSO_SIGN_IN_PATHS,
  SsoConnectionChangedEvent,
  SsoPolicyChangedEvent,
  ssoEvents,
  UserSignedInWithSsoEvent,
} from './events.js';
export { createSsoConnectionRoutes } from './http/connection-routes.js';
export { createSsoDomainRoutes } from './http/domain-routes.js';
export { createSsoPolicyRoutes } from './http/policy-routes.js';
export type { SamlRouteOptions } from './http/saml-routes.js';
export { createSamlRoutes, SAML_METADATA_TYPE } from './http/saml-routes.js';
export { createSignInRoutes } from './http/sign-in-routes.js';
export type { SsoOptions, SsoServices, SsoSettings } from './module.js';
export { isDnsServer, sso, ssoVariables } from './module.js';
export type { UpstreamOidcFailure, UpstreamOidcReason } from './oidc/failure.js';
export { classifyUpstreamError, UPSTREAM_OIDC_REASONS, UpstreamOidcError } from './oidc/failure.js';
export type {
  GuardedFetch,
  GuardedFetchInit,
  GuardedFetchOptions,
  UpstreamTransportReason,
} from './oidc/guarded-fetch.js';
export {
  createGuardedFetch,
  UPSTREAM_MAX_BYTES,
  UPSTREAM_TIMEOUT_MS,
  UpstreamTransportError,
} from './oidc/guarded-fetch.js';
export type {
  UpstreamAuthorization,
  UpstreamAuthorizationRequest,
  UpstreamCallback,
  UpstreamOidc,
  UpstreamOidcConnection,
  UpstreamOidcOptions,
  UpstreamOidcResult,
  UpstreamOidcSuccess,
  UpstreamTransaction,
} from './oidc/upstream.js';
export {
  createUpstreamOidc,
  DEFAULT_DISCOVERY_TTL_MS,
  DEFAULT_OIDC_CLOCK_TOLERANCE_S,
  DEFAULT_OIDC_TRANSACTION_TTL_MS,
} from './oidc/upstream.js';
export type { SsoPolicyService, SsoPolicyServiceOptions } from './policy/service.js';
export { createSsoPolicyService, SsoPolicyInput, SsoPolicyResponse } from './policy/service.js';
export type { SsoPolicyRecord, SsoPolicyStore, SsoPolicyWrites } from './policy/store.js';
export { SsoCodes } from './problems.js';
export type { SamlConnection } from './saml/connection.js';
export { assertSamlConnection } from './saml/connection.js';
export type { IdpMetadata } from './saml/idp-metadata.js';
export { parseIdpMetadata, SAML_BINDINGS } from './saml/idp-metadata.js';
export type { SamlRefusal, SamlRefusalReason } from './saml/refusal.js';
export { MAX_RELAY_STATE_LENGTH, safeRelayState } from './saml/relay-state.js';
export type { ReplayCache } from './saml/replay-cache.js';
export { createMemoryReplayCache } from './saml/replay-cache.js';
export type { PendingSamlRequest, RequestCache } from './saml/request-cache.js';
export { createMemoryRequestCache } from './saml/request-cache.js';
export { MAX_SAML_RESPONSE_BYTES } from './saml/response-structure.js';
export type {
  SamlAcceptance,
  SamlAuthnRequest,
  SamlProfile,
  SamlRejection,
  SamlServiceProvider,
  SamlServiceProviderOptions,
  SamlValidation,
} from './saml/service-provider.js';
export {
  createSamlServiceProvider,
  DEFAULT_SAML_CLOCK_SKEW_MS,
  DEFAULT_SAML_REQUEST_TTL_MS,
} from './saml/service-provider.js';
export type { BeginOptions } from './sign-in/begin.js';
export { createBegin, SIGN_IN_TRANSACTION_TTL_MS } from './sign-in/begin.js';
export type { CallbackAnswer, CallbacksOptions } from './sign-in/callbacks.js';
export {
  createCallbacks,
  RFC8176_AMR,
  registeredAmr,
  UNSOLICITED_COOKIE,
  UNSOLICITED_COOKIE_MAX_AGE_S,
} from './sign-in/callbacks.js';
export { federationErrorPage } from './sign-in/error-page.js';
export { createSignInFederation } from './sign-in/federation.js';
export type { RealmRouting } from './sign-in/home-realm.js';
export { createRealmRouting } from './sign-in/home-realm.js';
export type { OutcomeTaking, OutcomeTakingOptions } from './sign-in/outcomes.js';
export { createOutcomeTaking } from './sign-in/outcomes.js';
export type {
  OutcomeTarget,
  PendingLink,
  ProvisionedOutcome,
  Provisioner,
  ProvisionerOptions,
  UpstreamIdentity,
} from './sign-in/provisioning.js';
export { createProvisioner, OUTCOME_TTL_MS, PENDING_LINK_TTL_MS } from './sign-in/provisioning.js';
export type {
  LocalMembership,
  LocalUser,
  NewSsoUser,
  ProvisioningStore,
  ProvisioningWrites,
} from './sign-in/provisioning-store.js';
export type {
  RealmCache,
  RealmCacheOptions,
  RealmConnection,
  RealmRows,
  RealmSnapshot,
  RealmStore,
} from './sign-in/realm-cache.js';
export {
  createRealmCache,
  REALM_SNAPSHOT_TTL_MS,
  SIGN_IN_REALM_EVICTIONS,
  SIGN_IN_REALMS_NAMESPACE,
} from './sign-in/realm-cache.js';
export type {
  OutcomeKind,
  OutcomeStore,
  PendingSignIn,
  SignInProtocol,
  SignInTransactionStore,
  StoredOutcome,
} from './sign-in/store.js';
