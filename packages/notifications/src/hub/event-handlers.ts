import { defineEventHandler } from '@idt/core';
import {
  MembershipRemovedEvent,
  MembershipSuspendedEvent,
  OidcSessionEndedEvent,
  UserDeactivatedEvent,
  UserSessionEvictedEvent,
  UserSessionRevokedEvent,
} from '@idt/identity';
import type { RealtimeHub } from './types.js';

/**
 * The hub's reactions to identity events: the connections of an ended
 * session are told and closed, and those of a deactivated user or of a
 * removed or suspended member are closed, all without reconnect.
 */
export function createHubEventHandlers(hub: Pick<RealtimeHub, 'endSession' | 'closeUser'>): RealtimeHub['handlers'] {
  const endSessionHandler = (
    name: string,
    event: typeof OidcSessionEndedEvent | typeof UserSessionRevokedEvent | typeof UserSessionEvictedEvent,
  ) =>
    defineEventHandler({
      name,
      module: 'notifications',
      event: event as typeof UserSessionEvictedEvent,
      description:
        'Tells the realtime connections of the ended session (SessionEnded or SessionEvicted), then closes them without reconnect.',
      async handle({ payload }) {
        const reason = (payload as { reason?: string }).reason;
        const evicted = event === UserSessionEvictedEvent || reason === 'evicted';
        await hub.endSession(payload.sessionId, evicted ? 'SessionEvicted' : 'SessionEnded');
      },
    });

  const closeMemberHandler = (
    name: string,
    event: typeof MembershipRemovedEvent | typeof MembershipSuspendedEvent,
    description: string,
    reason: string,
  ) =>
    defineEventHandler({
      name,
      module: 'notifications',
      event: event as typeof MembershipRemovedEvent,
      description,
      handle: ({ payload }) => hub.closeUser(payload.userId, { organizationId: payload.organizationId, reason }),
    });

  return [
    endSessionHandler('notifications.realtime-end-oidc-session', OidcSessionEndedEvent),
    endSessionHandler('notifications.realtime-end-revoked-session', UserSessionRevokedEvent),
    endSessionHandler('notifications.realtime-end-evicted-session', UserSessionEvictedEvent),
    defineEventHandler({
      name: 'notifications.realtime-close-deactivated-user',
      module: 'notifications',
      event: UserDeactivatedEvent,
      description: 'Closes every realtime connection of a deactivated user, without reconnect.',
      handle: ({ payload }) => hub.closeUser(payload.userId, { reason: 'Your account was deactivated.' }),
    }),
    closeMemberHandler(
      'notifications.realtime-close-removed-member',
      MembershipRemovedEvent,
      'Closes the realtime connections a removed member opened for that organization, without reconnect.',
      'Your membership of this organization ended.',
    ),
    closeMemberHandler(
      'notifications.realtime-close-suspended-member',
      MembershipSuspendedEvent,
      'Closes the realtime connections a suspended member opened for that organization, without reconnect.',
      'Your membership of this organization was suspended.',
    ),
  ];
}
