import { defineEvent } from '@idt/core';
import { z } from 'zod';

/** Published when an organization's owner, admin or a platform administrator changed its security policy. */
export const OrganizationSecurityPolicyChangedEvent = defineEvent({
  type: 'OrganizationSecurityPolicyChangedEvent',
  module: 'identity',
  description:
    "An organization's security policy changed: whether its members need a second factor (`requireMfa`) and a verified e-mail address (`requireVerifiedEmail`).",
  schema: z.object({
    organizationId: z.string(),
    requireMfa: z.boolean(),
    requireVerifiedEmail: z.boolean(),
    /** The acting user. */
    changedByUserId: z.string(),
    /** ISO 8601 UTC. */
    changedAt: z.string(),
  }),
});
