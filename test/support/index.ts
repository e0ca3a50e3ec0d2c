export type { CallOptions, World } from './api.js';
export { caller, expectJson, expectProblem, outboxEvents, seedWorld } from './api.js';
export type { BadBody } from './bad-bodies.js';
export { BAD_BODIES, describeBadBodies, OVERSIZED_SETUP, postBody, SETUP_ADMIN } from './bad-bodies.js';
export type { BrowserResponse, HtmlForm, SubmitOptions } from './browser.js';
export { Browser, parseForms } from './browser.js';
export type { AxeFinding, CallbackPage } from './chromium.js';
export {
  axe,
  consoleProblems,
  fits,
  inlineCode,
  lastDocument,
  launchChromium,
  openTab,
  startCallbackPage,
  tabTo,
  withoutChromium,
} from './chromium.js';
export type { SkippingClock } from './clock.js';
export { createSkippingClock } from './clock.js';
export type { TestDatabase, TestDialect } from './database.js';
export { connectTestDatabase, createTestDatabase, indexDefinitions, testDialects } from './database.js';
export type { FlowResult, FlowTarget, IdtWithClients, StartedExampleApp } from './flow.js';
export { describeExampleApp, registerFlowClient, runSignInFlow } from './flow.js';
export type { SeededUser } from './identity.js';
export { bearer, seedMembership, seedOrganization, seedTenant, seedUser } from './identity.js';
export { referenceMigrationSets } from './migrations.js';
export type { SignInApplicationOptions, SignInOptions, SignInResult, TestAdmin, TestClient } from './oidc.js';
export {
  bootstrapAdmin,
  codeTokenRequest,
  discover,
  oidcClient,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  registerUser,
  signIn,
  signInApplication,
} from './oidc.js';
export { METADATA_URLS, RESOLVES_TO_METADATA, tableResolver, watchConnections } from './outbound.js';
export { freePort } from './ports.js';
export type { TestServer, TestServerOptions } from './server.js';
export { startTestServer } from './server.js';
export type {
  RecordingInvalidator,
  StoreContractEffects,
  StoreContractInvalidator,
  StoreContractInvalidatorFactory,
  StoreContractSetup,
  StoreContracts,
  StoreContractWorld,
  UnitOfWorkChecks,
} from './store-contracts.js';
export {
  defineStoreContracts,
  recordingInvalidator,
  startedInvalidator,
  statementsOf,
  winners,
  withoutInvalidator,
} from './store-contracts.js';
export type { TestHost, TestIdt, TestIdtOptions, TestModuleOptions, TestReferenceIdt, TestReferenceModules } from './test-idt.js';
export { createTestIdt, GENEROUS_RATE_LIMITS, TEST_ORIGIN, testReferenceModules } from './test-idt.js';
export type { MintOptions, TenantWithTokens, TestTokenClaims } from './tokens.js';
export { mintAccessToken, mintServiceToken, TEST_CLIENT_ID, tenantWithTokens } from './tokens.js';
// D: passkeys (a software WebAuthn authenticator)
export type { CeremonyOverrides, CredentialJson } from './webauthn.js';
export { SoftAuthenticator } from './webauthn.js';
