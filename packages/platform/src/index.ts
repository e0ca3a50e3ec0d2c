/**
 * Platform modules for idt: typed settings contributed by modules
 * (organization values, user overrides, platform-wide `system.*` values),
 * feature flags with deterministic bucketing, the global changelog,
 * organization announcements and Standard Webhooks delivery. Services, routes, schemas and
 * events are here; the knex stores and migrations in `@idt/platform/knex`.
 *
 * @packageDocumentation
 */
import './problems.js';

export type { PlatformActor, PlatformDirectory } from './access.js';
export { isPlatformAdministrator, PlatformPermissions, requirePlatformAdministrator } from './access.js';
export type { AnnouncementTarget, AnnouncementType } from './announcements/schemas.js';
export {
  ANNOUNCEMENT_LIMITS,
  ANNOUNCEMENT_TARGETS,
  ANNOUNCEMENT_TYPES,
  AnnouncementInput,
  AnnouncementListQuery,
  AnnouncementResponse,
} from './announcements/schemas.js';
export type {
  AnnouncementSchedulingResult,
  AnnouncementsService,
  AnnouncementsServiceOptions,
} from './announcements/service.js';
export { createAnnouncementsService, toAnnouncementResponse } from './announcements/service.js';
export type { AnnouncementStatus } from './announcements/status.js';
export {
  ANNOUNCEMENT_STATUSES,
  canTransition,
  nextStatuses,
  parseAnnouncementStatus,
  plannedStatus,
} from './announcements/status.js';
export type { AnnouncementChange, AnnouncementRecord, AnnouncementsStore, AnnouncementsWrites } from './announcements/store.js';
export type { PlatformRequestFacts } from './audit.js';
export { PlatformAuditActions } from './audit.js';
export type { KeyedCache } from './cache.js';
export { createKeyedCache } from './cache.js';
export type { ChangeType } from './changelog/schemas.js';
export {
  CHANGE_TYPES,
  CHANGELOG_LIMITS,
  ChangelogEntryResponse,
  ChangelogInput,
  ChangelogListQuery,
  SEMVER,
} from './changelog/schemas.js';
export type { ChangelogService, ChangelogServiceOptions } from './changelog/service.js';
export { createChangelogService, toChangelogResponse } from './changelog/service.js';
export type { ChangelogRecord, ChangelogStore, ChangelogWrites } from './changelog/store.js';
export type {
  AnnouncementPublishedPayload,
  ChangelogPublishedPayload,
  FeatureFlagChangedPayload,
  SettingChangedPayload,
  WebhookEndpointDisabledPayload,
} from './events.js';
export {
  AnnouncementPublishedEvent,
  ChangelogPublishedEvent,
  FeatureFlagChangedEvent,
  FLAGS_CACHE,
  PLATFORM_EVENTS_NAMESPACE,
  platformEvents,
  SETTINGS_CACHE,
  SettingChangedEvent,
  WEBHOOK_ENDPOINTS_CACHE,
  WebhookEndpointDisabledEvent,
} from './events.js';
export type { FlagDefinition, FlagOverride, FlagSubject, FlagType, FlagValue, FlagVariant } from './flags/evaluate.js';
export { evaluateFlag, flagBucket } from './flags/evaluate.js';
export {
  FLAG_KEY,
  FlagCreateInput,
  FlagOverrideInput,
  FlagOverrideQuery,
  FlagOverrideResponse,
  FlagResponse,
  FlagUpdateInput,
  FlagValues,
  OrganizationFlagResponse,
} from './flags/schemas.js';
export type { FlagCaller, FlagsService, FlagsServiceOptions } from './flags/service.js';
export { createFlagsService } from './flags/service.js';
export type { FlagRecord, FlagsStore, FlagsWrites } from './flags/store.js';
export { createAnnouncementRoutes } from './http/announcement-routes.js';
export { createChangelogRoutes } from './http/changelog-routes.js';
export { createConfigurationRoutes } from './http/configuration-routes.js';
export { createWebhookRoutes } from './http/webhook-routes.js';
export type { PlatformOptions, PlatformServices } from './module.js';
export { platform } from './module.js';
export type { PlatformNoticeOptions, PlatformNotifier } from './notices.js';
export { createPlatformNoticeHandlers } from './notices.js';
export { PlatformCodes } from './problems.js';
export type { JsonValue, SettingDefinition, SettingKeyClass, SettingRegistry, SettingType } from './settings/definitions.js';
export {
  builtInSettings,
  CUSTOM_SETTINGS_LIMIT,
  checkSettingValue,
  classifySettingKey,
  createSettingRegistry,
  JSON_VALUE_MAX,
  SETTING_KEY_MAX,
  STRING_VALUE_MAX,
} from './settings/definitions.js';
export { ConfigResponse, ResolvedSettingResponse, SettingKeyParams, SettingValueInput } from './settings/schemas.js';
export type { ResolvedSetting, SettingSource, SettingsService, SettingsServiceOptions } from './settings/service.js';
export { createSettingsService } from './settings/service.js';
export type {
  SettingOwner,
  SettingScope,
  SettingsStore,
  SettingsWrites,
  SettingTarget,
  SettingValueRecord,
} from './settings/store.js';
export type { WebhookEventType } from './webhooks/catalog.js';
export { WEBHOOK_AUDIT_TYPE, WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_TYPE } from './webhooks/catalog.js';
export {
  nextRetryDelayMs,
  parseRetryAfter,
  WEBHOOK_DISABLE_AFTER_MS,
  WEBHOOK_RETRY_SCHEDULE_MS,
  WEBHOOK_TIMEOUT_MS,
} from './webhooks/schedule.js';
export {
  DeliveriesQuery,
  DeliveryAttemptPage,
  DeliveryAttemptResponse,
  EndpointCreated,
  EndpointInput,
  EndpointPatch,
  EndpointResponse,
  RotateSecretInput,
} from './webhooks/schemas.js';
export type { WebhookSender, WebhookSenderOptions, WebhookSendResult } from './webhooks/sender.js';
export { createWebhookSender } from './webhooks/sender.js';
export type { WebhooksService, WebhooksServiceOptions } from './webhooks/service.js';
export { createWebhooksService, WEBHOOKS_MANAGE } from './webhooks/service.js';
export { generateWebhookSecret, newMessageId, signatureHeader, signWebhook } from './webhooks/signing.js';
export type {
  AttemptOutcome,
  DeliveryRecord,
  DisabledEndpoint,
  EndpointRecord,
  MessageRecord,
  WebhooksStore,
  WebhooksWrites,
} from './webhooks/store.js';
