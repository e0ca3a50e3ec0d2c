import { type Clock, newId, type Page, PageQuery, systemClock, toPage } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { type AccountsActor, authorizeInOrganization, requireUserId } from '../accounts/actor.js';
import {
  InvitationAcceptedEvent,
  InvitationCreatedEvent,
  InvitationRevokedEvent,
  MemberJoinedEvent,
  pendingEvent,
} from '../accounts/events.js';
import type { InvitationRecord, UserOrganization } from '../accounts/records.js';
import {
  assertMayAssignRoles,
  MEMBER_ROLE,
  permissionsOfRole,
  RoleListSchema,
  resolveRoleNames,
} from '../accounts/role-policy.js';
import {
  OrganizationAuditActions,
  type OrganizationAuditContext,
  organizationAuditEntry,
} from '../audit/organization-actions.js';
import { membershipEviction } from '../memberships/enrollment.js';
import { EmailSchema } from '../schemas.js';
import type { TokenMac } from '../tokens.js';
import type { InvitationsStore, StoredInvitation } from './store.js';

/** How long an invitation can be accepted: 7 days. */
export const INVITATION_LIFETIME_MS = 7 * 86_400_000;

/** The purpose invitation link tokens are bound to (see {@link TokenMac}). */
export const INVITATION_TOKEN_PURPOSE = 'invitation';

/** The body of `POST /v1/identity/organizations/{orgId}/invitations`. */
export const CreateInvitationInput = z.object({
  email: EmailSchema,
  roles: RoleListSchema.optional().describe('The roles the invitee gets; `["user"]` when absent.'),
});

/** Input of {@link InvitationsService.create}. */
export type CreateInvitationInput = z.input<typeof CreateInvitationInput>;

/** The body of `POST /v1/identity/invitations/accept`. */
export const AcceptInvitationInput = z.object({
  token: z
    .string({ error: 'Enter the invitation token.' })
    .trim()
    .min(1, 'Enter the invitation token.')
    .max(512, 'The invitation token is too long.'),
});

/** Input of {@link InvitationsService.accept}. */
export type AcceptInvitationInput = z.input<typeof AcceptInvitationInput>;

/** Input of {@link InvitationsService.list}: `page` and `pageSize`. */
export type InvitationListQuery = z.input<typeof PageQuery>;

/** Invitations to join an organization, and their acceptance. */
export interface InvitationsService {
  /**
   * Invites an address (`OrganizationsManageMembers`) with roles the caller
   * may grant; publishes `InvitationCreatedEvent`, whose handler mails the link.
   *
   * @throws ProblemError `Identity.AlreadyMember` / `Identity.MembershipSuspended` /
   *   `Identity.InvitationExists` (409), `Auth.Forbidden` / `Identity.RoleExceedsPermissions` (403),
   *   `Identity.OrganizationNotFound` (404); a validation problem keyed `roles[i]` for an unknown role.
   */
  create(
    actor: AccountsActor,
    organizationId: string,
    input: CreateInvitationInput,
    context?: OrganizationAuditContext,
  ): Promise<InvitationRecord>;
  /** The organization's invitations, newest first (`OrganizationsManageMembers`). */
  list(actor: AccountsActor, organizationId: string, query?: InvitationListQuery): Promise<Page<InvitationRecord>>;
  /**
   * Revokes a pending invitation; revoking a revoked one does nothing.
   *
   * @throws ProblemError `Identity.InvitationNotFound` (404), `Identity.InvitationNotPending` (422) once accepted.
   */
  revoke(actor: AccountsActor, organizationId: string, invitationId: string, context?: OrganizationAuditContext): Promise<void>;
  /**
   * Accepts an invitation by its link token, as the invited user (no
   * organization needed): the caller becomes an active member with the
   * invited roles (a pending or denied membership is activated). Exactly one
   * of concurrent acceptances wins.
   *
   * @throws ProblemError `Identity.InvitationInvalid` / `Identity.InvitationExpired` (422),
   *   `Identity.InvitationEmailMismatch` (403), `Identity.AlreadyMember` / `Identity.MembershipSuspended` (409).
   */
  accept(actor: AccountsActor, input: AcceptInvitationInput, context?: OrganizationAuditContext): Promise<UserOrganization>;
  /** The link the invitation mail carries: `${authUrl}/invitations/accept?token=…`. */
  acceptUrl(invitationId: string): string;
}

/** Dependencies of {@link createInvitationsService}. */
export interface InvitationsServiceOptions {
  readonly invitations: InvitationsStore;
  readonly tokens: TokenMac;
  /** Where the sign-in pages live; the accept link points there. */
  readonly authUrl: string;
  readonly clock?: Clock;
}

/** The public view of a stored invitation at `now`: a pending one past its expiry reads `expired`. */
export function presentInvitation(invitation: StoredInvitation, now: Date): InvitationRecord {
  const expired = invitation.status === 'pending' && new Date(invitation.expiresAt).getTime() <= now.getTime();
  return {
    id: invitation.id,
    organizationId: invitation.organizationId,
    email: invitation.email,
    roles: [...invitation.roles],
    status: expired ? 'expired' : invitation.status,
    expiresAt: invitation.expiresAt,
    createdAt: invitation.createdAt,
    invitedByUserId: invitation.invitedByUserId,
  };
}

/**
 * The invitations service.
 *
 * @example
 * const invitations = createInvitationsService({ invitations: store, tokens, authUrl: settings.authUrl });
 * await invitations.create(principal, orgId, { email: 'grace@example.com', roles: ['manager'] });
 * await invitations.accept(invitee, { token }); // token from the mailed link
 */
export function createInvitationsService(options: InvitationsServiceOptions): InvitationsService {
  const { invitations, tokens } = options;
  const clock = options.clock ?? systemClock;
  const authUrl = options.authUrl.replace(/\/+$/, '');

  return {
    async create(actor, organizationId, input, context) {
      authorizeInOrganization(actor, organizationId, 'OrganizationsManageMembers');
      const parsed = CreateInvitationInput.parse(input);
      const now = clock.now();
      const request = {
        organizationId: organizationId.toLowerCase(),
        email: parsed.email,
        actorUserId: actor.userId,
        at: now.toISOString(),
      };
      const stored = await invitations.transaction(async (tx) => {
        const { invitation, events } = await tx.create(request, (snapshot) => {
          if (snapshot.memberStatus === 'active') throw new ProblemError('Identity.AlreadyMember');
          if (snapshot.memberStatus === 'suspended') throw new ProblemError('Identity.MembershipSuspended');
          if (snapshot.hasPendingInvitation) throw new ProblemError('Identity.InvitationExists');
          const roles = resolveRoleNames(parsed.roles ?? [MEMBER_ROLE], snapshot.customRoles);
          assertMayAssignRoles(actor, snapshot.actorRoles, roles, snapshot.customRoles);
          const invitation: StoredInvitation = {
            id: newId(),
            organizationId: snapshot.organization.id,
            email: parsed.email,
            roles,
            status: 'pending',
            expiresAt: new Date(now.getTime() + INVITATION_LIFETIME_MS).toISOString(),
            createdAt: now.toISOString(),
            invitedByUserId: actor.userId,
          };
          const payload = {
            invitationId: invitation.id,
            organizationId: invitation.organizationId,
            email: invitation.email,
            invitedByUserId: actor.userId,
          };
          return { invitation, events: [pendingEvent(InvitationCreatedEvent, payload)] };
        });
        await tx.publish(events);
        await tx.audit?.([
          organizationAuditEntry(
            {
              action: OrganizationAuditActions.invitationCreated.action,
              organizationId: invitation.organizationId,
              target: { type: 'invitation', id: invitation.id, display: invitation.email },
              metadata: { roles: [...invitation.roles], expiresAt: invitation.expiresAt },
            },
            context,
            actor,
          ),
        ]);
        return invitation;
      });
      return presentInvitation(stored, now);
    },

    async list(actor, organizationId, query = {}) {
      authorizeInOrganization(actor, organizationId, 'OrganizationsManageMembers');
      const page = PageQuery.parse(query);
      const slice = await invitations.list(organizationId.toLowerCase(), page);
      const now = clock.now();
      return toPage({ ...slice, items: slice.items.map((item) => presentInvitation(item, now)) }, page);
    },

    async revoke(actor, organizationId, invitationId, context) {
      authorizeInOrganization(actor, organizationId, 'OrganizationsManageMembers');
      const organization = organizationId.toLowerCase();
      const id = invitationId.toLowerCase();
      const payload = { invitationId: id, organizationId: organization, revokedByUserId: actor.userId };
      const now = clock.now();
      const at = now.toISOString();
      // Read before the transaction, for the record's display (the revocation itself is the conditional update).
      const known = await invitations.find(organization, id);
      const outcome = await invitations.transaction(async (tx) => {
        const found = await tx.revoke(organization, id, at);
        if (found === 'revoked') {
          await tx.publish([pendingEvent(InvitationRevokedEvent, payload)]);
          await tx.audit?.([
            organizationAuditEntry(
              {
                action: OrganizationAuditActions.invitationRevoked.action,
                organizationId: organization,
                target: { type: 'invitation', id, display: known?.email ?? null },
                metadata: { expired: known ? presentInvitation(known, now).status === 'expired' : false },
              },
              context,
              actor,
            ),
          ]);
        }
        return found;
      });
      if (outcome === 'not-found') throw new ProblemError('Identity.InvitationNotFound');
      if (outcome === 'accepted') throw new ProblemError('Identity.InvitationNotPending');
    },

    async accept(actor, input, context) {
      const userId = requireUserId(actor);
      const { token } = AcceptInvitationInput.parse(input);
      const invitationId = tokens.verify(INVITATION_TOKEN_PURPOSE, token);
      if (!invitationId) throw new ProblemError('Identity.InvitationInvalid');
      const now = clock.now();
      const known = await invitations.findById(invitationId);
      if (!known) throw new ProblemError('Identity.InvitationInvalid');
      const request = {
        invitationId,
        organizationId: known.organizationId,
        userId,
        membershipId: newId(),
        at: now.toISOString(),
      };
      return invitations.transaction(async (tx) => {
        let email: string | null = null;
        const { decision, joined } = await tx.accept(request, (snapshot) => {
          const { invitation, member } = snapshot;
          if (snapshot.userEmail !== invitation.email) {
            throw new ProblemError('Identity.InvitationEmailMismatch', 'This invitation was sent to another e-mail address.');
          }
          if (invitation.status !== 'pending') throw new ProblemError('Identity.InvitationInvalid');
          if (new Date(invitation.expiresAt).getTime() <= now.getTime()) throw new ProblemError('Identity.InvitationExpired');
          if (member?.status === 'active') throw new ProblemError('Identity.AlreadyMember');
          if (member?.status === 'suspended') throw new ProblemError('Identity.MembershipSuspended');
          // Custom roles deleted since the invitation was sent are dropped.
          const roles = invitation.roles.filter((role) => permissionsOfRole(role, snapshot.customRoles) !== undefined);
          const organizationId = invitation.organizationId;
          email = snapshot.userEmail;
          return {
            roles: roles.length > 0 ? roles : [MEMBER_ROLE],
            events: [
              pendingEvent(InvitationAcceptedEvent, { invitationId: invitation.id, organizationId, userId }),
              pendingEvent(MemberJoinedEvent, { organizationId, userId, via: 'invitation' }),
            ],
          };
        });
        await tx.publish(decision.events);
        await tx.evict([membershipEviction(userId, request.organizationId)]);
        const by = { ...context, actor: context?.actor ?? { type: 'user' as const, id: userId, display: email } };
        const organizationId = request.organizationId;
        await tx.audit?.([
          organizationAuditEntry(
            {
              action: OrganizationAuditActions.invitationAccepted.action,
              organizationId,
              target: { type: 'invitation', id: invitationId, display: email },
            },
            by,
          ),
          organizationAuditEntry(
            {
              action: OrganizationAuditActions.memberJoined.action,
              organizationId,
              target: { type: 'user', id: userId, display: email },
              metadata: { via: 'invitation', invitationId, roles: [...decision.roles] },
            },
            by,
          ),
        ]);
        return joined;
      });
    },

    acceptUrl: (invitationId) =>
      `${authUrl}/invitations/accept?token=${encodeURIComponent(tokens.issue(INVITATION_TOKEN_PURPOSE, invitationId))}`,
  };
}
