import type { PendingEvent } from '@idt/core';

/** An event a service publishes in the transaction of a change (payloads are typed by their definitions). */
export type ChangeEvent = PendingEvent<Record<string, unknown>>;

import type { PageRequest, PageSlice, UnitOfWork } from '@idt/core';
import type { MembershipStatus } from '../access/store.js';
import type { MemberRecord, OrganizationRecord } from '../accounts/records.js';

/** What membership policy sees of an organization inside a write transaction. */
export interface OrganizationContext {
  readonly organization: OrganizationRecord;
  /** The acting user's roles in the organization; empty unless their membership is active. */
  readonly actorRoles: readonly string[];
  /** The organization's custom roles: normalized name to permissions. */
  readonly customRoles: ReadonlyMap<string, readonly string[]>;
  /** The active owners: users (active) whose active membership holds `owner`. */
  readonly activeOwnerIds: readonly string[];
}

/** An organization and one of its memberships, read under the organization's lock. */
export interface MembershipSnapshot extends OrganizationContext {
  /** The membership to change; `undefined` when the user is not a member. */
  readonly member: MemberRecord | undefined;
}

/** What policy decided to do with a membership. */
export type MembershipChange =
  | {
      readonly kind: 'update';
      readonly status: MembershipStatus;
      /** The complete new role list, normalized. */
      readonly roles: readonly string[];
      /** Records the acting user as the one who decided a pending request. */
      readonly decided?: boolean;
    }
  | { readonly kind: 'remove' };

/** A new membership that enrollment decided on. */
export interface EnrollmentDecision {
  readonly status: 'active' | 'pending';
  readonly roles: readonly string[];
}

/** Filters of a member list. */
export interface MemberListRequest extends PageRequest {
  readonly status?: MembershipStatus;
}

/** Who changes which membership, when. */
export interface MembershipChangeRequest {
  readonly organizationId: string;
  readonly userId: string;
  /** The acting user (for `actorRoles`); `null` for a service account. */
  readonly actorUserId: string | null;
  /** ISO 8601 UTC. */
  readonly at: string;
}

/** A request of {@link MembershipsWrites.enroll}. */
export interface EnrollmentRequest {
  readonly organizationId: string;
  readonly userId: string;
  /** The id of the membership, should one be inserted. */
  readonly membershipId: string;
  /** ISO 8601 UTC. */
  readonly at: string;
}

/**
 * The membership primitives a service runs in one transaction (see
 * {@link MembershipsStore.transaction}). Each locks the organization row
 * first, so every membership change of one organization runs one at a time,
 * on Postgres and SQLite alike. None publishes events or evicts caches.
 */
export interface MembershipsWrites {
  /**
   * The atomic membership change: locks the organization row, reads the
   * snapshot, calls `decide` (which throws to refuse: nothing is written)
   * and applies what it returns.
   *
   * @returns the decision and the membership after the change (`undefined` after a removal).
   * @throws ProblemError `Identity.OrganizationNotFound` when the organization does not exist,
   *   `Identity.MemberNotFound` when the user is not a member.
   */
  change<D extends MembershipChange>(
    request: MembershipChangeRequest,
    decide: (snapshot: MembershipSnapshot) => D,
  ): Promise<{ readonly decision: D; readonly member: MemberRecord | undefined }>;
  /**
   * Enrollment of a non-member: locks the organization row, and when the
   * user has a membership already answers its state unchanged; else calls
   * `decide` with the organization and inserts what it returns (nothing when
   * it returns `undefined`). Exactly one of several concurrent enrollments
   * of the same user inserts.
   *
   * @returns the membership state (`undefined` when the user is not a
   *   member) and the decision when one was inserted.
   * @throws ProblemError `Identity.OrganizationNotFound` when the organization does not exist.
   */
  enroll<D extends EnrollmentDecision>(
    request: EnrollmentRequest,
    decide: (organization: OrganizationRecord) => D | undefined,
  ): Promise<{ readonly status: MembershipStatus | undefined; readonly inserted?: D }>;
}

/**
 * Persistence of memberships and their roles: reads outside a transaction,
 * the {@link MembershipsWrites} primitives inside one a service opens.
 */
export interface MembershipsStore extends UnitOfWork<MembershipsWrites> {
  /** Members of an organization, oldest membership first. */
  list(organizationId: string, request: MemberListRequest): Promise<PageSlice<MemberRecord>>;
  /** One member of an organization. */
  find(organizationId: string, userId: string): Promise<MemberRecord | undefined>;
  /** The state of a user's membership, without locking. */
  statusOf(userId: string, organizationId: string): Promise<MembershipStatus | undefined>;
}
