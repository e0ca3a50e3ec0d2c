import { defineEvent } from '@idt/core';
import { z } from 'zod';

/** An organization's directory provisioned a user through SCIM: a new account, or a membership for an existing one. */
export const ScimUserProvisionedEvent = defineEvent({
  type: 'ScimUserProvisionedEvent',
  module: 'identity',
  description:
    "An organization's directory provisioned a user through SCIM (`accountCreated`: a new account without a password; else an existing account got a membership).",
  schema: z.object({ organizationId: z.string(), userId: z.string(), accountCreated: z.boolean() }),
});

/** The events SCIM publishes besides the membership events of the accounts feature. */
export const scimEvents = [ScimUserProvisionedEvent];
