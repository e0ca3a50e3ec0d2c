import type { PageRequest, PageSlice, UnitOfWork } from '@idt/core';
import type { MembershipStatus } from '../access/store.js';
import type { UserOrganization } from '../accounts/records.js';
import type { MembershipSnapshot, OrganizationContext } from '../memberships/store.js';

/** An invitation as stored; `expired` is derived from `expiresAt` by the service. */
export interface StoredInvitation {
  readonly id: string;
  readonly organizationId: string;
  readonly email: string;
  readonly roles: readonly string[];
  readonly status: 'pending' | 'accepted' | 'revoked';
  /** ISO 8601 UTC. */
  readonly expiresAt: string;
  readonly createdAt: string;
  readonly invitedByUserId: string | null;
}

/** What invitation policy sees when creating one, under the organization's lock. */
export interface InvitationSnapshot extends OrganizationContext {
  /** The membership state of the user who has the invited address, if any. */
  readonly memberStatus: MembershipStatus | undefined;
  /** Whether a pending invitation for the address expires after the request time. */
  readonly hasPendingInvitation: boolean;
}

/** What invitation policy sees when one is accepted, under the organization's lock. */
export interface AcceptanceSnapshot extends MembershipSnapshot {
  readonly invitation: StoredInvitation;
  /** The accepting user's e-mail address (normalized). */
  readonly userEmail: string;
}

/** The membership an accepted invitation results in. */
export interface AcceptanceDecision {
  readonly roles: readonly string[];
}

/** The invitation that creation decided on. */
export interface InvitationDecision {
  readonly invitation: StoredInvitation;
}

/** What revoking an invitation found. */
export type InvitationRevocation = 'revoked' | 'already-revoked' | 'accepted' | 'not-found';

/**
 * The invitation primitives a service runs in one transaction (see
 * {@link InvitationsStore.transaction}); none publishes events or evicts caches.
 */
export interface InvitationsWrites {
  /**
   * Locks the organization row, reads the snapshot, calls `decide` (which
   * throws to refuse: nothing is written) and inserts the invitation it returns.
   *
   * @returns the decision.
   * @throws ProblemError `Identity.OrganizationNotFound` when the organization does not exist.
   */
  create<D extends InvitationDecision>(
    request: {
      readonly organizationId: string;
      readonly email: string;
      readonly actorUserId: string | null;
      readonly at: string;
    },
    decide: (snapshot: InvitationSnapshot) => D,
  ): Promise<D>;
  /**
   * Revokes a pending invitation of the organization with one conditional
   * update (`UPDATE … WHERE status = 'pending'`: exactly one concurrent caller
   * gets `revoked`); else answers what it found.
   */
  revoke(organizationId: string, invitationId: string, at: string): Promise<InvitationRevocation>;
  /**
   * The atomic acceptance: locks the invitation's organization, reads the
   * snapshot, calls `decide` (which throws to refuse: nothing is written),
   * consumes the invitation with `UPDATE … WHERE status = 'pending'`
   * (exactly one concurrent acceptance wins; the others get
   * `Identity.InvitationInvalid`) and creates or activates the membership
   * with the decided roles.
   *
   * @returns the decision and the organization with the user's membership.
   * @throws ProblemError `Identity.InvitationInvalid` when the invitation (of
   *   `organizationId`) or the user does not exist or the invitation was consumed meanwhile.
   */
  accept<D extends AcceptanceDecision>(
    request: {
      readonly invitationId: string;
      /** The invitation's organization (whose row is locked). */
      readonly organizationId: string;
      readonly userId: string;
      readonly membershipId: string;
      readonly at: string;
    },
    decide: (snapshot: AcceptanceSnapshot) => D,
  ): Promise<{ readonly decision: D; readonly joined: UserOrganization }>;
}

/**
 * Persistence of invitations: reads outside a transaction, the
 * {@link InvitationsWrites} primitives inside one a service opens.
 */
export interface InvitationsStore extends UnitOfWork<InvitationsWrites> {
  /** Invitations of an organization, newest first. */
  list(organizationId: string, page: PageRequest): Promise<PageSlice<StoredInvitation>>;
  /** An invitation of an organization. */
  find(organizationId: string, invitationId: string): Promise<StoredInvitation | undefined>;
  /** An invitation of any organization (for acceptance by token). */
  findById(invitationId: string): Promise<StoredInvitation | undefined>;
}
