import { defineEvent } from '@idt/core';
import { z } from 'zod';

/**
 * Published when a user needs a link to verify their e-mail address (after
 * self-registration, or when they ask for a new link). The link is derived
 * from `verificationId` by the mail handler; the payload never carries a token.
 */
export const UserEmailVerificationRequestedEvent = defineEvent({
  type: 'UserEmailVerificationRequestedEvent',
  module: 'identity',
  description: "A user's e-mail address needs verifying; the address gets a single-use link valid 24 hours.",
  schema: z.object({
    userId: z.string(),
    verificationId: z.string(),
    email: z.string(),
    /** ISO 8601 UTC: when the link stops working. */
    expiresAt: z.string(),
  }),
});

/** Published when a user verified their e-mail address with a mailed link. */
export const UserEmailVerifiedEvent = defineEvent({
  type: 'UserEmailVerifiedEvent',
  module: 'identity',
  description: 'A user verified their e-mail address; the `email_verified` claim is now true.',
  schema: z.object({
    userId: z.string(),
    email: z.string(),
    /** ISO 8601 UTC. */
    verifiedAt: z.string(),
  }),
});
