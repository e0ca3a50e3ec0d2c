/**
 * The foundation shared by every idt package: configuration, clock and ids,
 * logging, the Fetch-standard HTTP kit (routes, pipeline, problem rendering,
 * OpenAPI), and the authentication and rate-limiting ports.
 *
 * Database access lives in `@idt/core/knex`; the node:http adapter in
 * `@idt/core/node`.
 *
 * @packageDocumentation
 */
import './problems.js';

export type { AuditActionDefinition, AuditActionRegistry } from './audit/actions.js';
export { createAuditActionRegistry, defineAuditActions } from './audit/actions.js';
export type { HashedAuditFields } from './audit/chain.js';
export { canonicalAuditRecord, canonicalJson, GENESIS_HASH, hashAuditRecord, PLATFORM_CHAIN } from './audit/chain.js';
export type { AuditRequestFacts, AuditSettings } from './audit/context.js';
export { auditActorOf, auditRequestOf, auditVariables, resolveAuditSettings } from './audit/context.js';
export type {
  AuditActor,
  AuditActorType,
  AuditEntry,
  AuditMetadata,
  AuditMetadataValue,
  AuditOutcome,
  AuditRecord,
  AuditTarget,
  NormalizedAuditEntry,
} from './audit/entry.js';
export {
  AUDIT_ACTION_PATTERN,
  AUDIT_ACTOR_TYPES,
  AUDIT_OUTCOMES,
  AuditEntryError,
  assertNoSecrets,
  isSecretLookingKey,
  normalizeAuditEntry,
} from './audit/entry.js';
export { AuditEventPayload, AuditEventRecorded } from './audit/events.js';
export { AuditCodes } from './audit/problems.js';
export type { AuditRoutesOptions } from './audit/routes.js';
export { AUDIT_READ_PERMISSION, AuditRecordSchema, auditCsvLine, createAuditRoutes, MAX_AUDIT_PAGE } from './audit/routes.js';
export type { AppendableAuditEntry, AuditChainState, AuditQuery, AuditStore } from './audit/store.js';
export type { AuditTrail, AuditTrailOptions } from './audit/trail.js';
export { createAuditTrail, DEFAULT_AUDIT_RETENTION_DAYS } from './audit/trail.js';
export type { AuditBreakReason, AuditChainBreak, AuditChainVerification, VerifyAuditChainOptions } from './audit/verify.js';
export { verifyAuditStoreChain } from './audit/verify.js';
export type { AuthenticatorOptions, CredentialResolver, VerifiedBearerToken } from './auth/authenticator.js';
export { createAuthenticator, readCookie, verifyBearerToken } from './auth/authenticator.js';
export type { JwtClaims, JwtErrorReason, JwtVerifier, JwtVerifierOptions, VerificationJwk } from './auth/jwt.js';
export { createJwtVerifier, JwtError, signJwt } from './auth/jwt.js';
export type {
  AuthenticationInfo,
  AuthenticationResult,
  Authenticator,
  Principal,
  PrincipalKind,
  RateLimitDecision,
} from './auth/principal.js';
export type { TtlCache, TtlCacheOptions } from './cache/ttl-cache.js';
export { createTtlCache, sweepTtlCaches, TTL_CACHE_SWEEP_INTERVAL_MS } from './cache/ttl-cache.js';
export type { Clock, ManualClock } from './clock.js';
export { createManualClock, systemClock } from './clock.js';
export { compareCodeUnits } from './compare.js';
export type {
  ConfigOrigin,
  Environment,
  IdtConfig,
  IdtConfigOverrides,
  LoadConfigOptions,
  MailSettings,
  RateLimitSetting,
  RatePolicyName,
} from './config/config.js';
export {
  ConfigError,
  DEFAULT_MAIL_FROM,
  defaultRateLimits,
  environments,
  loadConfig,
  normalizePathPrefix,
  ratePolicies,
  variableOrigin,
} from './config/config.js';
export type { EnvReader } from './config/env.js';
export { envReader } from './config/env.js';
export type { LoadProjectEnvOptions, ProjectEnv } from './config/project.js';
export { explainKeyDecryption, keyEncryptionSecretSource, loadProjectEnv, PROJECT_ENV_FILE } from './config/project.js';
export { isUniqueViolation } from './db/errors.js';
export { asDatabaseUnavailable, DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from './db/unavailable.js';
export type { TransactionEffects, UnitOfWork } from './db/unit-of-work.js';
export type { AsyncApiDocument, AsyncApiOptions } from './events/asyncapi.js';
export { createAsyncApiRoutes, generateAsyncApiDocument, generateEventFlowchart } from './events/asyncapi.js';
export type {
  EventCatalog,
  EventDefinition,
  EventEnvelope,
  EventHandlerDefinition,
  EventOutbox,
  PendingEvent,
} from './events/types.js';
export { defineEvent, defineEventHandler } from './events/types.js';
export type { ApiDocsOptions } from './http/api-docs.js';
export { createApiDocsRoutes, resolveScalarScript } from './http/api-docs.js';
export type { GateRequest, HttpApp, HttpAppOptions, RequestGate, RequestInfo } from './http/app.js';
export { createHttpApp, partitionKey, resolveRequestId } from './http/app.js';
export type { BodySource } from './http/body.js';
export {
  DEFAULT_MAX_BODY_BYTES,
  decodeComponent,
  decodeUtf8Strict,
  isSafeText,
  mediaTypeOf,
  parseParams,
  readBodyText,
  readFormBody,
  readJsonBody,
  searchParamsToObject,
  UNSAFE_TEXT_MESSAGE,
  unsafeTextProblem,
} from './http/body.js';
export { clientIpOf } from './http/client-ip.js';
export { IDT_ICON_LINK, IDT_ICON_SVG } from './http/favicon.js';
export type { HealthRoutesOptions, ReadinessCheck } from './http/health.js';
export { createHealthRoutes } from './http/health.js';
export type { HandlerResponse, HeaderReader, IncomingRequest, RequestHead } from './http/light.js';
export { incomingFromRequest, LightHeaders, LightResponse, toFetchResponse } from './http/light.js';
export type { MarkupValue } from './http/markup.js';
export { escapeHtml, joinMarkup, markup, SafeHtml, unsafeRaw } from './http/markup.js';
export type { OpenApiDocument, OpenApiOptions } from './http/openapi.js';
export { generateOpenApiDocument } from './http/openapi.js';
export type { CursorPage, CursorPageRequest, CursorPageSlice, Page, PageCursor, PageRequest, PageSlice } from './http/paging.js';
export {
  CursorPageQuery,
  cursorPageSchema,
  decodeCursor,
  encodeCursor,
  MAX_PAGE_SIZE,
  PageQuery,
  pageSchema,
  toCursorPage,
  toPage,
} from './http/paging.js';
export {
  html,
  json,
  noContent,
  STRICT_TRANSPORT_SECURITY,
  strictTransportSecurityFor,
  text,
} from './http/responses.js';
export type {
  HttpMethod,
  Route,
  RouteAuth,
  RouteBodyKind,
  RouteContext,
  RouteDefinition,
  RouteResponse,
  RouteTenancy,
} from './http/route.js';
export { defineRoute } from './http/route.js';
export type { RouteLookup, RouteMatch } from './http/router.js';
export { Router } from './http/router.js';
export type { SetupGateOptions } from './http/setup-gate.js';
export { createSetupGate, isPathUnder, pathsUnder, SETUP_ALLOWLIST } from './http/setup-gate.js';
export { constantTimeEqual, isUuid, newId, randomToken, sha256Hex } from './ids.js';
export type { CreateIdtOptions, Idt } from './idt.js';
export {
  createIdt,
  defineIdtConfig,
  migrationSetsOf,
  refuseUpgrade,
  splitBaseUrl,
  UPLOAD_REQUEST_TIMEOUT_MS,
} from './idt.js';
export type { SecretBox } from './keys/crypto.js';
export { createSecretBox } from './keys/crypto.js';
export { resolveKeyEncryptionSecret } from './keys/secret.js';
export type { Logger, LoggerOptions, LogLevel } from './logger.js';
export { createLogger, silentLogger } from './logger.js';
export type {
  BrowserLogEvent,
  BrowserLogLevel,
  IngestedLogEvent,
  LogBatch,
  LogBatchParseResult,
  LogEventError,
} from './logs/event.js';
export {
  BROWSER_LOG_LEVELS,
  LOG_BATCH_LIMITS,
  LOG_BATCH_REASONS,
  LOG_EVENT_NAME,
  parseLogBatch,
  redactLogAttrs,
} from './logs/event.js';
export type { LogIngestContext, LogIngestHandler, LogIngestOptions, LogIngestProblem } from './logs/ingest.js';
export { createLogIngestHandler, LOG_INGEST_REASONS } from './logs/ingest.js';
export type {
  BufferedLogSink,
  LogQueueOptions,
  LogSink,
  LogSinkFromEnvOptions,
  OtlpLogSinkOptions,
  StdoutLogSinkOptions,
} from './logs/sinks.js';
export { createOtlpLogSink, createStdoutLogSink, logSinkFromEnv, toOtlpLogsRequest } from './logs/sinks.js';
export type { FixedWindowDecision, FixedWindowLimiter, FixedWindowLimiterOptions } from './logs/window.js';
export { createFixedWindowLimiter } from './logs/window.js';
export type { Mailer, MailMessage, MemoryMailer } from './mail/mailer.js';
export { assertMailMessage, createMemoryMailer } from './mail/mailer.js';
export type {
  AnyIdtModule,
  Env,
  EnvironmentVariable,
  IdtModule,
  ModuleAuthentication,
  ModuleBaseContext,
  ModuleContext,
  ModuleInstance,
  ModuleJob,
  ModuleSettingsSpec,
  ModuleSurface,
  ModuleUpgrade,
  NodeSurfaceHandler,
  ServicesMap,
  ServicesOf,
} from './module.js';
export { orderModules } from './module.js';
export type {
  OutboundAddress,
  OutboundAddressKind,
  OutboundGuardOptions,
  OutboundRefusalReason,
  OutboundResolver,
  OutboundUrlCheck,
  OutboundUrlCheckOptions,
} from './net/outbound.js';
export {
  checkOutboundUrl,
  classifyAddress,
  createOutboundLookup,
  isMetadataAddress,
  isMetadataHost,
  isNonPublicAddress,
  OutboundRefusedError,
  outboundHost,
  refuseHost,
  systemResolver,
} from './net/outbound.js';
export { CoreCodes } from './problems.js';
export type { RateCaller, RequestRateLimiter } from './rate-limit/partition.js';
export { ratePartition } from './rate-limit/partition.js';
export type { Throttle } from './throttle.js';
export { createThrottle } from './throttle.js';
