import type { PendingEvent } from '@idt/core';

/** An event written in the transaction of a change (payloads are typed by their definitions). */
export type ChangeEvent = PendingEvent<Record<string, unknown>>;

import type { PageRequest, PageSlice } from '@idt/core';
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
      readonly events: readonly ChangeEvent[];
    }
  | { readonly kind: 'remove'; readonly events: readonly ChangeEvent[] };

/** A new membership that enrollment decided on. */
export interface EnrollmentDecision {
  readonly status: 'active' | 'pending';
  readonly roles: readonly string[];
  readonly events: readonly ChangeEvent[];
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

/** Persistence of memberships and their roles. */
export interface MembershipsStore {
  /** Members of an organization, oldest membership first. */
  list(organizationId: string, request: MemberListRequest): Promise<PageSlice<MemberRecord>>;
  /** One member of an organization. */
  find(organizationId: string, userId: string): Promise<MemberRecord | undefined>;
  /** The state of a user's membership, without locking. */
  statusOf(userId: string, organizationId: string): Promise<MembershipStatus | undefined>;
  /**
   * The atomic membership change. In one transaction: locks the organization
   * row (so every membership change of one organization runs one at a time,
   * on Postgres and SQLite alike), reads the snapshot, calls `decide` (which
   * throws to refuse: nothing is written), applies the change, writes its
   * events and evicts the cached membership.
   *
   * @returns the membership after the change; `undefined` after a removal.
   * @throws ProblemError `Identity.OrganizationNotFound` when the organization does not exist.
   */
  change(
    request: MembershipChangeRequest,
    decide: (snapshot: MembershipSnapshot) => MembershipChange,
  ): Promise<MemberRecord | undefined>;
  /**
   * Enrollment of a non-member. In one transaction: locks the organization
   * row, and when the user has a membership already returns its state
   * unchanged; else calls `decide` with the organization and inserts what it
   * returns (nothing when it returns `undefined`), with its events. Exactly
   * one of several concurrent enrollments of the same user inserts.
   *
   * @returns the membership state, or `undefined` when the user is not a member.
   */
  enroll(
    request: { readonly organizationId: string; readonly userId: string; readonly membershipId: string; readonly at: string },
    decide: (organization: OrganizationRecord) => EnrollmentDecision | undefined,
  ): Promise<MembershipStatus | undefined>;
}
