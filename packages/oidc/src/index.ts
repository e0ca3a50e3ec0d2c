/**
 * The OpenID Connect / OAuth 2.0 provider of idt, on oidc-provider:
 * organization-scoped clients, the sign-in pages, tokens and claims,
 * refresh rotation, logout with front- and back-channel notification.
 * The knex wiring lives in `@idt/oidc/knex`.
 *
 * @packageDocumentation
 */
import './problems.js';

export type { Branding, ClientKind, ClientRecord, ClientStatus } from './clients/schemas.js';
export {
  BrandingInput,
  CLIENT_KINDS,
  ClientRecordSchema,
  RedirectUriSchema,
  RegisterClientInput,
  RotateSecretInput,
  ScopeRowInput,
  UpdateClientInput,
} from './clients/schemas.js';
export type {
  ClientActor,
  ClientRegistration,
  ClientService,
  ClientServiceOptions,
  RegisterOptions,
  RotatedSecret,
  ScopeUpsert,
} from './clients/service.js';
export {
  brandingOf,
  createClientService,
  hashClientSecret,
  sniffLogoType,
} from './clients/service.js';
export type {
  ClientChanges,
  ClientStore,
  OrganizationDirectory,
  ScopeRow,
  StoredBranding,
  StoredClient,
} from './clients/store.js';
export { OidcSessionEndedEvent } from './events.js';
export type {
  FederatedConnection,
  FederatedOutcome,
  FederationContext,
  FederationFailureReason,
  FederationStart,
  HomeRealm,
  SignInFederation,
  SignInFederationSlot,
} from './federation.js';
export { SIGN_IN_FEDERATION_CAPABILITY } from './federation.js';
export { createIdentityDirectory } from './identity-directory.js';
export type { AccountDirectory, MembershipState, StartedSession } from './interactions/directory.js';
export { ASSETS_BASE, INTERACTION_BASE } from './interactions/handler.js';
export type { ConsentStore, GrantContextStore } from './interactions/stores.js';
export type { BackchannelLimits, BackchannelNotifier, BackchannelResult, BackchannelTarget } from './logout/backchannel.js';
export { createBackchannelNotifier, DEFAULT_BACKCHANNEL_LIMITS } from './logout/backchannel.js';
export { frontchannelUrl } from './logout/frontchannel.js';
export type { OidcModuleOptions, OidcModuleSettings, OidcServices } from './module.js';
export { oidc, oidcVariables } from './module.js';
export { OidcCodes } from './problems.js';
export type { AccountClaims, GrantContext } from './provider/create-provider.js';
export { clientMetadata, LOGIN_SCOPES, OIDC_ROUTES, USERINFO_PATH } from './provider/create-provider.js';
