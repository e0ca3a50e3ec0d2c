import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/** Setting values: platform-wide, per organization and per user. */
export const SETTINGS_TABLE = 'platform_settings';
/** Feature flag definitions. */
export const FLAGS_TABLE = 'platform_flags';
/** Organization and user overrides of feature flags. */
export const FLAG_OVERRIDES_TABLE = 'platform_flag_overrides';

/** Changelog entries (global). */
export const CHANGELOG_TABLE = 'platform_changelog_entries';

/** Announcements of organizations. */
export const ANNOUNCEMENTS_TABLE = 'platform_announcements';
/** Who dismissed which announcement. */
export const ANNOUNCEMENT_DISMISSALS_TABLE = 'platform_announcement_dismissals';

/** Webhook endpoints. */
export const WEBHOOK_ENDPOINTS_TABLE = 'platform_webhook_endpoints';
/** Webhook messages: one per event, under one `webhook-id`. */
export const WEBHOOK_MESSAGES_TABLE = 'platform_webhook_messages';
/** A message on its way to one endpoint. */
export const WEBHOOK_DELIVERIES_TABLE = 'platform_webhook_deliveries';
/** Every HTTP attempt of a delivery. */
export const WEBHOOK_ATTEMPTS_TABLE = 'platform_webhook_attempts';

const ORGANIZATIONS = 'identity_organizations';

/**
 * - `platform_settings`: one row per value. `owner_key` makes the primary key
 *   total (`''` for system rows, the organization id, or
 *   `organization:user`), because a unique index treats nulls as distinct.
 *   `value` is the JSON text of the value.
 * - `platform_flags`, `platform_flag_overrides`: flags and their overrides
 *   (`user_id` is `''` for an organization-wide override, for the same reason).
 */
const settingsAndFlags: Migration = {
  name: '0001_settings_flags',
  async up(db) {
    await db.schema.createTable(SETTINGS_TABLE, (t) => {
      t.string('scope', 16).notNullable();
      t.string('owner_key', 80).notNullable();
      t.string('key', 100).notNullable();
      t.string('organization_id', 36).references('id').inTable(ORGANIZATIONS).onDelete('CASCADE');
      t.string('user_id', 36);
      t.text('value').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.string('updated_by', 200).notNullable();
      t.primary(['scope', 'owner_key', 'key']);
      t.index(['organization_id']);
    });
    await db.schema.createTable(FLAGS_TABLE, (t) => {
      t.string('key', 100).primary();
      t.string('name', 200).notNullable();
      t.string('description', 500).notNullable();
      t.string('type', 16).notNullable();
      t.boolean('default_enabled').notNullable();
      t.integer('rollout_percentage').notNullable();
      t.text('variants').notNullable();
      t.string('default_variant', 50);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
    });
    await db.schema.createTable(FLAG_OVERRIDES_TABLE, (t) => {
      t.string('flag_key', 100).notNullable().references('key').inTable(FLAGS_TABLE).onDelete('CASCADE');
      t.string('organization_id', 36).notNullable().references('id').inTable(ORGANIZATIONS).onDelete('CASCADE');
      t.string('user_id', 36).notNullable();
      t.boolean('enabled');
      t.string('variant', 50);
      timestampColumn(t, 'expires_at');
      timestampColumn(t, 'updated_at').notNullable();
      t.string('updated_by', 200).notNullable();
      t.primary(['flag_key', 'organization_id', 'user_id']);
      t.index(['organization_id']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(FLAG_OVERRIDES_TABLE);
    await db.schema.dropTableIfExists(FLAGS_TABLE);
    await db.schema.dropTableIfExists(SETTINGS_TABLE);
  },
};

/**
 * `platform_changelog_entries`: the global changelog; `version` is unique
 * (a duplicate is a 409, never a 500); `items` is the JSON text of the list.
 */
const changelog: Migration = {
  name: '0002_changelog',
  async up(db) {
    await db.schema.createTable(CHANGELOG_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('version', 50).notNullable().unique();
      t.string('title', 200).notNullable();
      t.text('content').notNullable();
      t.text('items').notNullable();
      t.boolean('is_published').notNullable().defaultTo(false);
      timestampColumn(t, 'released_at').notNullable();
      timestampColumn(t, 'published_at');
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.index(['is_published', 'released_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(CHANGELOG_TABLE);
  },
};

/**
 * - `platform_announcements`: owned by an organization (the platform
 *   organization for target `all`); indexed for the reader query and the
 *   scheduling job.
 * - `platform_announcement_dismissals`: one row per user and announcement.
 */
const announcements: Migration = {
  name: '0003_announcements',
  async up(db) {
    await db.schema.createTable(ANNOUNCEMENTS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable(ORGANIZATIONS).onDelete('CASCADE');
      t.string('title', 200).notNullable();
      t.text('content').notNullable();
      t.string('type', 16).notNullable();
      t.string('target', 16).notNullable();
      t.string('target_value', 100);
      t.string('status', 16).notNullable();
      timestampColumn(t, 'publish_at');
      timestampColumn(t, 'expires_at');
      t.boolean('is_pinned').notNullable().defaultTo(false);
      t.boolean('is_dismissible').notNullable().defaultTo(true);
      t.string('action_url', 500);
      t.string('action_label', 100);
      t.string('created_by', 200).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.index(['organization_id', 'status']);
      t.index(['status', 'target']);
      t.index(['status', 'publish_at']);
    });
    await db.schema.createTable(ANNOUNCEMENT_DISMISSALS_TABLE, (t) => {
      t.string('announcement_id', 36).notNullable().references('id').inTable(ANNOUNCEMENTS_TABLE).onDelete('CASCADE');
      t.string('user_id', 36).notNullable();
      timestampColumn(t, 'dismissed_at').notNullable();
      t.primary(['announcement_id', 'user_id']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(ANNOUNCEMENT_DISMISSALS_TABLE);
    await db.schema.dropTableIfExists(ANNOUNCEMENTS_TABLE);
  },
};

/**
 * Webhooks: endpoints (secrets sealed under the server secret: they sign,
 * so they cannot be hashed), messages (unique per source event, so the bus delivering an
 * event twice queues it once), deliveries (one per message and endpoint,
 * claimed with a lease so a crashed instance's work is taken over) and
 * attempts (the delivery log).
 */
const webhooks: Migration = {
  name: '0004_webhooks',
  async up(db) {
    await db.schema.createTable(WEBHOOK_ENDPOINTS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('url', 2000).notNullable();
      t.string('description', 500).notNullable();
      t.text('event_types').notNullable();
      t.string('organization_id', 36);
      t.boolean('enabled').notNullable();
      t.string('disabled_reason', 200);
      t.string('secret', 200).notNullable();
      t.string('previous_secret', 200);
      timestampColumn(t, 'previous_secret_expires_at');
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      timestampColumn(t, 'last_success_at');
      timestampColumn(t, 'failure_streak_since');
    });
    await db.schema.createTable(WEBHOOK_MESSAGES_TABLE, (t) => {
      t.string('id', 40).primary();
      t.string('event_type', 100).notNullable();
      t.string('organization_id', 36);
      t.text('data').notNullable();
      timestampColumn(t, 'occurred_at').notNullable();
      t.string('source_event_id', 36).unique();
    });
    await db.schema.createTable(WEBHOOK_DELIVERIES_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('message_id', 40).notNullable().references('id').inTable(WEBHOOK_MESSAGES_TABLE).onDelete('CASCADE');
      t.string('endpoint_id', 36).notNullable().references('id').inTable(WEBHOOK_ENDPOINTS_TABLE).onDelete('CASCADE');
      t.string('status', 16).notNullable();
      t.integer('attempts').notNullable().defaultTo(0);
      timestampColumn(t, 'next_attempt_at');
      timestampColumn(t, 'claimed_until');
      t.unique(['message_id', 'endpoint_id']);
      t.index(['status', 'next_attempt_at']);
    });
    await db.schema.createTable(WEBHOOK_ATTEMPTS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('delivery_id', 36).notNullable().references('id').inTable(WEBHOOK_DELIVERIES_TABLE).onDelete('CASCADE');
      t.string('endpoint_id', 36).notNullable();
      t.string('message_id', 40).notNullable();
      t.string('event_type', 100).notNullable();
      t.integer('attempt').notNullable();
      t.string('status', 16).notNullable();
      t.integer('response_status');
      t.integer('duration_ms').notNullable();
      t.string('error', 500);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'next_attempt_at');
      t.index(['endpoint_id', 'created_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(WEBHOOK_ATTEMPTS_TABLE);
    await db.schema.dropTableIfExists(WEBHOOK_DELIVERIES_TABLE);
    await db.schema.dropTableIfExists(WEBHOOK_MESSAGES_TABLE);
    await db.schema.dropTableIfExists(WEBHOOK_ENDPOINTS_TABLE);
  },
};

/** The changelog and the webhook endpoints in the order they are listed, read from an index rather than sorted. */
const listIndexes: Migration = {
  name: '0005_list_indexes',
  async up(db) {
    await db.schema.alterTable(CHANGELOG_TABLE, (t) => {
      t.index(['released_at', 'created_at', 'id'], 'platform_changelog_released_index');
    });
    await db.schema.alterTable(WEBHOOK_ENDPOINTS_TABLE, (t) => {
      t.index(['created_at'], 'platform_webhook_endpoints_created_index');
    });
  },
  async down(db) {
    await db.schema.alterTable(WEBHOOK_ENDPOINTS_TABLE, (t) => {
      t.dropIndex(['created_at'], 'platform_webhook_endpoints_created_index');
    });
    await db.schema.alterTable(CHANGELOG_TABLE, (t) => {
      t.dropIndex(['released_at', 'created_at', 'id'], 'platform_changelog_released_index');
    });
  },
};

/** The migrations of `@idt/platform`, recorded in `idt_platform_migrations`; they reference identity's organizations. */
export const platformMigrations: MigrationSet = {
  owner: '@idt/platform',
  tableName: 'idt_platform_migrations',
  dependsOn: ['@idt/core', '@idt/identity'],
  migrations: [settingsAndFlags, changelog, announcements, webhooks, listIndexes],
};
