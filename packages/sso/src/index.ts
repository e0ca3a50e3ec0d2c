/**
 * Federation for idt (work in progress, issue 50): the protocol building
 * blocks of the coming `sso()` module. A SAML 2.0 service provider over
 * `@node-saml/node-saml` whose every time rule reads an injected clock,
 * IdP metadata parsing with a parser that refuses DOCTYPEs, the replay and
 * request cache ports, and DNS TXT domain verification through a resolver
 * port. No routes, storage or sign-in pipeline yet.
 *
 * @packageDocumentation
 */
import './problems.js';

export { normalizeDomain } from './domains/domain-name.js';
export type { DnsTxtResolverOptions, TxtLookup, TxtResolver } from './domains/txt-resolver.js';
export { createDnsTxtResolver } from './domains/txt-resolver.js';
export type { DomainVerification, DomainVerifier, DomainVerifierOptions } from './domains/verifier.js';
export { createDomainVerifier, VERIFICATION_PREFIX } from './domains/verifier.js';
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
