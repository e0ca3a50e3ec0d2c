import type { InquiryDomainEvent } from './events.js';
import type { InquiryStatus } from './status.js';

/** An inquiry as stored: the response fields plus the organization and the submitter's IP address. */
export interface InquiryRecord {
  readonly id: string;
  readonly organizationId: string;
  readonly name: string;
  readonly email: string;
  readonly phone: string;
  readonly company: string | null;
  /** The submitting user; `null` for a service account. */
  readonly submitterId: string | null;
  /** Kept for abuse handling; never part of a response. */
  readonly submitterIp: string | null;
  readonly projectType: string;
  readonly budgetRange: string;
  readonly timeline: string;
  readonly message: string;
  readonly status: InquiryStatus;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC; `null` until the first change. */
  readonly updatedAt: string | null;
}

/** A comment on an inquiry. */
export interface CommentRecord {
  readonly id: string;
  readonly organizationId: string;
  readonly inquiryId: string;
  /** The user id, or the client id of a service account. */
  readonly authorId: string;
  readonly authorName: string;
  readonly content: string;
  readonly isInternal: boolean;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

/** Which inquiries of an organization to list. */
export interface InquiryFilter {
  readonly status?: InquiryStatus;
  /** Only the inquiries of this submitter. */
  readonly submitterId?: string;
}

/**
 * Persistence of inquiries and their comments. Every method is scoped to one
 * organization: a row of another organization does not exist for it.
 */
export interface InquiriesStore {
  /** Stores a new inquiry and, in the same transaction, the integration events its domain events bridge to. */
  insert(inquiry: InquiryRecord, events: readonly InquiryDomainEvent[]): Promise<void>;
  find(organizationId: string, id: string): Promise<InquiryRecord | undefined>;
  /** Newest first. */
  list(organizationId: string, filter: InquiryFilter): Promise<InquiryRecord[]>;
  /**
   * Moves an inquiry from `from` to `to` in one statement, only while its
   * status is still `from`: of concurrent moves from one status, exactly one
   * wins. Returns the updated inquiry, or `undefined` when no row matched
   * (missing, or moved meanwhile).
   */
  transition(
    organizationId: string,
    id: string,
    from: InquiryStatus,
    to: InquiryStatus,
    at: string,
  ): Promise<InquiryRecord | undefined>;
  /** Stores a comment; `inquiry-missing` when its inquiry is not in the organization. */
  insertComment(comment: CommentRecord): Promise<'created' | 'inquiry-missing'>;
  findComment(organizationId: string, inquiryId: string, commentId: string): Promise<CommentRecord | undefined>;
  /** Oldest first; internal comments only when asked for. */
  listComments(organizationId: string, inquiryId: string, options: { includeInternal: boolean }): Promise<CommentRecord[]>;
}
