import { defineEvent } from '@idt/core';
import { z } from 'zod';

/**
 * A single sign-on session ended (logout, revocation, eviction or user
 * deactivation): its clients are notified over the back channel, and the
 * realtime connections of the session are closed. The OpenID provider
 * (`@idt/oidc`) publishes it; its contract lives here, beside the sign-in
 * session it shares its id with, so that modules which must not depend on
 * the provider (the notifications module) can subscribe to it.
 * `@idt/oidc` exports the same definition.
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
