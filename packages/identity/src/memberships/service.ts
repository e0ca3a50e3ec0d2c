import { type AuditMetadata, type Clock, newId, type Page, PageQuery, systemClock, toPage } from '@idt/core';
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
import {
  OrganizationAuditActions,
  type OrganizationAuditContext,
  organizationAuditEntry,
} from '../audit/organization-actions.js';
import type { OrganizationsStore } from '../organizations/store.js';
import type { UsersStore } from '../users/store.js';
import { enrollMember, membershipEviction, type PublishedEnrollment } from './enrollment.js';
import type { ChangeEvent, MembershipChange, MembershipSnapshot, MembershipsStore } from './store.js';

/**
 * What policy decided to do with a membership, with the events that record
 * it and the audit action (none when nothing changed).
 */
type PublishedChange = MembershipChange & {
  readonly events: readonly ChangeEvent[];
  readonly audit?: { readonly action: string; readonly metadata?: AuditMetadata };
};

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
  setRoles(
    actor: AccountsActor,
    organizationId: string,
    userId: string,
    input: SetMemberRolesInput,
    context?: OrganizationAuditContext,
  ): Promise<MemberRecord>;
  /** Removes a membership in any state (same rules as {@link MembershipsService.setRoles}). */
  remove(actor: AccountsActor, organizationId: string, userId: string, context?: OrganizationAuditContext): Promise<void>;
  /** `active` → `suspended` (same rules as {@link MembershipsService.setRoles}). */
  suspend(
    actor: AccountsActor,
    organizationId: string,
    userId: string,
    context?: OrganizationAuditContext,
  ): Promise<MemberRecord>;
  /** `suspended` → `active`. */
  reinstate(
    actor: AccountsActor,
    organizationId: string,
    userId: string,
    context?: OrganizationAuditContext,
  ): Promise<MemberRecord>;
  /** `pending` → `active` with the `user` role. */
  approve(
    actor: AccountsActor,
    organizationId: string,
    userId: string,
    context?: OrganizationAuditContext,
  ): Promise<MemberRecord>;
  /** `pending` → `denied`. */
  deny(actor: AccountsActor, organizationId: string, userId: string, context?: OrganizationAuditContext): Promise<MemberRecord>;
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

/**
 * What enrollment does for a non-member, by the organization's policy;
 * `email` names the user in the audit record of an active enrollment.
 */
function decideEnrollment(
  organization: OrganizationRecord,
  userId: string,
  at: string,
  email: string | null = null,
): PublishedEnrollment | undefined {
  if (organization.status !== 'active') return undefined;
  const organizationId = organization.id;
  switch (organization.enrollmentPolicy) {
    case 'open':
      return {
        status: 'active',
        roles: [MEMBER_ROLE],
        events: [pendingEvent(MemberJoinedEvent, { organizationId, userId, via: 'enrollment' })],
        audit: [
          organizationAuditEntry(
            {
              action: OrganizationAuditActions.memberJoined.action,
              organizationId,
              target: { type: 'user', id: userId, display: email },
              metadata: { via: 'enrollment', roles: [MEMBER_ROLE] },
            },
            { actor: { type: 'user', id: userId, display: email } },
          ),
        ],
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
   * every change shares, and publishes its events, evicts the cached
   * membership and records its audit action in the same transaction.
   */
  async function change(
    actor: AccountsActor,
    organizationId: string,
    userId: string,
    context: OrganizationAuditContext | undefined,
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
      let before: MemberRecord | undefined;
      const { decision, member } = await tx.change(request, (snapshot) => {
        if (!snapshot.member) throw new ProblemError('Identity.MemberNotFound');
        before = snapshot.member;
        return plan(snapshot.member, snapshot);
      });
      await tx.publish(decision.events);
      await tx.evict([membershipEviction(request.userId, request.organizationId)]);
      if (decision.audit && before) {
        const target = { type: 'user', id: before.userId, display: before.email };
        await tx.audit?.([
          organizationAuditEntry({ ...decision.audit, organizationId: request.organizationId, target }, context, actor),
        ]);
      }
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

    async setRoles(actor, organizationId, userId, input, context) {
      const { roles: requested } = SetMemberRolesInput.parse(input);
      return changed(
        change(actor, organizationId, userId, context, (member, snapshot) => {
          if (member.status !== 'active' && member.status !== 'suspended') throw transitionError(member, 'given roles');
          const roles = resolveRoleNames(requested, snapshot.customRoles);
          const added = roles.filter((role) => !member.roles.includes(role));
          const removed = member.roles.filter((role) => !roles.includes(role));
          assertMayAssignRoles(actor, snapshot.actorRoles, [...added, ...removed], snapshot.customRoles);
          assertKeepsAnOwner(snapshot, member, roles.includes(OWNER_ROLE));
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
          const unchanged = added.length + removed.length === 0;
          return {
            kind: 'update',
            status: member.status,
            roles,
            events: unchanged ? [] : [pendingEvent(MembershipRolesChangedEvent, { ...payload, roles: roles.join(' ') })],
            ...(unchanged
              ? {}
              : {
                  audit: {
                    action: OrganizationAuditActions.memberRolesChanged.action,
                    metadata: { roles: [...roles], previousRoles: [...member.roles], added, removed },
                  },
                }),
          };
        }),
      );
    },

    async remove(actor, organizationId, userId, context) {
      await change(actor, organizationId, userId, context, (member, snapshot) => {
        assertMayManage(actor, member, snapshot);
        assertKeepsAnOwner(snapshot, member, false);
        const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
        return {
          kind: 'remove',
          events: [pendingEvent(MembershipRemovedEvent, payload)],
          audit: {
            action: OrganizationAuditActions.memberRemoved.action,
            metadata: { status: member.status, roles: [...member.roles] },
          },
        };
      });
    },

    suspend: (actor, organizationId, userId, context) =>
      changed(
        change(actor, organizationId, userId, context, (member, snapshot) => {
          if (member.status !== 'active') throw transitionError(member, 'suspended');
          assertMayManage(actor, member, snapshot);
          assertKeepsAnOwner(snapshot, member, false);
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'suspended',
            roles: member.roles,
            events: [pendingEvent(MembershipSuspendedEvent, payload)],
            audit: { action: OrganizationAuditActions.memberSuspended.action, metadata: { roles: [...member.roles] } },
          };
        }),
      ),

    reinstate: (actor, organizationId, userId, context) =>
      changed(
        change(actor, organizationId, userId, context, (member, snapshot) => {
          if (member.status !== 'suspended') throw transitionError(member, 'reinstated');
          assertMayManage(actor, member, snapshot);
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, changedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'active',
            roles: member.roles,
            events: [pendingEvent(MembershipReinstatedEvent, payload)],
            audit: { action: OrganizationAuditActions.memberReinstated.action, metadata: { roles: [...member.roles] } },
          };
        }),
      ),

    approve: (actor, organizationId, userId, context) =>
      changed(
        change(actor, organizationId, userId, context, (member, snapshot) => {
          if (member.status !== 'pending') throw transitionError(member, 'approved');
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, decidedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'active',
            roles: [MEMBER_ROLE],
            decided: true,
            events: [pendingEvent(MembershipApprovedEvent, payload)],
            audit: { action: OrganizationAuditActions.memberApproved.action, metadata: { roles: [MEMBER_ROLE] } },
          };
        }),
      ),

    deny: (actor, organizationId, userId, context) =>
      changed(
        change(actor, organizationId, userId, context, (member, snapshot) => {
          if (member.status !== 'pending') throw transitionError(member, 'denied');
          const payload = { organizationId: snapshot.organization.id, userId: member.userId, decidedByUserId: actor.userId };
          return {
            kind: 'update',
            status: 'denied',
            roles: [],
            decided: true,
            events: [pendingEvent(MembershipDeniedEvent, payload)],
            audit: { action: OrganizationAuditActions.memberDenied.action },
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
      const account = await users.find(user);
      if (!account) throw new ProblemError('Identity.UserNotFound');
      const status = await enrollMember(
        memberships,
        { organizationId: organization, userId: user, membershipId: newId(), at },
        (current) => decideEnrollment(current, user, at, account.email),
      );
      return status ?? 'not_a_member';
    },
  };
}
