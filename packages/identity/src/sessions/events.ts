import { defineEvent } from '@idt/core';
import { z } from 'zod';

/** Published when a login pushed a user past the concurrent session limit and the oldest session was revoked. */
export const UserSessionEvictedEvent = defineEvent({
  type: 'UserSessionEvictedEvent',
  module: 'identity',
  description: 'A login pushed the user past the concurrent session limit; the oldest session was revoked.',
  schema: z.object({
    userId: z.string(),
    sessionId: z.string(),
    /** ISO 8601 UTC. */
    evictedAt: z.string(),
  }),
});

/** Published when a session is revoked (by its owner, by logout, or with every session of a user). */
export const UserSessionRevokedEvent = defineEvent({
  type: 'UserSessionRevokedEvent',
  module: 'identity',
  description: 'A sign-in session was revoked by its owner, by logout, or with every session of its user.',
  schema: z.object({
    userId: z.string(),
    sessionId: z.string(),
    /** revoked, logout, revoked-all */
    reason: z.string(),
    /** ISO 8601 UTC. */
    revokedAt: z.string(),
  }),
});
