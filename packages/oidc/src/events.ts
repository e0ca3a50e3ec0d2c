import { defineEvent, type PendingEvent } from '@idt/core';
import { z } from 'zod';

/**
 * A single sign-on session ended (logout, revocation, eviction or user
 * deactivation): its clients are notified over the back channel.
 */
export const OidcSessionEndedEvent = defineEvent({
  type: 'OidcSessionEndedEvent',
  module: 'oidc',
  description: 'A single sign-on session ended; relying parties that took part are notified over the back channel.',
  schema: z.object({
    userId: z.string(),
    sessionId: z.string(),
    /** Space-separated ids of the clients that took part in the session. */
    clientIds: z.string(),
    /** logout, revoked, evicted, deactivated */
    reason: z.string(),
    endedAt: z.string(),
  }),
});

/** The {@link OidcSessionEndedEvent} of a session that ended at `endedAt`. */
export function sessionEnded(
  userId: string,
  sessionId: string,
  clientIds: readonly string[],
  reason: string,
  endedAt: Date,
): PendingEvent {
  return {
    event: OidcSessionEndedEvent,
    payload: { userId, sessionId, clientIds: clientIds.join(' '), reason, endedAt: endedAt.toISOString() },
  };
}
