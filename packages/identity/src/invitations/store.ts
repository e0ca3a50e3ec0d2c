import type { PageRequest, PageSlice } from '@idt/core';
import type { MembershipStatus } from '../access/store.js';
import type { UserOrganization } from '../accounts/records.js';
import type { ChangeEvent, MembershipSnapshot, OrganizationContext } from '../memberships/store.js';

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
  readonly events: readonly ChangeEvent[];
}

/** Persistence of invitations. */
export interface InvitationsStore {
  /**
   * In one transaction: locks the organization row, reads the snapshot, calls
   * `decide` (which throws to refuse) and inserts the invitation it returns
   * with the events.
   */
  create(
    request: {
      readonly organizationId: string;
      readonly email: string;
      readonly actorUserId: string | null;
      readonly at: string;
    },
    decide: (snapshot: InvitationSnapshot) => { readonly invitation: StoredInvitation; readonly events: readonly ChangeEvent[] },
  ): Promise<StoredInvitation>;
  /** Invitations of an organization, newest first. */
  list(organizationId: string, page: PageRequest): Promise<PageSlice<StoredInvitation>>;
  /** An invitation of an organization. */
  find(organizationId: string, invitationId: string): Promise<StoredInvitation | undefined>;
  /** An invitation of any organization (for acceptance by token). */
  findById(invitationId: string): Promise<StoredInvitation | undefined>;
  /**
   * Revokes a pending invitation with one conditional update, writing the
   * events only when it did.
   */
  revoke(
    organizationId: string,
    invitationId: string,
    at: string,
    events: readonly ChangeEvent[],
  ): Promise<'revoked' | 'already-revoked' | 'accepted' | 'not-found'>;
  /**
   * The atomic acceptance. In one transaction: locks the invitation's
   * organization, reads the snapshot, calls `decide` (which throws to refuse:
   * nothing is written), consumes the invitation with
   * `UPDATE … WHERE status = 'pending'` (exactly one concurrent acceptance
   * wins; the others get `Identity.InvitationInvalid`), creates or activates
   * the membership with the decided roles, writes the events and evicts the
   * cached membership.
   *
   * @throws ProblemError `Identity.InvitationInvalid` when the invitation does not exist or was consumed meanwhile.
   */
  accept(
    request: { readonly invitationId: string; readonly userId: string; readonly membershipId: string; readonly at: string },
    decide: (snapshot: AcceptanceSnapshot) => AcceptanceDecision,
  ): Promise<UserOrganization>;
}
