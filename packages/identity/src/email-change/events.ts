import { defineEvent } from '@idt/core';
import { z } from 'zod';

/**
 * Published when a user asked to change their e-mail address. The
 * confirmation link is derived from `changeId` by the mail handler; the
 * payload never carries a token.
 */
export const UserEmailChangeRequestedEvent = defineEvent({
  type: 'UserEmailChangeRequestedEvent',
  module: 'identity',
  description: 'A user asked to change their e-mail address; the new address gets a confirmation link.',
  schema: z.object({
    userId: z.string(),
    changeId: z.string(),
    newEmail: z.string(),
    /** ISO 8601 UTC: when the confirmation link stops working. */
    expiresAt: z.string(),
  }),
});

/** Published when a user confirmed a new e-mail address (and username). */
export const UserEmailChangedEvent = defineEvent({
  type: 'UserEmailChangedEvent',
  module: 'identity',
  description: 'A user confirmed a new e-mail address; the old address gets a security notice.',
  schema: z.object({ userId: z.string(), oldEmail: z.string(), newEmail: z.string() }),
});
