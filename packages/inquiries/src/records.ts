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
