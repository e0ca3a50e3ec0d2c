import type { PendingEvent } from '@idt/core';
import { OidcSessionEndedEvent } from '@idt/identity';

/**
 * A single sign-on session ended (logout, revocation, eviction or user
 * deactivation): its clients are notified over the back channel. The
 * provider publishes it; its definition is `@idt/identity`'s, so that
 * modules below the provider can subscribe to it.
 */
export { OidcSessionEndedEvent };

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
