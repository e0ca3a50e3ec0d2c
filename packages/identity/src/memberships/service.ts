import { type Clock, newId, type Page, PageQuery, systemClock, toPage } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import type { MembershipStatus } from '../access/store.js';
import { type AccountsActor, authorizeInOrganization } from '../accounts/actor.js';
import {
  MemberJoinedEvent,
  MembershipApprovedEvent,
  MembershipDeniedEvent,
  MembershipReinstatedEvent,
  MembershipRemovedEvent,
  MembershipRequestedEvent,
  MembershipRolesChangedEvent,
  MembershipSuspendedEvent,
  pendingEvent,
} from '../accounts/events.js';
import { type MemberRecord, MembershipStatusSchema, type OrganizationRecord } from '../accounts/records.js';
import { assertMayAssignRoles, MEMBER_ROLE, OWNER_ROLE, RoleListSchema, resolveRoleNames } from '../accounts/role-policy.js';
import type { OrganizationsStore } from '../organizations/store.js';
import type { UsersStore } from '../users/store.js';
import { enrollMember, membershipEviction, type PublishedEnrollment } from './enrollment.js';
import type { ChangeEvent, MembershipChange, MembershipSnapshot, MembershipsStore } from './store.js';

/** What policy decided to do with a membership, with the events that record it. */
type PublishedChange = MembershipChange & { readonly events: readonly ChangeEvent[] };

/** Query of `GET /v1/identity/organizations/{orgId}/members`: paging and an optional `status` filter. */
export const MemberListQuery = PageQuery.extend({ status: MembershipStatusSchema.optional() });

/** Input of {@link MembershipsService.list}. */
export type MemberListQuery = z.input<typeof MemberListQuery>;

/** The body of `PUT /v1/identity/organizations/{orgId}/members/{userId}/roles`. */
export const SetMemberRolesInput = z.object({
  roles: RoleListSchema.describe('The complete new role list: built-in or custom role names, case-insensitive.'),
});

/** Input of {@link MembershipsService.setRoles}. */
export type SetMemberRolesInput = z.input<typeof SetMemberRolesInput>;

/**
 * What enrollment found or did: the membership state, or `not_a_member`
 * when the organization admits no one without an invitation (SPEC 3.4, 5.2).
 */
export type EnrollmentOutcome = MembershipStatus | 'not_a_member';

/** Memberships: the member list, role changes, the membership states and enrollment. */
export interface MembershipsService {
  /** Members of the caller's organization (`UsersRead`), optionally of one state. */
  list(actor: AccountsActor, organizationId: string, query?: MemberListQuery): Promise<Page<MemberRecord>>;
  /**
   * Replaces an active or suspended member's roles (`OrganizationsManageMembers`).
   * Only owners grant or take `owner`; no one grants or takes a role beyond
   * their own permissions; the last active owner keeps `owner`.
   *
   * @throws ProblemError `Identity.LastOwner`, `Identity.InvalidMembershipTransition` (422),
   *   `Auth.Forbidden`, `Identity.RoleExceedsPermissions` (403), `Identity.MemberNotFound` (404);
   *   a validation problem keyed `roles[i]` for an unknown role.
   */
  setRoles(actor: AccountsActor, organizationId: string, userId: string, input: SetMemberRolesInput): Promise<MemberRecord>;
  /** Removes a membership in any state (same rules as {@link MembershipsService.setRoles}). */
  remove(actor: AccountsActor, organizationId: string, userId: string): Promise<void>;
  /** `active` → `suspended` (same rules as {@link MembershipsService.setRoles}). */
  suspend(actor: AccountsActor, organizationId: string, userId: string): Promise<MemberRecord>;
  /** `suspended` → `active`. */
  reinstate(actor: AccountsActor, organizationId: string, userId: string): Promise<MemberRecord>;
  /** `pending` → `active` with the `user` role. */
  approve(actor: AccountsActor, organizationId: string, userId: string): Promise<MemberRecord>;
  /** `pending` → `denied`. */
  deny(actor: AccountsActor, organizationId: string, userId: string): Promise<MemberRecord>;
  /**
   * Applies the organization's enrollment policy to a user signing in to it
   * (called at authorize time). A member keeps their state; a non-member of an
   * `open` organization becomes an active `user`, of an `approval_required`
   * one a pending member (publishing `MembershipRequestedEvent`), of an
   * `invitation_only` or suspended one stays out (nothing is written).
   * Idempotent; concurrent calls create one membership.
   *
   * @throws ProblemError `Identity.OrganizationNotFound` / `Identity.UserNotFound` (404).
   */
  enroll(userId: string, organizationId: string): Promise<EnrollmentOutcome>;
}

/** Dependencies of {@link createMembershipsService}. */
export interface MembershipsServiceOptions {
  readonly memberships: MembershipsStore;
  readonly organizations: OrganizationsStore;
  readonly users: UsersStore;
  readonly clock?: Clock;
}

/** Whether a member is one of the active owners the last-owner rule protects. */
function isCountedOwner(snapshot: MembershipSnapshot, member: MemberRecord): boolean {
  return snapshot.activeOwnerIds.includes(member.userId);
}

/** @throws ProblemError `Identity.LastOwner` when the change would leave no active owner. */
function assertKeepsAnOwner(snapshot: MembershipSnapshot, member: MemberRecord, staysOwner: boolean): void {
  if (!staysOwner && isCountedOwner(snapshot, member) && snapshot.activeOwnerIds.length <= 1) {
    throw new ProblemError(
      'Identity.LastOwner',
      'This is the last active owner of the organization; make another member owner first.',
    );
  }
}

function transitionError(member: MemberRecord, action: string): ProblemError {
  return new ProblemError('Identity.InvalidMembershipTransition', `A ${member.status} membership cannot be ${action}.`);
}

/** What enrollment does for a non-member, by the organization's policy. */
function decideEnrollment(organization: OrganizationRecord, userId: string, at: string): PublishedEnrollment | undefined {
  if (organization.status !== 'active') return undefined;
  const organizationId = organization.id;
  switch (organization.enrollmentPolicy) {
    case 'open':
      return {
        status: 'active',
        roles: [MEMBER_ROLE],
        events: [pendingEvent(MemberJoinedEvent, { organizationId, userId, via: 'enrollment' })],
      };
    case 'approval_required':
      return {
        status: 'pending',
        roles: [],
        events: [pendingEvent(MembershipRequestedEvent, { organizationId, userId, requestedAt: at })],
      };
    default:
      return undefined;
  }
}

/**
 * The memberships service.
 *
 * @example
 * const memberships = createMembershipsService({ memberships, organizations, users });
 * await memberships.approve(principal, orgId, userId);
 * const state = await memberships.enroll(userId, orgId); // 'active' | 'pending' | … | 'not_a_member'
 */
export function createMembershipsService(options: MembershipsServiceOptions): MembershipsService {
  const { memberships, organizations, users } = options;
  const clock = options.clock ?? systemClock;

  /**
   * Runs a membership change under the organization's lock, with the rules
   * every change shares, and publishes its events and evicts the cached
   * membership in the same transaction.
   */
  async function change(
    actor: AccountsActor,
    organizationId: string,
    userId: string,
    plan: (member: MemberRecord, snapshot: MembershipSnapshot) => PublishedChange,
  ): Promise<MemberRecord | undefined> {
    authorizeInOrganization(actor, organizationId, 'OrganizationsManageMembers');
    const request = {
      organizationId: organizationId.toLowerCase(),
      userId: userId.toLowerCase(),
      actorUserId: actor.userId,
      at: clock.now().toISOString(),
    };
    return memberships.transaction(async (tx) => {
      const { decision, member } = await tx.change(request, (snapshot) => {
        if (!snapshot.member) throw new ProblemError('Identity.MemberNotFound');
        return plan(snapshot.member, snapshot);
      });
      await tx.publish(decision.events);
      await tx.evict([membershipEviction(request.userId, request.organizationId)]);
      return member;
    });
  }

  /** The caller must be able to grant every role the member holds (owners only for owners). */
  function assertMayManage(actor: AccountsActor, member: MemberRecord, snapshot: MembershipSnapshot): void {
    assertMayAssignRoles(actor, snapshot.actorRoles, member.roles, snapshot.customRoles);
  }

  async function changed(result: Promise<MemberRecord | undefined>): Promise<MemberRecord> {
    const member = await result;
    if (!member) throw new ProblemError('Identity.MemberNotFound');
    return member;
  }

  return {
    async list(actor, organizationId, query = {}) {
      authorizeInOrganization(actor, organizationId, 'UsersRead');
      const request = MemberListQuery.parse(query);
      return toPage(await memberships.list(organizationId.toLowerCase(), request), request);
    },

    async setRoles(actor, organizationId, userId, input) {
      const { roles: requested } = SetMemberRolesInput.parse(input);
      return changed(
        change(actor, organizationId, userId, (member, snapshot) => {
          if (member.status !== 'active' && member.status !== 'suspended') throw transitionError(member, 'given roles');
          const roles = resolveRoleNames(requested, snapshot.customRoles);
          const added = roles.filter((role) => !member.roles.includes(role));
          const removed = member.roles.filter((role) => !roles.includes(role));
          assertMayAssignRoles(actor, snapshot.actorRoles, [...added, ...removed], snapshot.customRoles);
          assertKeepsAnOwner(snapshot, member, roles.includes(OWNER_ROLE));
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
          return {
            kind: 'update',
            status: member.status,
            roles,
            events:
              added.length + removed.length === 0
                ? []
                : [pendingEvent(MembershipRolesChangedEvent, { ...payload, roles: roles.join(' ') })],
          };
        }),
      );
    },

    async remove(actor, organizationId, userId) {
      await change(actor, organizationId, userId, (member, snapshot) => {
        assertMayManage(actor, member, snapshot);
        assertKeepsAnOwner(snapshot, member, false);
        const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
        return { kind: 'remove', events: [pendingEvent(MembershipRemovedEvent, payload)] };
      });
    },

    suspend: (actor, organizationId, userId) =>
      changed(
        change(actor, organizationId, userId, (member, snapshot) => {
          if (member.status !== 'active') throw transitionError(member, 'suspended');
          assertMayManage(actor, member, snapshot);
          assertKeepsAnOwner(snapshot, member, false);
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'suspended',
            roles: member.roles,
            events: [pendingEvent(MembershipSuspendedEvent, payload)],
          };
        }),
      ),

    reinstate: (actor, organizationId, userId) =>
      changed(
        change(actor, organizationId, userId, (member, snapshot) => {
          if (member.status !== 'suspended') throw transitionError(member, 'reinstated');
          assertMayManage(actor, member, snapshot);
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'active',
            roles: member.roles,
            events: [pendingEvent(MembershipReinstatedEvent, payload)],
          };
        }),
      ),

    approve: (actor, organizationId, userId) =>
      changed(
        change(actor, organizationId, userId, (member, snapshot) => {
          if (member.status !== 'pending') throw transitionError(member, 'approved');
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, decidedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'active',
            roles: [MEMBER_ROLE],
            decided: true,
            events: [pendingEvent(MembershipApprovedEvent, payload)],
          };
        }),
      ),

    deny: (actor, organizationId, userId) =>
      changed(
        change(actor, organizationId, userId, (member, snapshot) => {
          if (member.status !== 'pending') throw transitionError(member, 'denied');
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, decidedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'denied',
            roles: [],
            decided: true,
            events: [pendingEvent(MembershipDeniedEvent, payload)],
          };
        }),
      ),

    async enroll(userId, organizationId) {
      const user = userId.toLowerCase();
      const organization = organizationId.toLowerCase();
      const existing = await memberships.statusOf(user, organization);
      if (existing) return existing;
      const found = await organizations.find(organization);
      if (!found) throw new ProblemError('Identity.OrganizationNotFound');
      const at = clock.now().toISOString();
      // Most sign-ins to invitation-only organizations end here, without a write lock.
      if (!decideEnrollment(found, user, at)) return 'not_a_member';
      if (!(await users.find(user))) throw new ProblemError('Identity.UserNotFound');
      const status = await enrollMember(
        memberships,
        { organizationId: organization, userId: user, membershipId: newId(), at },
        (current) => decideEnrollment(current, user, at),
      );
      return status ?? 'not_a_member';
    },
  };
}
