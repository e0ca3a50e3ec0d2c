import type { UnitOfWork } from '@idt/core';
import type { AnnouncementTarget, AnnouncementType } from './schemas.js';
import type { AnnouncementStatus } from './status.js';

/** A stored announcement. */
export interface AnnouncementRecord {
  readonly id: string;
  /** The organization that owns it (the platform organization for target `all`). */
  readonly organizationId: string;
  readonly title: string;
  readonly content: string;
  readonly type: AnnouncementType;
  readonly target: AnnouncementTarget;
  readonly targetValue: string | null;
  readonly status: AnnouncementStatus;
  readonly publishAt: string | null;
  readonly expiresAt: string | null;
  readonly isPinned: boolean;
  readonly isDismissible: boolean;
  readonly actionUrl: string | null;
  readonly actionLabel: string | null;
  readonly createdBy: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
}

/** What an announcement's fields may change to (its status is decided by the service). */
export type AnnouncementChange = Omit<AnnouncementRecord, 'id' | 'organizationId' | 'createdBy' | 'createdAt'>;

/**
 * The announcement primitives the announcements service runs in one
 * transaction (see {@link AnnouncementsStore.transaction}). None of them
 * publishes events: the service does, through the transaction's effects.
 */
export interface AnnouncementsWrites {
  /**
   * Moves the status while it is still `from`, in one conditional statement
   * (`UPDATE ... WHERE id = ? AND status = from`): of concurrent moves from
   * one status exactly one wins. `publishAt` is set when given.
   *
   * @returns the moved announcement, or `undefined` when it moved meanwhile (or is missing).
   */
  transition(
    id: string,
    from: AnnouncementStatus,
    to: AnnouncementStatus,
    at: string,
    publishAt?: string,
  ): Promise<AnnouncementRecord | undefined>;
}

/**
 * Persistence of announcements and dismissals: reads and single-statement
 * writes outside a transaction, and the {@link AnnouncementsWrites}
 * primitives inside one the announcements service opens (which also writes
 * `AnnouncementPublishedEvent` to the outbox when it publishes, in that
 * transaction). Status changes are compare-and-set: of concurrent moves
 * from one status exactly one wins.
 */
export interface AnnouncementsStore extends UnitOfWork<AnnouncementsWrites> {
  insert(record: AnnouncementRecord): Promise<void>;
  /** An announcement of the organization. */
  find(organizationId: string, id: string): Promise<AnnouncementRecord | undefined>;
  /** Every announcement of the organization, newest first, optionally of one status. */
  list(organizationId: string, status?: AnnouncementStatus): Promise<AnnouncementRecord[]>;
  /** Replaces the fields while the status is still `expected`; `undefined` when it moved (or is missing, or of another organization). */
  update(
    organizationId: string,
    id: string,
    expected: AnnouncementStatus,
    change: AnnouncementChange,
  ): Promise<AnnouncementRecord | undefined>;
  /**
   * Published announcements the organization's members may see at `now`
   * (their own organization's, and every `all` one), not dismissed by
   * `userId`; role targeting is left to the caller.
   */
  active(organizationId: string, userId: string | null, now: string): Promise<AnnouncementRecord[]>;
  /** Records a dismissal (idempotent). */
  dismiss(announcementId: string, userId: string, at: string): Promise<void>;
  /** Scheduled announcements whose `publishAt` is due, and Published ones whose `expiresAt` passed, by id, at most `limit`. */
  due(now: string, limit: number): Promise<AnnouncementRecord[]>;
}
