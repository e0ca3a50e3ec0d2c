import {
  type AuditActor,
  type AuditEntry,
  type AuditMetadata,
  type AuditMetadataValue,
  type AuditTarget,
  auditActorOf,
  auditRequestOf,
  defineAuditActions,
  type RouteContext,
} from '@idt/core';
import type { AccountsActor } from '../accounts/actor.js';

/**
 * The audit actions of organizations: memberships, invitations, custom roles,
 * the organizations themselves and SCIM provisioning. Each is recorded on the
 * trail of the organization it changes, in the transaction of the change.
 */
export const OrganizationAuditActions = defineAuditActions('identity', {
  organizationCreated: {
    action: 'identity.organization.created',
    description: 'A user created an organization and became its first owner.',
    targetType: 'organization',
  },
  organizationUpdated: {
    action: 'identity.organization.updated',
    description: 'An organization was renamed or its enrollment policy changed.',
    targetType: 'organization',
  },
  memberJoined: {
    action: 'identity.member.joined',
    description:
      'A user became an active member: by enrollment in an open organization, an accepted invitation or an operator (`idt`, seeding), as `metadata.via` says. Joins through single sign-on are recorded by the sso module (`sso.signIn.succeeded`).',
    targetType: 'user',
  },
  memberRolesChanged: {
    action: 'identity.member.rolesChanged',
    description: "A member's roles were replaced.",
    targetType: 'user',
  },
  memberSuspended: {
    action: 'identity.member.suspended',
    description: 'An active member was suspended; their tokens for the organization stopped working.',
    targetType: 'user',
  },
  memberReinstated: {
    action: 'identity.member.reinstated',
    description: 'A suspended member was reinstated with the roles held before.',
    targetType: 'user',
  },
  memberRemoved: {
    action: 'identity.member.removed',
    description: 'A membership (in any state) was removed from the organization.',
    targetType: 'user',
  },
  memberApproved: {
    action: 'identity.member.approved',
    description: 'A pending membership request was approved; the member is active with the `user` role.',
    targetType: 'user',
  },
  memberDenied: {
    action: 'identity.member.denied',
    description: 'A pending membership request was denied.',
    targetType: 'user',
  },
  invitationCreated: {
    action: 'identity.invitation.created',
    description: 'An e-mail address was invited to join the organization with roles.',
    targetType: 'invitation',
  },
  invitationAccepted: {
    action: 'identity.invitation.accepted',
    description: 'The invited user accepted an invitation (the membership it created is `identity.member.joined`).',
    targetType: 'invitation',
  },
  invitationRevoked: {
    action: 'identity.invitation.revoked',
    description: 'A pending invitation (or one past its expiry, `metadata.expired`) was revoked.',
    targetType: 'invitation',
  },
  roleCreated: {
    action: 'identity.role.created',
    description: 'A custom role was created.',
    targetType: 'role',
  },
  roleUpdated: {
    action: 'identity.role.updated',
    description: 'A custom role was renamed, described or given other permissions.',
    targetType: 'role',
  },
  roleDeleted: {
    action: 'identity.role.deleted',
    description: 'A custom role was deleted; the members holding it lost it.',
    targetType: 'role',
  },
  scimTokenCreated: {
    action: 'identity.scim.tokenCreated',
    description: 'A SCIM bearer token was created for the organization’s directory.',
    targetType: 'scimToken',
  },
  scimTokenRevoked: {
    action: 'identity.scim.tokenRevoked',
    description: 'A SCIM bearer token was revoked.',
    targetType: 'scimToken',
  },
  scimRoleMappingsChanged: {
    action: 'identity.scim.roleMappingsChanged',
    description: 'The group→role mappings of the organization were replaced; the roles of the members concerned followed.',
    targetType: 'organization',
  },
  scimUserProvisioned: {
    action: 'identity.scim.userProvisioned',
    description: 'The directory provisioned a user (a new account or an existing one) into the organization.',
    targetType: 'user',
  },
  scimUserUpdated: {
    action: 'identity.scim.userUpdated',
    description: 'The directory changed a user’s attributes, or reactivated them (`metadata.reactivated`).',
    targetType: 'user',
  },
  scimUserDeactivated: {
    action: 'identity.scim.userDeactivated',
    description:
      'The directory set a user inactive: the membership is suspended and the user’s access to the organization ended.',
    targetType: 'user',
  },
  scimUserDeleted: {
    action: 'identity.scim.userDeleted',
    description: 'The directory deleted a user: the membership is suspended and the user’s access to the organization ended.',
    targetType: 'user',
  },
  scimGroupCreated: {
    action: 'identity.scim.groupCreated',
    description: 'The directory created a group.',
    targetType: 'scimGroup',
  },
  scimGroupUpdated: {
    action: 'identity.scim.groupUpdated',
    description: 'The directory renamed a group or changed its externalId.',
    targetType: 'scimGroup',
  },
  scimGroupMembersChanged: {
    action: 'identity.scim.groupMembersChanged',
    description: 'The directory added members to a group or removed them.',
    targetType: 'scimGroup',
  },
  scimGroupDeleted: {
    action: 'identity.scim.groupDeleted',
    description: 'The directory deleted a group; its members lost the roles it granted.',
    targetType: 'scimGroup',
  },
});

/**
 * Who made an organization change and where the request came from: what a
 * route hands a service for its audit record. Everything is optional; a
 * service called without it (the CLI, a host) records the actor it knows.
 */
export interface OrganizationAuditContext {
  readonly actor?: AuditActor;
  readonly ip?: string | null;
  readonly userAgent?: string | null;
  readonly traceId?: string | null;
}

/**
 * The audit context of a route: its principal as the actor, and the request's
 * address, user agent and trace id.
 *
 * @example
 * handler: async (ctx) => json(await roles.create(actorOf(ctx.principal), ctx.body, auditContextOf(ctx)))
 */
export function auditContextOf(route: RouteContext<any, any, any>): OrganizationAuditContext {
  return { ...(route.principal ? { actor: auditActorOf(route.principal) } : {}), ...auditRequestOf(route) };
}

/** The audit actor of an accounts actor when no route named one: its user, or an unnamed service. */
function fallbackActor(actor: AccountsActor | null): AuditActor {
  if (actor?.userId) return { type: 'user', id: actor.userId, display: null };
  return actor ? { type: 'service', id: null, display: null } : { type: 'system', id: null, display: null };
}

/** What one organization record says, besides who and from where. */
export interface OrganizationAuditFacts {
  readonly action: string;
  readonly organizationId: string;
  readonly target: AuditTarget;
  readonly metadata?: AuditMetadata;
}

/**
 * An audit entry of an organization change: the facts, the context's actor
 * (else one derived from `actor`), and the request facts of the context.
 */
export function organizationAuditEntry(
  facts: OrganizationAuditFacts,
  context: OrganizationAuditContext = {},
  actor: AccountsActor | null = null,
): AuditEntry {
  return {
    action: facts.action,
    organizationId: facts.organizationId,
    actor: context.actor ?? fallbackActor(actor),
    target: facts.target,
    ip: context.ip ?? null,
    userAgent: context.userAgent ?? null,
    traceId: context.traceId ?? null,
    metadata: facts.metadata ?? {},
  };
}

/**
 * The longest prefix of `items` whose JSON fits in `maxBytes`: lists in
 * audit metadata (a group's new members, role mappings) stay bounded, since
 * a record's metadata holds at most 16 KiB. Give the full count beside it.
 *
 * @example
 * metadata: { addedUserIds: boundedList(added, 6_000), addedCount: added.length }
 */
export function boundedList<T extends AuditMetadataValue>(items: readonly T[], maxBytes: number): T[] {
  const kept: T[] = [];
  let size = 2;
  for (const item of items) {
    size += Buffer.byteLength(JSON.stringify(item)) + 1;
    if (size > maxBytes) break;
    kept.push(item);
  }
  return kept;
}
