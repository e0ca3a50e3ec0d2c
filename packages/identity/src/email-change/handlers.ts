import { defineEventHandler, type EventHandlerDefinition, type Logger, type Mailer, silentLogger } from '@idt/core';
import { UserEmailChangedEvent, UserEmailChangeRequestedEvent } from './events.js';
import type { EmailChangeService } from './service.js';
import type { EmailChangeStore } from './store.js';

/** Options of {@link createEmailChangeHandlers}. */
export interface EmailChangeHandlerOptions {
  readonly store: EmailChangeStore;
  readonly service: Pick<EmailChangeService, 'confirmationLink'>;
  readonly mailer: Mailer;
  readonly logger?: Logger;
}

/**
 * The mail reactions of the identity module to e-mail changes:
 * - `identity.mail-email-change-confirmation` mails the confirmation link to
 *   the new address (skipped when the change was superseded or used meanwhile);
 * - `identity.mail-email-changed-notice` mails a security notice to the old address.
 */
export function createEmailChangeHandlers(options: EmailChangeHandlerOptions): EventHandlerDefinition<any>[] {
  const { store, service, mailer } = options;
  const logger = options.logger ?? silentLogger;
  return [
    defineEventHandler({
      name: 'identity.mail-email-change-confirmation',
      module: 'identity',
      event: UserEmailChangeRequestedEvent,
      description: 'Mails the confirmation link to the new address.',
      async handle({ payload }) {
        const change = await store.find(payload.changeId);
        if (!change || change.consumedAt !== null || change.userId !== payload.userId) {
          logger.info('e-mail change superseded or used before its link was mailed', { changeId: payload.changeId });
          return;
        }
        const link = service.confirmationLink(change);
        await mailer.send({
          to: change.newEmail,
          subject: 'Confirm your new e-mail address',
          text: [
            'You asked to use this e-mail address for your account.',
            '',
            `Confirm it by opening this link within 24 hours (until ${change.expiresAt}):`,
            link,
            '',
            "If you didn't ask for this, ignore this message; nothing changes.",
          ].join('\n'),
          headers: { 'X-Idt-Template': 'email-change-confirmation' },
        });
      },
    }),
    defineEventHandler({
      name: 'identity.mail-email-changed-notice',
      module: 'identity',
      event: UserEmailChangedEvent,
      description: 'Mails a security notice to the old address.',
      async handle({ payload }) {
        await mailer.send({
          to: payload.oldEmail,
          subject: 'Your e-mail address was changed',
          text: [
            `The e-mail address of your account was changed from ${payload.oldEmail} to ${payload.newEmail}.`,
            'You now sign in with the new address.',
            '',
            "If you didn't do this, contact your administrator at once.",
          ].join('\n'),
          headers: { 'X-Idt-Template': 'email-changed-notice' },
        });
      },
    }),
  ];
}
