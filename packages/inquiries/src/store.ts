import type { UnitOfWork } from '@idt/core';
import type { CommentRecord, InquiryFilter, InquiryRecord } from './records.js';
import type { InquiryStatus } from './status.js';

export type { CommentRecord, InquiryFilter, InquiryRecord } from './records.js';

/**
 * The inquiry primitives the service runs in one transaction (see
 * {@link InquiriesStore.transaction}). None of them publishes events: the
 * service does, through the transaction's effects.
 */
export interface InquiriesWrites {
  /** Stores a new inquiry. */
  insert(inquiry: InquiryRecord): Promise<void>;
}

/**
 * Persistence of inquiries and their comments: reads and single-statement
 * writes outside a transaction, and the {@link InquiriesWrites} primitives
 * inside one the inquiries service opens (which also publishes
 * `InquirySubmittedEvent`, in that transaction). Every method is scoped to
 * one organization: a row of another organization does not exist for it.
 */
export interface InquiriesStore extends UnitOfWork<InquiriesWrites> {
  find(organizationId: string, id: string): Promise<InquiryRecord | undefined>;
  /** Newest first (`created_at`, then id). */
  list(organizationId: string, filter: InquiryFilter): Promise<InquiryRecord[]>;
  /**
   * Moves an inquiry from `from` to `to` in one statement, only while its
   * status is still `from`: of concurrent moves from one status, exactly one
   * wins. Returns the updated inquiry, or `undefined` when no row matched
   * (missing, of another organization, or moved meanwhile).
   */
  transition(
    organizationId: string,
    id: string,
    from: InquiryStatus,
    to: InquiryStatus,
    at: string,
  ): Promise<InquiryRecord | undefined>;
  /**
   * Stores a comment in one transaction of its own, after taking its
   * inquiry's row (so a concurrent delete cannot leave it orphaned);
   * `inquiry-missing` (nothing written) when the inquiry is not in the
   * comment's organization.
   */
  insertComment(comment: CommentRecord): Promise<'created' | 'inquiry-missing'>;
  findComment(organizationId: string, inquiryId: string, commentId: string): Promise<CommentRecord | undefined>;
  /** Oldest first (`created_at`, then id); internal comments only when asked for. */
  listComments(organizationId: string, inquiryId: string, options: { includeInternal: boolean }): Promise<CommentRecord[]>;
}
