import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/** The inquiries of an organization. */
export const INQUIRIES_TABLE = 'inquiries';
/** The comments on inquiries. */
export const INQUIRY_COMMENTS_TABLE = 'inquiries_comments';

/**
 * - `inquiries`: one row per inquiry, owned by an organization; the
 *   submitter's IP address is kept here and never answered.
 * - `inquiries_comments`: comments, with the organization repeated so every
 *   query filters by it.
 */
const initial: Migration = {
  name: '0001_inquiries',
  async up(db) {
    await db.schema.createTable(INQUIRIES_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('name', 200).notNullable();
      t.string('email', 254).notNullable();
      t.string('phone', 50).notNullable();
      t.string('company', 200);
      // A user id, or null for a service account; not a foreign key, so an inquiry outlives its submitter's account.
      t.string('submitter_id', 36);
      t.string('submitter_ip', 64);
      t.string('project_type', 100).notNullable();
      t.string('budget_range', 100).notNullable();
      t.string('timeline', 100).notNullable();
      t.text('message').notNullable();
      t.string('status', 16).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at');
      t.index(['organization_id', 'created_at']);
      t.index(['organization_id', 'status', 'created_at']);
      t.index(['organization_id', 'submitter_id', 'created_at']);
    });
    await db.schema.createTable(INQUIRY_COMMENTS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('inquiry_id', 36).notNullable().references('id').inTable(INQUIRIES_TABLE).onDelete('CASCADE');
      // A user id or the client id of a service account.
      t.string('author_id', 200).notNullable();
      t.string('author_name', 200).notNullable();
      t.text('content').notNullable();
      t.boolean('is_internal').notNullable().defaultTo(false);
      timestampColumn(t, 'created_at').notNullable();
      t.index(['inquiry_id', 'created_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(INQUIRY_COMMENTS_TABLE);
    await db.schema.dropTableIfExists(INQUIRIES_TABLE);
  },
};

/** The migrations of `@idt/inquiries`, recorded in `idt_inquiries_migrations`; they reference identity's organizations. */
export const inquiriesMigrations: MigrationSet = {
  owner: '@idt/inquiries',
  tableName: 'idt_inquiries_migrations',
  dependsOn: ['@idt/core', '@idt/identity'],
  migrations: [initial],
};
