import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/** In-app notifications. */
export const NOTIFICATIONS_TABLE = 'notifications';
/** Mails an event handler sent, so that a redelivered event mails nobody twice. */
export const NOTIFICATION_MAILS_TABLE = 'notifications_mails';
/** Opt-outs per member, channel and type. */
export const NOTIFICATION_PREFERENCES_TABLE = 'notifications_preferences';

/**
 * - `notifications`: one row per notification of a user, owned by an
 *   organization (null: personal, shown in every organization of the user);
 *   `source_key` makes event handlers idempotent (unique per user).
 * - `notifications_preferences`: opt-outs; no row means enabled.
 * - `notifications_mails`: mails sent per event and recipient (idempotent redelivery).
 */
const initial: Migration = {
  name: '0001_notifications',
  async up(db) {
    await db.schema.createTable(NOTIFICATIONS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('organization_id', 36).references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('type', 40).notNullable();
      t.string('title', 200).notNullable();
      t.text('message').notNullable();
      t.string('action_url', 2000);
      timestampColumn(t, 'read_at');
      timestampColumn(t, 'archived_at');
      timestampColumn(t, 'created_at').notNullable();
      t.string('source_key', 200);
      t.index(['user_id', 'archived_at', 'created_at']);
      t.unique(['user_id', 'source_key']);
    });
    await db.schema.createTable(NOTIFICATION_PREFERENCES_TABLE, (t) => {
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('channel', 10).notNullable();
      t.string('type', 40).notNullable();
      t.boolean('enabled').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.primary(['user_id', 'organization_id', 'channel', 'type']);
    });
    await db.schema.createTable(NOTIFICATION_MAILS_TABLE, (t) => {
      t.string('source_key', 200).notNullable();
      t.string('recipient', 254).notNullable();
      timestampColumn(t, 'sent_at').notNullable();
      t.primary(['source_key', 'recipient']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(NOTIFICATION_MAILS_TABLE);
    await db.schema.dropTableIfExists(NOTIFICATION_PREFERENCES_TABLE);
    await db.schema.dropTableIfExists(NOTIFICATIONS_TABLE);
  },
};

/** The migrations of `@idt/notifications`, recorded in `idt_notifications_migrations`; they reference identity's users and organizations. */
export const notificationsMigrations: MigrationSet = {
  owner: '@idt/notifications',
  tableName: 'idt_notifications_migrations',
  dependsOn: ['@idt/core', '@idt/identity'],
  migrations: [initial],
};
