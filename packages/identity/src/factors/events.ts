import { defineEvent } from '@idt/core';
import { z } from 'zod';

/** The kinds of second factor the events name. */
const FactorKind = z.enum(['totp', 'recovery-codes']);

/** Published when a user confirmed an authenticator app (TOTP) or made a new set of recovery codes. */
export const UserSecondFactorAddedEvent = defineEvent({
  type: 'UserSecondFactorAddedEvent',
  module: 'identity',
  description:
    'A user added a second factor: an authenticator app (`totp`, also when it replaced the previous one) or a new set of recovery codes (`recovery-codes`, the old set ended).',
  schema: z.object({
    userId: z.string(),
    factor: FactorKind,
    /** ISO 8601 UTC. */
    addedAt: z.string(),
  }),
});

/** Published when a user removed their authenticator app; the account's address gets a security notice. */
export const UserSecondFactorRemovedEvent = defineEvent({
  type: 'UserSecondFactorRemovedEvent',
  module: 'identity',
  description:
    'A user removed their authenticator app (`totp`); with no second factor left, their recovery codes ended too. The address is told by mail and a SecurityAlert.',
  schema: z.object({
    userId: z.string(),
    /** The account's address when it happened (the security notice goes there). */
    email: z.string(),
    factor: FactorKind,
    /** ISO 8601 UTC. */
    removedAt: z.string(),
  }),
});

/** Published when an organization owner or a platform administrator reset a member's second factors. */
export const UserSecondFactorsResetEvent = defineEvent({
  type: 'UserSecondFactorsResetEvent',
  module: 'identity',
  description:
    "An organization owner or a platform administrator removed a member's authenticator app and recovery codes (lost device). The member is told by mail and a SecurityAlert.",
  schema: z.object({
    userId: z.string(),
    /** The account's address when it happened (the security notice goes there). */
    email: z.string(),
    /** The organization the reset was made through. */
    organizationId: z.string(),
    /** The acting owner or platform administrator. */
    resetByUserId: z.string(),
    /** ISO 8601 UTC. */
    resetAt: z.string(),
  }),
});
