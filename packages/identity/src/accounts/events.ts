import { defineEvent, type EventDefinition, type PendingEvent } from '@idt/core';
import { z } from 'zod';

/** An event to write, its payload checked against the event's schema type. */
export function pendingEvent<T extends Record<string, unknown>>(event: EventDefinition<T>, payload: T): PendingEvent<T> {
  return { event, payload };
}

const id = z.string().min(1);
const actor = id.nullable().describe('The acting user; null for a service account.');
const at = z.string().describe('ISO 8601 UTC');

/** A user registered an account (`POST /v1/identity/auth/register`). */
export const UserRegisteredEvent = defineEvent({
  type: 'UserRegisteredEvent',
  module: 'identity',
  description: 'A user registered an account.',
  schema: z.object({ userId: id, email: z.string() }),
});

/**
 * A platform administrator deactivated a user: every token of the user is
 * revoked (watermark) and sign-in is refused. Consumers revoke refresh tokens.
 */
export const UserDeactivatedEvent = defineEvent({
  type: 'UserDeactivatedEvent',
  module: 'identity',
  description: "A user was deactivated; every token of the user was revoked. Consumers end the user's grants.",
  schema: z.object({ userId: id, deactivatedAt: at, deactivatedByUserId: actor }),
});

/** A platform administrator reactivated a deactivated user. */
export const UserReactivatedEvent = defineEvent({
  type: 'UserReactivatedEvent',
  module: 'identity',
  description: 'A deactivated user was reactivated.',
  schema: z.object({ userId: id, reactivatedAt: at, reactivatedByUserId: actor }),
});

/** A user created an organization and became its owner. */
export const OrganizationCreatedEvent = defineEvent({
  type: 'OrganizationCreatedEvent',
  module: 'identity',
  description: 'An organization was created; its creator is its first owner.',
  schema: z.object({ organizationId: id, name: z.string(), slug: z.string(), createdByUserId: id }),
});

/** A user asked to join an organization whose enrollment policy needs approval. */
export const MembershipRequestedEvent = defineEvent({
  type: 'MembershipRequestedEvent',
  module: 'identity',
  description: 'A user asked to join an organization that requires approval; the membership is pending.',
  schema: z.object({ organizationId: id, userId: id, requestedAt: at }),
});

/** A pending membership request was approved. */
export const MembershipApprovedEvent = defineEvent({
  type: 'MembershipApprovedEvent',
  module: 'identity',
  description: 'A pending membership request was approved; the member is active with the user role.',
  schema: z.object({ organizationId: id, userId: id, decidedByUserId: actor }),
});

/** A pending membership request was denied. */
export const MembershipDeniedEvent = defineEvent({
  type: 'MembershipDeniedEvent',
  module: 'identity',
  description: 'A pending membership request was denied.',
  schema: z.object({ organizationId: id, userId: id, decidedByUserId: actor }),
});

/** A member was suspended. */
export const MembershipSuspendedEvent = defineEvent({
  type: 'MembershipSuspendedEvent',
  module: 'identity',
  description: 'An active member was suspended; tokens for the organization stop working.',
  schema: z.object({ organizationId: id, userId: id, changedByUserId: actor }),
});

/** A suspended member was reinstated. */
export const MembershipReinstatedEvent = defineEvent({
  type: 'MembershipReinstatedEvent',
  module: 'identity',
  description: 'A suspended member was reinstated.',
  schema: z.object({ organizationId: id, userId: id, changedByUserId: actor }),
});

/** A member was removed from an organization. */
export const MembershipRemovedEvent = defineEvent({
  type: 'MembershipRemovedEvent',
  module: 'identity',
  description: 'A membership was removed.',
  schema: z.object({ organizationId: id, userId: id, changedByUserId: actor }),
});

/** The roles of a member changed. */
export const MembershipRolesChangedEvent = defineEvent({
  type: 'MembershipRolesChangedEvent',
  module: 'identity',
  description: 'The roles of a member changed; `roles` is the new list, space-separated.',
  schema: z.object({ organizationId: id, userId: id, roles: z.string(), changedByUserId: actor }),
});

/** A user joined an organization through its open enrollment policy, an invitation, the operator or single sign-on. */
export const MemberJoinedEvent = defineEvent({
  type: 'MemberJoinedEvent',
  module: 'identity',
  description:
    "A user became an active member through open enrollment, an accepted invitation, the operator (seeding) or a first single sign-on through the organization's connection (`sso`).",
  schema: z.object({ organizationId: id, userId: id, via: z.enum(['enrollment', 'invitation', 'operator', 'sso']) }),
});

/**
 * An invitation was created. The identity module mails the link; the token
 * is derived from the invitation id and never part of the payload.
 */
export const InvitationCreatedEvent = defineEvent({
  type: 'InvitationCreatedEvent',
  module: 'identity',
  description: 'An invitation to join an organization was created; the identity module mails its link.',
  schema: z.object({ invitationId: id, organizationId: id, email: z.string(), invitedByUserId: actor }),
});

/** An invitation was accepted. */
export const InvitationAcceptedEvent = defineEvent({
  type: 'InvitationAcceptedEvent',
  module: 'identity',
  description: 'An invitation was accepted; the invitee is an active member.',
  schema: z.object({ invitationId: id, organizationId: id, userId: id }),
});

/** An invitation was revoked before it was accepted. */
export const InvitationRevokedEvent = defineEvent({
  type: 'InvitationRevokedEvent',
  module: 'identity',
  description: 'A pending invitation was revoked.',
  schema: z.object({ invitationId: id, organizationId: id, revokedByUserId: actor }),
});

/** Every event of the accounts half of the identity module, for the catalog. */
export const accountsEvents = [
  UserRegisteredEvent,
  UserDeactivatedEvent,
  UserReactivatedEvent,
  OrganizationCreatedEvent,
  MembershipRequestedEvent,
  MembershipApprovedEvent,
  MembershipDeniedEvent,
  MembershipSuspendedEvent,
  MembershipReinstatedEvent,
  MembershipRemovedEvent,
  MembershipRolesChangedEvent,
  MemberJoinedEvent,
  InvitationCreatedEvent,
  InvitationAcceptedEvent,
  InvitationRevokedEvent,
] as const;
