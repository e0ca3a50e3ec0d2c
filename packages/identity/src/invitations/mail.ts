import { type Clock, defineEventHandler, type Mailer, systemClock } from '@idt/core';
import { InvitationCreatedEvent } from '../accounts/events.js';
import type { OrganizationsStore } from '../organizations/store.js';
import type { InvitationsStore } from './store.js';

/** Dependencies of {@link createInvitationMailHandler}. */
export interface InvitationMailHandlerOptions {
  readonly invitations: InvitationsStore;
  readonly organizations: OrganizationsStore;
  readonly mailer: Mailer;
  readonly clock?: Clock;
  /** The accept link of an invitation (see `InvitationsService.acceptUrl`). */
  acceptUrl(invitationId: string): string;
}

/**
 * `identity.mail-invitation`: mails the invitation link when an invitation is
 * created. The token is recomputed from the invitation id, so it is never
 * stored or carried by the event. An invitation revoked, accepted or expired
 * before delivery is not mailed.
 */
export function createInvitationMailHandler(options: InvitationMailHandlerOptions) {
  const clock = options.clock ?? systemClock;
  return defineEventHandler({
    name: 'identity.mail-invitation',
    module: 'identity',
    event: InvitationCreatedEvent,
    description: 'Mails the invitation link to the invited address.',
    async handle({ payload }) {
      const invitation = await options.invitations.find(payload.organizationId, payload.invitationId);
      if (invitation?.status !== 'pending') return;
      if (new Date(invitation.expiresAt).getTime() <= clock.now().getTime()) return;
      const organization = await options.organizations.find(invitation.organizationId);
      if (!organization) return;
      const link = options.acceptUrl(invitation.id);
      const expires = new Date(invitation.expiresAt).toUTCString();
      await options.mailer.send({
        to: invitation.email,
        subject: `You are invited to join ${organization.name.replace(/[\r\n]+/g, ' ')}`,
        text: [
          `You have been invited to join ${organization.name} as ${invitation.roles.join(', ')}.`,
          '',
          'Sign in or register with this e-mail address, then open this link to accept:',
          link,
          '',
          `The invitation expires on ${expires}. If you did not expect it, ignore this message.`,
        ].join('\n'),
        headers: { 'X-Idt-Template': 'invitation' },
      });
    },
  });
}
