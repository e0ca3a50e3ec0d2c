import { defineEvent } from '@idt/core';
import { z } from 'zod';

/** Published when a user registered a passkey. */
export const UserPasskeyAddedEvent = defineEvent({
  type: 'UserPasskeyAddedEvent',
  module: 'identity',
  description: 'A user registered a passkey (WebAuthn credential); it signs in alone or serves as a second factor.',
  schema: z.object({
    userId: z.string(),
    passkeyId: z.string(),
    /** The name the user gave it. */
    name: z.string(),
    /** `singleDevice` (device-bound) or `multiDevice` (may be synced). */
    deviceType: z.string(),
    /** ISO 8601 UTC. */
    addedAt: z.string(),
  }),
});

/** Published when a user removed one of their passkeys. */
export const UserPasskeyRemovedEvent = defineEvent({
  type: 'UserPasskeyRemovedEvent',
  module: 'identity',
  description: 'A user removed one of their passkeys; it no longer signs in.',
  schema: z.object({
    userId: z.string(),
    passkeyId: z.string(),
    /** ISO 8601 UTC. */
    removedAt: z.string(),
  }),
});
