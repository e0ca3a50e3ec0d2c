import { type Clock, type Logger, newId, type Page, type PageRequest, type Principal, toPage } from '@idt/core';
import { ProblemError } from '@idt/problem';
import type { RealtimeNotification } from './hub/types.js';
import {
  NOTIFICATION_CHANNELS,
  NOTIFICATION_TYPES,
  type NotificationChannel,
  type NotificationRecord,
  type NotificationType,
} from './schemas.js';
import type { NotificationOwner, NotificationStore } from './store.js';

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
  /** Where notifications and preferences persist (`createKnexNotificationStore`). */
  readonly store: NotificationStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly publisher?: NotificationPublisher;
}

/** The caller's notifications: none for a caller without a user or an organization (no row has an empty id). */
function ownerOf(caller: Principal): NotificationOwner {
  return { userId: caller.userId ?? '', organizationId: caller.organizationId ?? '' };
}

function notFound(): ProblemError {
  return new ProblemError('Notifications.NotFound', 'No such notification of yours in this organization.');
}

/**
 * The notifications service over a {@link NotificationStore}. Every read and
 * change is scoped to the caller's user and organization: another user's
 * notification, or one of another organization, is not found.
 *
 * @example
 * const service = createNotificationsService({ store: createKnexNotificationStore(db), clock, logger, publisher: hub });
 */
export function createNotificationsService(options: NotificationsServiceOptions): NotificationsService {
  const { store, clock, logger } = options;

  async function publish(records: readonly NotificationRecord[]) {
    for (const record of records) {
      try {
        await options.publisher?.notificationCreated(record);
      } catch (error) {
        logger.warn('could not publish a notification to the realtime hub', { error, notificationId: record.id });
      }
    }
  }

  /** Whether the member turned off the channel, or the type on it. */
  async function optedOut(
    from: NotificationStore,
    userId: string,
    organizationId: string,
    channel: NotificationChannel,
    type: NotificationType,
  ): Promise<boolean> {
    const preferences = await from.preferences(userId, organizationId);
    return preferences.some(
      (preference) =>
        preference.channel === channel && (preference.type === '*' || preference.type === type) && !preference.enabled,
    );
  }

  /** Stores a notification; answers nothing when its source key was used already. */
  async function insert(into: NotificationStore, input: NewNotification): Promise<NotificationRecord | undefined> {
    const notification = {
      id: newId(),
      userId: input.userId,
      organizationId: input.organizationId,
      type: input.type,
      title: input.title,
      message: input.message,
      actionUrl: input.actionUrl ?? null,
      createdAt: clock.now().toISOString(),
      sourceKey: input.sourceKey ?? null,
    };
    if (!(await into.insert(notification))) return undefined;
    // The fields in the order the API and the hub have always written them.
    return {
      id: notification.id,
      userId: notification.userId,
      organizationId: notification.organizationId,
      type: notification.type,
      title: notification.title,
      message: notification.message,
      isRead: false,
      readAt: null,
      actionUrl: notification.actionUrl,
      createdAt: notification.createdAt,
    };
  }

  /** Creates and publishes, skipping opted-out members and source keys already used. */
  async function createNotifications(notifications: readonly NewNotification[]): Promise<NotificationRecord[]> {
    const created: NotificationRecord[] = [];
    const [only] = notifications;
    if (only && notifications.length === 1 && !mayOptOut(only)) {
      // One notification nobody opts out of (a security alert, a personal one): a single statement.
      const record = await insert(store, only);
      if (record) created.push(record);
    } else {
      // Two deliveries of one event racing create each notification once: the second insert of a source key is skipped.
      await store.transaction(async (tx) => {
        for (const notification of notifications) {
          if (
            mayOptOut(notification) &&
            (await optedOut(tx, notification.userId, notification.organizationId, 'inApp', notification.type))
          ) {
            continue;
          }
          const record = await insert(tx, notification);
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
      const found = await store.list(ownerOf(caller), { limit: page.pageSize, offset: (page.page - 1) * page.pageSize });
      return toPage(found, page);
    },
    async unreadCount(caller) {
      if (!caller.userId) return 0;
      return store.countUnread(ownerOf(caller));
    },
    async markRead(caller, id) {
      if (!(await store.markRead(ownerOf(caller), id, clock.now().toISOString()))) throw notFound();
    },
    async markAllRead(caller) {
      if (!caller.userId) return;
      await store.markAllRead(ownerOf(caller), clock.now().toISOString());
    },
    async archive(caller, id) {
      if (!(await store.archive(ownerOf(caller), id, clock.now().toISOString()))) throw notFound();
    },
    async preferences(caller) {
      const stored = await store.preferences(caller.userId ?? '', caller.organizationId ?? '');
      // Opt-out model: what the member did not turn off is on.
      const enabled = (channel: NotificationChannel, type: NotificationType | '*') =>
        stored.find((preference) => preference.channel === channel && preference.type === type)?.enabled ?? true;
      return NOTIFICATION_CHANNELS.map((channel) => ({
        channel,
        enabled: enabled(channel, '*'),
        types: NOTIFICATION_TYPES.map((type) => ({ type, enabled: enabled(channel, type) })),
      }));
    },
    async setPreference(caller, input) {
      if (!caller.userId || !caller.organizationId) return;
      await store.savePreference(
        caller.userId,
        caller.organizationId,
        { channel: input.channel, type: input.type ?? '*', enabled: input.enabled },
        clock.now().toISOString(),
      );
    },
    async send(caller, input) {
      const organizationId = caller.organizationId as string;
      const record = await store.transaction(async (tx) => {
        if (!(await tx.isActiveMember(input.userId, organizationId))) {
          throw new ProblemError(
            'Notifications.RecipientNotMember',
            'The recipient is not an active member of your organization.',
          );
        }
        return insert(tx, { ...input, organizationId });
      });
      if (!record) throw new Error('a notification without a source key was not created');
      await publish([record]);
      return record;
    },
    notify: createNotifications,
    async accepts(userId, organizationId, channel, type) {
      return !(await optedOut(store, userId, organizationId, channel, type));
    },
    find: (id) => store.find(id),
  };
}
