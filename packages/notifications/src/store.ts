import type { NotificationChannel, NotificationRecord, NotificationType } from './schemas.js';

/**
 * Whose notifications a statement reads or changes: the user's unarchived
 * notifications of the organization and the personal ones (no
 * organization). Another user's notification, one of another organization
 * or an archived one does not exist for it.
 */
export interface NotificationOwner {
  readonly userId: string;
  readonly organizationId: string;
}

/** A notification to store: its record before anyone read it, and the key that makes its creation idempotent. */
export interface StoredNotification {
  readonly id: string;
  readonly userId: string;
  /** `null`: personal, shown in every organization of the user. */
  readonly organizationId: string | null;
  readonly type: NotificationType;
  readonly title: string;
  readonly message: string;
  readonly actionUrl: string | null;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** Unique per user; `null`: none. */
  readonly sourceKey: string | null;
}

/** One stored preference of a member: `type` is a notification type, or `*` for the whole channel. */
export interface NotificationPreference {
  readonly channel: NotificationChannel;
  readonly type: NotificationType | '*';
  readonly enabled: boolean;
}

/** Which page of a listing to read. */
export interface NotificationSlice {
  readonly limit: number;
  readonly offset: number;
}

/**
 * Persistence of notifications, members' preferences and the log of mails
 * sent. It holds no policy: who is notified, who opted out and what a caller
 * may see are decided by the service.
 */
export interface NotificationStore {
  /**
   * Runs `work` against this store in one transaction: it commits when
   * `work` resolves and rolls back when it throws.
   */
  transaction<T>(work: (store: NotificationStore) => Promise<T>): Promise<T>;
  /**
   * Stores a notification in one statement unless its user has one with
   * the same source key already: of concurrent inserts of one key, exactly
   * one wins. Whether it was stored.
   */
  insert(notification: StoredNotification): Promise<boolean>;
  /** A notification by id, whoever owns it. */
  find(id: string): Promise<NotificationRecord | undefined>;
  /** The owner's notifications, newest first (ties by id, descending), and how many there are in all. */
  list(owner: NotificationOwner, slice: NotificationSlice): Promise<{ items: NotificationRecord[]; totalCount: number }>;
  /** How many of the owner's notifications are unread. */
  countUnread(owner: NotificationOwner): Promise<number>;
  /**
   * Marks one of the owner's notifications read at `at`; one read already
   * keeps its time. Whether the owner has it.
   */
  markRead(owner: NotificationOwner, id: string, at: string): Promise<boolean>;
  /** Marks every unread notification of the owner read at `at`. */
  markAllRead(owner: NotificationOwner, at: string): Promise<void>;
  /** Archives one of the owner's notifications at `at`. Whether the owner had it. */
  archive(owner: NotificationOwner, id: string, at: string): Promise<boolean>;
  /** The preferences a member stored in an organization; none stored means none here. */
  preferences(userId: string, organizationId: string): Promise<NotificationPreference[]>;
  /** Stores one preference of a member, replacing the one of the same channel and type. */
  savePreference(userId: string, organizationId: string, preference: NotificationPreference, at: string): Promise<void>;
  /**
   * Whether the user is an active member of the organization. Reads the
   * identity module's memberships, which this module requires.
   */
  isActiveMember(userId: string, organizationId: string): Promise<boolean>;
  /** Whether a mail with this source key went to this recipient (lowercase address). */
  wasMailed(sourceKey: string, recipient: string): Promise<boolean>;
  /** Records a mail sent; a second record of the same source key and recipient is ignored. */
  recordMail(sourceKey: string, recipient: string, at: string): Promise<void>;
}
