import { newId } from '@idt/core';
import { toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { FilesStore, StoredFileRecord } from '../files/store.js';
import { BUCKETS_TABLE, FILES_TABLE } from './migrations.js';

type Row = Record<string, unknown>;

const COLUMNS = [
  `${FILES_TABLE}.id`,
  `${FILES_TABLE}.organization_id`,
  `${BUCKETS_TABLE}.name as bucket`,
  `${FILES_TABLE}.file_name`,
  `${FILES_TABLE}.content_type`,
  `${FILES_TABLE}.size_bytes`,
  `${FILES_TABLE}.path`,
  `${FILES_TABLE}.is_public`,
  `${FILES_TABLE}.uploaded_by`,
  `${FILES_TABLE}.uploaded_at`,
  `${FILES_TABLE}.blob_key`,
];

function fileFromRow(row: Row): StoredFileRecord {
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    bucket: String(row.bucket),
    fileName: String(row.file_name),
    contentType: String(row.content_type),
    sizeBytes: Number(row.size_bytes),
    path: row.path === null || row.path === undefined ? null : String(row.path),
    isPublic: row.is_public === true || row.is_public === 1,
    uploadedBy: String(row.uploaded_by),
    uploadedAt: toIso(row.uploaded_at),
    blobKey: String(row.blob_key),
  };
}

/**
 * The knex {@link FilesStore}. Every statement filters by organization.
 *
 * @example
 * const files = createKnexFilesStore(db);
 */
export function createKnexFilesStore(db: Knex): FilesStore {
  const select = (executor: Knex | Knex.Transaction) =>
    executor(FILES_TABLE).join(BUCKETS_TABLE, `${BUCKETS_TABLE}.id`, `${FILES_TABLE}.bucket_id`).select(COLUMNS);

  return {
    insert: (file) =>
      db.transaction(async (trx) => {
        // Buckets are created by their first upload; concurrent first uploads create one.
        await trx(BUCKETS_TABLE)
          .insert({ id: newId(), organization_id: file.organizationId, name: file.bucket, created_at: file.uploadedAt })
          .onConflict(['organization_id', 'name'])
          .ignore();
        const bucket = await trx(BUCKETS_TABLE).where({ organization_id: file.organizationId, name: file.bucket }).first('id');
        if (!bucket) throw new Error(`Bucket ${file.bucket} vanished while a file was added to it`);
        await trx(FILES_TABLE).insert({
          id: file.id,
          organization_id: file.organizationId,
          bucket_id: bucket.id,
          file_name: file.fileName,
          content_type: file.contentType,
          size_bytes: file.sizeBytes,
          path: file.path,
          is_public: file.isPublic,
          uploaded_by: file.uploadedBy,
          uploaded_at: file.uploadedAt,
          blob_key: file.blobKey,
        });
      }),

    async find(organizationId, id) {
      const row = await select(db).where(`${FILES_TABLE}.id`, id).where(`${FILES_TABLE}.organization_id`, organizationId).first();
      return row ? fileFromRow(row) : undefined;
    },

    async list(organizationId, query) {
      const filtered = db(FILES_TABLE)
        .join(BUCKETS_TABLE, `${BUCKETS_TABLE}.id`, `${FILES_TABLE}.bucket_id`)
        .where(`${FILES_TABLE}.organization_id`, organizationId)
        .where(`${BUCKETS_TABLE}.name`, query.bucket);
      if (query.path !== null) {
        const path = query.path;
        filtered.where((q) =>
          q
            .where(`${FILES_TABLE}.path`, path)
            // substr rather than LIKE: LIKE ignores case on SQLite and not on Postgres.
            .orWhereRaw('substr(??, 1, ?) = ?', [`${FILES_TABLE}.path`, Array.from(path).length + 1, `${path}/`]),
        );
      }
      const [{ count }] = (await filtered.clone().count({ count: '*' })) as [{ count: number | string }];
      const rows = await filtered
        .clone()
        .select(COLUMNS)
        .orderBy([
          { column: `${FILES_TABLE}.uploaded_at`, order: 'desc' },
          { column: `${FILES_TABLE}.id`, order: 'desc' },
        ])
        .limit(query.pageSize)
        .offset((query.page - 1) * query.pageSize);
      return { items: rows.map(fileFromRow), totalCount: Number(count) };
    },

    remove: (organizationId, id) =>
      db.transaction(async (trx) => {
        const row = await select(trx)
          .where(`${FILES_TABLE}.id`, id)
          .where(`${FILES_TABLE}.organization_id`, organizationId)
          .first();
        if (!row) return undefined;
        const deleted = await trx(FILES_TABLE).where({ id, organization_id: organizationId }).delete();
        return deleted === 1 ? fileFromRow(row) : undefined;
      }),
  };
}
