/**
 * The knex side of `@idt/platform`: the stores, the migrations and the
 * module wiring.
 *
 * @packageDocumentation
 */
import './problems.js';

export type { KnexAnnouncementsStoreOptions } from './knex/announcements-store.js';
export { createKnexAnnouncementsStore } from './knex/announcements-store.js';
export type { KnexChangelogStoreOptions } from './knex/changelog-store.js';
export { createKnexChangelogStore } from './knex/changelog-store.js';
export { createKnexPlatformDirectory } from './knex/directory.js';
export type { KnexFlagsStoreOptions } from './knex/flags-store.js';
export { createKnexFlagsStore } from './knex/flags-store.js';
export {
  ANNOUNCEMENT_DISMISSALS_TABLE,
  ANNOUNCEMENTS_TABLE,
  CHANGELOG_TABLE,
  FLAG_OVERRIDES_TABLE,
  FLAGS_TABLE,
  platformMigrations,
  SETTINGS_TABLE,
  WEBHOOK_ATTEMPTS_TABLE,
  WEBHOOK_DELIVERIES_TABLE,
  WEBHOOK_ENDPOINTS_TABLE,
  WEBHOOK_MESSAGES_TABLE,
} from './knex/migrations.js';
export type { KnexPlatform, KnexPlatformOptions } from './knex/module.js';
export { ANNOUNCEMENT_JOB, createKnexPlatform, WEBHOOK_JOB } from './knex/module.js';
export type { KnexSettingsStoreOptions } from './knex/settings-store.js';
export { createKnexSettingsStore } from './knex/settings-store.js';
export { createKnexWebhooksStore, WEBHOOK_SECRET_PURPOSE } from './knex/webhooks-store.js';
