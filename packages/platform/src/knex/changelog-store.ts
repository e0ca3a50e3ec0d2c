import type { EventOutbox } from '@idt/core';
import { isUniqueViolation, knexUnitOfWork, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { ChangeType } from '../changelog/schemas.js';
import type { ChangelogRecord, ChangelogStore, ChangelogWrites } from '../changelog/store.js';
import { CHANGELOG_TABLE } from './migrations.js';

/** Options of {@link createKnexChangelogStore}. */
export interface KnexChangelogStoreOptions {
  readonly db: Knex;
  /** Writes the events the changelog service publishes, in the store's transaction. */
  readonly outbox: EventOutbox;
}

type Row = Record<string, unknown>;

function fromRow(row: Row): ChangelogRecord {
  return {
    id: String(row.id),
    version: String(row.version),
    title: String(row.title),
    content: String(row.content),
    releasedAt: toIso(row.released_at),
    isPublished: row.is_published === true || row.is_published === 1,
    items: JSON.parse(String(row.items)) as Array<{ description: string; type: ChangeType }>,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function fields(entry: ChangelogRecord) {
  return {
    version: entry.version,
    title: entry.title,
    content: entry.content,
    items: JSON.stringify(entry.items),
    released_at: entry.releasedAt,
    updated_at: entry.updatedAt,
  };
}

/** The {@link ChangelogWrites} primitives over one transaction. */
function changelogWrites(trx: Knex.Transaction): ChangelogWrites {
  return {
    async setPublished(id, isPublished, at) {
      // Only a change of state is written, so concurrent publications give one event.
      const changed: Row[] = await trx(CHANGELOG_TABLE)
        .where({ id, is_published: !isPublished })
        .update({ is_published: isPublished, updated_at: at, ...(isPublished ? { published_at: at } : {}) })
        .returning('*');
      const row = changed[0] ?? (await trx(CHANGELOG_TABLE).where({ id }).first());
      return row ? { entry: fromRow(row), changed: changed[0] !== undefined } : undefined;
    },
  };
}

/**
 * The knex {@link ChangelogStore}. A taken version is detected by the
 * unique index (`ON CONFLICT DO NOTHING` on insert), so concurrent creations
 * of one version give one entry and one `version-exists`.
 *
 * @example
 * const store = createKnexChangelogStore({ db, outbox: bus });
 */
export function createKnexChangelogStore(options: KnexChangelogStoreOptions): ChangelogStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, changelogWrites),

    async insert(entry) {
      const inserted: Row[] = await db(CHANGELOG_TABLE)
        .insert({ id: entry.id, ...fields(entry), is_published: entry.isPublished, created_at: entry.createdAt })
        .onConflict('version')
        .ignore()
        .returning('id');
      return inserted.length === 0 ? 'version-exists' : 'created';
    },

    async update(entry) {
      try {
        const updated = await db(CHANGELOG_TABLE).where({ id: entry.id }).update(fields(entry));
        return updated === 0 ? 'not-found' : 'updated';
      } catch (error) {
        if (isUniqueViolation(error)) return 'version-exists';
        throw error;
      }
    },

    async find(id) {
      const row = await db(CHANGELOG_TABLE).where({ id }).first();
      return row ? fromRow(row) : undefined;
    },

    async findByVersion(version, publishedOnly) {
      const query = db(CHANGELOG_TABLE).where({ version });
      if (publishedOnly) query.where({ is_published: true });
      const row = await query.first();
      return row ? fromRow(row) : undefined;
    },

    async list({ publishedOnly, limit }) {
      const query = db(CHANGELOG_TABLE);
      if (publishedOnly) query.where({ is_published: true });
      const rows = await query
        .orderBy([
          { column: 'released_at', order: 'desc' },
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .limit(limit);
      return rows.map(fromRow);
    },
  };
}
