import { defineEvent } from '@idt/core';
import { z } from 'zod';

/**
 * Published when someone asked for a password reset of an active account.
 * The mail handler asks the identity module for the link of `resetId`; the
 * payload never carries a token.
 */
export const UserPasswordResetRequestedEvent = defineEvent({
  type: 'UserPasswordResetRequestedEvent',
  module: 'identity',
  description: 'A password reset was asked for an active account; the account’s address gets a single-use link.',
  schema: z.object({
    userId: z.string(),
    resetId: z.string(),
    /** ISO 8601 UTC: when the link stops working. */
    expiresAt: z.string(),
  }),
});

/**
 * Published when a user's password was reset, with a reset link or by an
 * operator (`idt users reset-password`); every session and token of the user ended.
 */
export const UserPasswordResetEvent = defineEvent({
  type: 'UserPasswordResetEvent',
  module: 'identity',
  description:
    'A user set a new password with a reset link, or an operator set one: every session, refresh-token family and access token of the user ended; the address gets a security notice.',
  schema: z.object({
    userId: z.string(),
    /** The account's address when the password was reset: the notice goes there. */
    email: z.string(),
    /** ISO 8601 UTC. */
    resetAt: z.string(),
    /** Who reset it: the user with a mailed link, or an operator. Absent on events written before it existed: a link. */
    by: z
      .enum(['link', 'operator'])
      .optional()
      .describe('Who reset the password: the user with a mailed link, or an operator; absent means a link.'),
  }),
});

/** Published when a signed-in user changed their password; their other sessions ended. */
export const UserPasswordChangedEvent = defineEvent({
  type: 'UserPasswordChangedEvent',
  module: 'identity',
  description: 'A signed-in user changed their password; their other sessions ended and the address gets a security notice.',
  schema: z.object({
    userId: z.string(),
    /** The account's address: the notice goes there. */
    email: z.string(),
    /** ISO 8601 UTC. */
    changedAt: z.string(),
  }),
});
