import { type Clock, type Logger, newId, type Page, type PageRequest, type Principal, toPage } from '@idt/core';
import { runStatement, toIso, toIsoOrNull } from '@idt/core/knex';
import { ProblemError } from '@idt/problem';
import type { Knex } from 'knex';
import type { RealtimeNotification } from './hub/types.js';
import { NOTIFICATION_PREFERENCES_TABLE, NOTIFICATIONS_TABLE } from './knex/migrations.js';
import {
  NOTIFICATION_CHANNELS,
  NOTIFICATION_TYPES,
  type NotificationChannel,
  type NotificationRecord,
  type NotificationType,
} from './schemas.js';

/**
 * A new notification (each sign-in that ends an older session writes one), written once. A source
 * key the user already has (an event delivered twice) inserts nothing: `source_key` is unique per user.
 */
const INSERT_NOTIFICATION_SQL =
  `insert into ${NOTIFICATIONS_TABLE} (id, user_id, organization_id, type, title, message, action_url, created_at, source_key) ` +
  'values (?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing';

/** Told about every notification once its transaction committed (the realtime hub). */
export interface NotificationPublisher {
  notificationCreated(notification: RealtimeNotification): void | Promise<void>;
}

/** A notification to create for one user. */
export interface NewNotification {
  readonly userId: string;
  /** null: personal, shown in every organization of the user. */
  readonly organizationId: string | null;
  readonly type: NotificationType;
  readonly title: string;
  readonly message: string;
  readonly actionUrl?: string | null;
  /**
   * Makes the creation idempotent: a second notification of the same user
   * with the same key is not created (an event id and the handler's name).
   */
  readonly sourceKey?: string;
}

/** Whether the member may have opted out of it: an organization's notification other than a security alert. */
function mayOptOut(notification: NewNotification): notification is NewNotification & { organizationId: string } {
  return notification.type !== 'SecurityAlert' && notification.organizationId !== null;
}

/** One channel's preferences. */
export interface ChannelPreferences {
  readonly channel: NotificationChannel;
  readonly enabled: boolean;
  readonly types: ReadonlyArray<{ readonly type: NotificationType; readonly enabled: boolean }>;
}

/** Notifications of the caller, in the caller's organization (and personal ones). */
export interface NotificationsService {
  list(caller: Principal, page: PageRequest): Promise<Page<NotificationRecord>>;
  unreadCount(caller: Principal): Promise<number>;
  /** @throws ProblemError `Notifications.NotFound` */
  markRead(caller: Principal, id: string): Promise<void>;
  markAllRead(caller: Principal): Promise<void>;
  /** @throws ProblemError `Notifications.NotFound` */
  archive(caller: Principal, id: string): Promise<void>;
  preferences(caller: Principal): Promise<ChannelPreferences[]>;
  setPreference(
    caller: Principal,
    input: { channel: NotificationChannel; type?: NotificationType | '*'; enabled: boolean },
  ): Promise<void>;
  /**
   * `POST /v1/notifications`: a notification for a member of the caller's organization.
   *
   * @throws ProblemError `Notifications.RecipientNotMember`
   */
  send(caller: Principal, input: Omit<NewNotification, 'organizationId' | 'sourceKey'>): Promise<NotificationRecord>;
  /**
   * Creates notifications (event handlers): skips users who opted out of
   * in-app notifications of that type (security alerts excepted) and ones
   * already created with the same source key; publishes after commit.
   */
  notify(notifications: readonly NewNotification[]): Promise<NotificationRecord[]>;
  /** Whether the user takes notifications of `type` on `channel` in the organization (opt-out model). */
  accepts(userId: string, organizationId: string, channel: NotificationChannel, type: NotificationType): Promise<boolean>;
  /** One notification by id, for the hub of another instance. */
  find(id: string): Promise<NotificationRecord | undefined>;
}

/** Options of {@link createNotificationsService}. */
export interface NotificationsServiceOptions {
  readonly db: Knex;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly publisher?: NotificationPublisher;
}

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
  const readAt = toIsoOrNull(row.read_at as never);
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
    createdAt: toIso(row.created_at as never),
  };
}

function notFound(): ProblemError {
  return new ProblemError('Notifications.NotFound', 'No such notification of yours in this organization.');
}

/**
 * The notifications service over knex. Every query is filtered by the
 * caller's user and organization: another user's notification, or one of
 * another organization, is not found.
 *
 * @example
 * const service = createNotificationsService({ db, clock, logger, publisher: hub });
 */
export function createNotificationsService(options: NotificationsServiceOptions): NotificationsService {
  const { db, clock, logger } = options;

  /** The caller's visible, unarchived notifications; none for a caller without a user or organization. */
  function visible(caller: Principal, query: Knex.QueryBuilder = db(NOTIFICATIONS_TABLE)) {
    const userId = caller.userId ?? '';
    const organizationId = caller.organizationId ?? '';
    return query
      .where('user_id', userId)
      .andWhere((scope) => scope.where('organization_id', organizationId).orWhereNull('organization_id'))
      .whereNull('archived_at');
  }

  async function publish(records: readonly NotificationRecord[]) {
    for (const record of records) {
      try {
        await options.publisher?.notificationCreated(record);
      } catch (error) {
        logger.warn('could not publish a notification to the realtime hub', { error, notificationId: record.id });
      }
    }
  }

  async function optedOut(
    trx: Knex | Knex.Transaction,
    userId: string,
    organizationId: string,
    channel: NotificationChannel,
    type: NotificationType,
  ): Promise<boolean> {
    const rows = (await trx(NOTIFICATION_PREFERENCES_TABLE)
      .where({ user_id: userId, organization_id: organizationId, channel })
      .whereIn('type', ['*', type])
      .select('type', 'enabled')) as Array<{ type: string; enabled: unknown }>;
    return rows.some((row) => !row.enabled || row.enabled === 0);
  }

  /** Inserts a notification; answers nothing when its source key was used already. */
  async function insert(trx: Knex | Knex.Transaction, input: NewNotification): Promise<NotificationRecord | undefined> {
    const createdAt = clock.now().toISOString();
    const row = {
      id: newId(),
      user_id: input.userId,
      organization_id: input.organizationId,
      type: input.type,
      title: input.title,
      message: input.message,
      action_url: input.actionUrl ?? null,
      created_at: createdAt,
      source_key: input.sourceKey ?? null,
    };
    const inserted = await runStatement(trx, INSERT_NOTIFICATION_SQL, [
      row.id,
      row.user_id,
      row.organization_id,
      row.type,
      row.title,
      row.message,
      row.action_url,
      row.created_at,
      row.source_key,
    ]);
    return inserted ? toRecord({ ...row, read_at: null }) : undefined;
  }

  /** Creates and publishes, skipping opted-out members and source keys already used. */
  async function createNotifications(notifications: readonly NewNotification[]): Promise<NotificationRecord[]> {
    const created: NotificationRecord[] = [];
    const [only] = notifications;
    if (only && notifications.length === 1 && !mayOptOut(only)) {
      // One notification nobody opts out of (a security alert, a personal one): a single statement.
      const record = await insert(db, only);
      if (record) created.push(record);
    } else {
      // Two deliveries of one event racing create each notification once: the second insert of a source key is skipped.
      await db.transaction(async (trx) => {
        for (const notification of notifications) {
          if (
            mayOptOut(notification) &&
            (await optedOut(trx, notification.userId, notification.organizationId, 'inApp', notification.type))
          ) {
            continue;
          }
          const record = await insert(trx, notification);
          if (record) created.push(record);
        }
      });
    }
    await publish(created);
    return created;
  }

  return {
    async list(caller, page) {
      if (!caller.userId) return toPage({ items: [], totalCount: 0 }, page);
      const [rows, count] = await Promise.all([
        visible(caller)
          .orderBy([
            { column: 'created_at', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .limit(page.pageSize)
          .offset((page.page - 1) * page.pageSize)
          .select(COLUMNS),
        visible(caller).count({ count: '*' }).first(),
      ]);
      return toPage({ items: (rows as Row[]).map(toRecord), totalCount: Number(count?.count ?? 0) }, page);
    },
    async unreadCount(caller) {
      if (!caller.userId) return 0;
      const row = await visible(caller).whereNull('read_at').count({ count: '*' }).first();
      return Number(row?.count ?? 0);
    },
    async markRead(caller, id) {
      const found = await visible(caller).where('id', id).first('id', 'read_at');
      if (!found) throw notFound();
      if (found.read_at === null) {
        await db(NOTIFICATIONS_TABLE).where({ id }).whereNull('read_at').update({ read_at: clock.now().toISOString() });
      }
    },
    async markAllRead(caller) {
      if (!caller.userId) return;
      await visible(caller).whereNull('read_at').update({ read_at: clock.now().toISOString() });
    },
    async archive(caller, id) {
      const updated = await visible(caller).where('id', id).update({ archived_at: clock.now().toISOString() });
      if (updated === 0) throw notFound();
    },
    async preferences(caller) {
      const rows = (await db(NOTIFICATION_PREFERENCES_TABLE)
        .where({ user_id: caller.userId ?? '', organization_id: caller.organizationId ?? '' })
        .select('channel', 'type', 'enabled')) as Array<{ channel: string; type: string; enabled: unknown }>;
      const enabled = (channel: string, type: string) => {
        const row = rows.find((candidate) => candidate.channel === channel && candidate.type === type);
        return row === undefined ? true : Boolean(row.enabled);
      };
      return NOTIFICATION_CHANNELS.map((channel) => ({
        channel,
        enabled: enabled(channel, '*'),
        types: NOTIFICATION_TYPES.map((type) => ({ type, enabled: enabled(channel, type) })),
      }));
    },
    async setPreference(caller, input) {
      if (!caller.userId || !caller.organizationId) return;
      await db(NOTIFICATION_PREFERENCES_TABLE)
        .insert({
          user_id: caller.userId,
          organization_id: caller.organizationId,
          channel: input.channel,
          type: input.type ?? '*',
          enabled: input.enabled,
          updated_at: clock.now().toISOString(),
        })
        .onConflict(['user_id', 'organization_id', 'channel', 'type'])
        .merge(['enabled', 'updated_at']);
    },
    async send(caller, input) {
      const organizationId = caller.organizationId as string;
      const record = await db.transaction(async (trx) => {
        const member = await trx('identity_memberships')
          .where({ user_id: input.userId, organization_id: organizationId, status: 'active' })
          .first('id');
        if (!member) {
          throw new ProblemError(
            'Notifications.RecipientNotMember',
            'The recipient is not an active member of your organization.',
          );
        }
        return insert(trx, { ...input, organizationId });
      });
      if (!record) throw new Error('a notification without a source key was not created');
      await publish([record]);
      return record;
    },
    notify: createNotifications,
    async accepts(userId, organizationId, channel, type) {
      return !(await optedOut(db, userId, organizationId, channel, type));
    },
    async find(id) {
      const row = (await db(NOTIFICATIONS_TABLE).where({ id }).first(COLUMNS)) as Row | undefined;
      return row ? toRecord(row) : undefined;
    },
  };
}
