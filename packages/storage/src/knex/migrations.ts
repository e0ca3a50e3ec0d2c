import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/** The buckets of each organization. */
export const BUCKETS_TABLE = 'storage_buckets';
/** The metadata of stored files. */
export const FILES_TABLE = 'storage_files';

/**
 * - `storage_buckets`: created on the first upload into a bucket, unique per organization.
 * - `storage_files`: one row per stored file; its bytes are in the blob store under `blob_key`.
 */
const initial: Migration = {
  name: '0001_storage',
  async up(db) {
    await db.schema.createTable(BUCKETS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('name', 63).notNullable();
      timestampColumn(t, 'created_at').notNullable();
      t.unique(['organization_id', 'name']);
    });
    await db.schema.createTable(FILES_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('bucket_id', 36).notNullable().references('id').inTable(BUCKETS_TABLE).onDelete('CASCADE');
      t.string('file_name', 255).notNullable();
      t.string('content_type', 255).notNullable();
      t.bigInteger('size_bytes').notNullable();
      t.string('path', 1024);
      t.boolean('is_public').notNullable().defaultTo(false);
      // The uploading user; not a foreign key, so files outlive their uploader's account.
      t.string('uploaded_by', 36).notNullable();
      timestampColumn(t, 'uploaded_at').notNullable();
      t.string('blob_key', 512).notNullable();
      t.index(['organization_id', 'bucket_id', 'uploaded_at']);
      t.index(['organization_id', 'bucket_id', 'path']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(FILES_TABLE);
    await db.schema.dropTableIfExists(BUCKETS_TABLE);
  },
};

/** The migrations of `@idt/storage`, recorded in `idt_storage_migrations`; they reference identity's organizations. */
export const storageMigrations: MigrationSet = {
  owner: '@idt/storage',
  tableName: 'idt_storage_migrations',
  dependsOn: ['@idt/core', '@idt/identity'],
  migrations: [initial],
};
