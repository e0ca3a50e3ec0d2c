import { isUniqueViolation } from '@idt/core';
import { runStatement, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { NotificationChannel, NotificationRecord, NotificationType } from '../schemas.js';
import type { NotificationOwner, NotificationPreference, NotificationStore } from '../store.js';
import { NOTIFICATION_MAILS_TABLE, NOTIFICATION_PREFERENCES_TABLE, NOTIFICATIONS_TABLE } from './migrations.js';

/**
 * A new notification, written once. A source key the user already has (an
 * event delivered twice) inserts nothing: `source_key` is unique per user.
 */
const INSERT_NOTIFICATION_SQL =
  `insert into ${NOTIFICATIONS_TABLE} (id, user_id, organization_id, type, title, message, action_url, created_at, source_key) ` +
  'values (?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing';

/** The identity module's memberships, read to check a recipient. */
const MEMBERSHIPS_TABLE = 'identity_memberships';

interface Row {
  id: string;
  user_id: string;
  organization_id: string | null;
  type: string;
  title: string;
  message: string;
  action_url: string | null;
  read_at: unknown;
  created_at: unknown;
}

const COLUMNS = ['id', 'user_id', 'organization_id', 'type', 'title', 'message', 'action_url', 'read_at', 'created_at'];

function toRecord(row: Row): NotificationRecord {
  const readAt = toIsoOrNull(row.read_at);
  return {
    id: row.id,
    userId: row.user_id,
    organizationId: row.organization_id,
    type: row.type as NotificationType,
    title: row.title,
    message: row.message,
    isRead: readAt !== null,
    readAt,
    actionUrl: row.action_url,
    createdAt: toIso(row.created_at),
  };
}

/**
 * The knex {@link NotificationStore}, on `db` or on a transaction of it.
 *
 * @example
 * const service = createNotificationsService({ store: createKnexNotificationStore(db), clock, logger });
 */
export function createKnexNotificationStore(db: Knex): NotificationStore {
  /** The owner's unarchived notifications of the organization and the personal ones. */
  function owned(owner: NotificationOwner) {
    return db(NOTIFICATIONS_TABLE)
      .where('user_id', owner.userId)
      .andWhere((scope) => scope.where('organization_id', owner.organizationId).orWhereNull('organization_id'))
      .whereNull('archived_at');
  }

  return {
    transaction: (work) => db.transaction((trx) => work(createKnexNotificationStore(trx))),

    async insert(notification) {
      const inserted = await runStatement(db, INSERT_NOTIFICATION_SQL, [
        notification.id,
        notification.userId,
        notification.organizationId,
        notification.type,
        notification.title,
        notification.message,
        notification.actionUrl,
        notification.createdAt,
        notification.sourceKey,
      ]);
      return inserted > 0;
    },

    async find(id) {
      const row = (await db(NOTIFICATIONS_TABLE).where({ id }).first(COLUMNS)) as Row | undefined;
      return row ? toRecord(row) : undefined;
    },

    async list(owner, slice) {
      const [rows, count] = await Promise.all([
        owned(owner)
          .orderBy([
            { column: 'created_at', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .limit(slice.limit)
          .offset(slice.offset)
          .select(COLUMNS),
        owned(owner).count({ count: '*' }).first(),
      ]);
      return { items: (rows as Row[]).map(toRecord), totalCount: Number(count?.count ?? 0) };
    },

    async countUnread(owner) {
      const row = await owned(owner).whereNull('read_at').count({ count: '*' }).first();
      return Number(row?.count ?? 0);
    },

    async markRead(owner, id, at) {
      const found = await owned(owner).where('id', id).first('id', 'read_at');
      if (!found) return false;
      if (found.read_at === null) {
        await db(NOTIFICATIONS_TABLE).where({ id }).whereNull('read_at').update({ read_at: at });
      }
      return true;
    },

    async markAllRead(owner, at) {
      await owned(owner).whereNull('read_at').update({ read_at: at });
    },

    async archive(owner, id, at) {
      const updated = await owned(owner).where('id', id).update({ archived_at: at });
      return updated > 0;
    },

    async preferences(userId, organizationId) {
      const rows = (await db(NOTIFICATION_PREFERENCES_TABLE)
        .where({ user_id: userId, organization_id: organizationId })
        .select('channel', 'type', 'enabled')) as Array<{ channel: string; type: string; enabled: unknown }>;
      // SQLite answers booleans as 0 and 1.
      return rows.map(
        (row): NotificationPreference => ({
          channel: row.channel as NotificationChannel,
          type: row.type as NotificationType | '*',
          enabled: Boolean(row.enabled),
        }),
      );
    },

    async savePreference(userId, organizationId, preference, at) {
      await db(NOTIFICATION_PREFERENCES_TABLE)
        .insert({
          user_id: userId,
          organization_id: organizationId,
          channel: preference.channel,
          type: preference.type,
          enabled: preference.enabled,
          updated_at: at,
        })
        .onConflict(['user_id', 'organization_id', 'channel', 'type'])
        .merge(['enabled', 'updated_at']);
    },

    async isActiveMember(userId, organizationId) {
      const member = await db(MEMBERSHIPS_TABLE)
        .where({ user_id: userId, organization_id: organizationId, status: 'active' })
        .first('id');
      return member !== undefined;
    },

    async wasMailed(sourceKey, recipient) {
      const sent = await db(NOTIFICATION_MAILS_TABLE).where({ source_key: sourceKey, recipient }).first('recipient');
      return sent !== undefined;
    },

    async recordMail(sourceKey, recipient, at) {
      try {
        await db(NOTIFICATION_MAILS_TABLE).insert({ source_key: sourceKey, recipient, sent_at: at });
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
    },
  };
}
