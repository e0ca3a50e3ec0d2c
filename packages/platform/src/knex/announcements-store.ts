import type { EventOutbox } from '@idt/core';
import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { AnnouncementTarget, AnnouncementType } from '../announcements/schemas.js';
import { parseAnnouncementStatus } from '../announcements/status.js';
import type { AnnouncementChange, AnnouncementRecord, AnnouncementsStore, AnnouncementsWrites } from '../announcements/store.js';
import { ANNOUNCEMENT_DISMISSALS_TABLE, ANNOUNCEMENTS_TABLE } from './migrations.js';

/** Options of {@link createKnexAnnouncementsStore}. */
export interface KnexAnnouncementsStoreOptions {
  readonly db: Knex;
  /** Writes the events the announcements service publishes, in the store's transaction. */
  readonly outbox: EventOutbox;
}

type Row = Record<string, unknown>;

const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
const bool = (value: unknown) => value === true || value === 1;

function fromRow(row: Row): AnnouncementRecord {
  const status = parseAnnouncementStatus(row.status);
  if (!status) throw new Error(`Announcement ${String(row.id)} has an unknown status ${String(row.status)}`);
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    title: String(row.title),
    content: String(row.content),
    type: String(row.type) as AnnouncementType,
    target: String(row.target) as AnnouncementTarget,
    targetValue: text(row.target_value),
    status,
    publishAt: toIsoOrNull(row.publish_at),
    expiresAt: toIsoOrNull(row.expires_at),
    isPinned: bool(row.is_pinned),
    isDismissible: bool(row.is_dismissible),
    actionUrl: text(row.action_url),
    actionLabel: text(row.action_label),
    createdBy: String(row.created_by),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function changeRow(change: AnnouncementChange) {
  return {
    title: change.title,
    content: change.content,
    type: change.type,
    target: change.target,
    target_value: change.targetValue,
    status: change.status,
    publish_at: change.publishAt,
    expires_at: change.expiresAt,
    is_pinned: change.isPinned,
    is_dismissible: change.isDismissible,
    action_url: change.actionUrl,
    action_label: change.actionLabel,
    updated_at: change.updatedAt,
  };
}

/** The {@link AnnouncementsWrites} primitives over one transaction. */
function announcementsWrites(trx: Knex.Transaction): AnnouncementsWrites {
  return {
    async transition(id, from, to, at, publishAt) {
      const rows: Row[] = await trx(ANNOUNCEMENTS_TABLE)
        .where({ id, status: from })
        .update({ status: to, updated_at: at, ...(publishAt !== undefined ? { publish_at: publishAt } : {}) })
        .returning('*');
      return rows[0] ? fromRow(rows[0]) : undefined;
    },
  };
}

/**
 * The knex {@link AnnouncementsStore}: status changes are one conditional
 * `UPDATE`, so of concurrent publications one moves the announcement (and
 * the announcements service writes its one `AnnouncementPublishedEvent` in
 * that transaction).
 *
 * @example
 * const store = createKnexAnnouncementsStore({ db, outbox: bus });
 */
export function createKnexAnnouncementsStore(options: KnexAnnouncementsStoreOptions): AnnouncementsStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, announcementsWrites),

    async insert(record) {
      await db(ANNOUNCEMENTS_TABLE).insert({
        id: record.id,
        organization_id: record.organizationId,
        ...changeRow(record),
        created_by: record.createdBy,
        created_at: record.createdAt,
      });
    },

    async find(organizationId, id) {
      const row = await db(ANNOUNCEMENTS_TABLE).where({ id, organization_id: organizationId }).first();
      return row ? fromRow(row) : undefined;
    },

    async list(organizationId, status) {
      const query = db(ANNOUNCEMENTS_TABLE).where({ organization_id: organizationId });
      if (status) query.where({ status });
      const rows = await query.orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);
      return rows.map(fromRow);
    },

    async update(organizationId, id, expected, change) {
      const rows: Row[] = await db(ANNOUNCEMENTS_TABLE)
        .where({ id, organization_id: organizationId, status: expected })
        .update(changeRow(change))
        .returning('*');
      return rows[0] ? fromRow(rows[0]) : undefined;
    },

    async active(organizationId, userId, now) {
      const query = db(`${ANNOUNCEMENTS_TABLE} as a`)
        .where('a.status', 'Published')
        .andWhere((where) => where.where('a.organization_id', organizationId).orWhere('a.target', 'all'))
        .andWhere((where) => where.whereNull('a.publish_at').orWhere('a.publish_at', '<=', now))
        .andWhere((where) => where.whereNull('a.expires_at').orWhere('a.expires_at', '>', now));
      if (userId !== null) {
        query.whereNotExists(
          db(`${ANNOUNCEMENT_DISMISSALS_TABLE} as d`)
            .whereRaw('d.announcement_id = a.id')
            .andWhere('d.user_id', userId)
            .select(db.raw('1')),
        );
      }
      return (await query.select('a.*')).map(fromRow);
    },

    async dismiss(announcementId, userId, at) {
      await db(ANNOUNCEMENT_DISMISSALS_TABLE)
        .insert({ announcement_id: announcementId, user_id: userId, dismissed_at: at })
        .onConflict(['announcement_id', 'user_id'])
        .ignore();
    },

    async due(now, limit) {
      const rows = await db(ANNOUNCEMENTS_TABLE)
        .where((where) => where.where('status', 'Scheduled').andWhere('publish_at', '<=', now))
        .orWhere((where) => where.where('status', 'Published').whereNotNull('expires_at').andWhere('expires_at', '<=', now))
        .orderBy('id')
        .limit(limit);
      return rows.map(fromRow);
    },
  };
}
