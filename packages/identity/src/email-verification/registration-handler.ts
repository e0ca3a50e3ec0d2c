import { defineEventHandler, type EventHandlerDefinition } from '@idt/core';
import { UserRegisteredEvent } from '../accounts/events.js';
import type { EmailVerificationService } from './service.js';

/**
 * `identity.email-verification-on-registration`: a self-registered account
 * gets a verification link (`UserEmailVerificationRequestedEvent`, which the
 * notifications module mails). Delivered twice, it records one link.
 */
export function createRegistrationVerificationHandler(
  verification: Pick<EmailVerificationService, 'request'>,
): EventHandlerDefinition<{ userId: string; email: string }> {
  return defineEventHandler({
    name: 'identity.email-verification-on-registration',
    module: 'identity',
    event: UserRegisteredEvent,
    description: 'Sends a self-registered user a link to verify the e-mail address.',
    async handle({ payload }) {
      await verification.request(payload.userId, { ifNoneWorking: true });
    },
  });
}
