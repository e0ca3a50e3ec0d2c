import {
  type Clock,
  defineEventHandler,
  type EventHandlerDefinition,
  joinMarkup,
  type Logger,
  type Mailer,
  markup,
} from '@idt/core';
import { type EmailVerificationService, UserEmailVerificationRequestedEvent } from '@idt/identity';
import { createMailOnce } from './mail-once.js';
import type { NotificationStore } from './store.js';

/** Options of {@link createVerificationNotificationHandlers}. */
export interface VerificationNotificationHandlerOptions {
  /** Where the mails sent are recorded (once per event and recipient). */
  readonly store: Pick<NotificationStore, 'wasMailed' | 'recordMail'>;
  readonly mailer: Mailer;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The identity module's e-mail verification service: the link of an unused verification. */
  readonly emailVerification: Pick<EmailVerificationService, 'pendingVerification'>;
}

/**
 * The notifications module's reactions to the e-mail verification events of
 * `@idt/identity`, idempotent per event id (mails are recorded per event and
 * recipient):
 *
 * - `UserEmailVerificationRequestedEvent` → the verification link mailed to
 *   the account's address (transactional: preferences do not apply), unless
 *   the link was used, replaced or expired, or the address was verified or
 *   changed meanwhile.
 */
export function createVerificationNotificationHandlers(
  options: VerificationNotificationHandlerOptions,
): EventHandlerDefinition<any>[] {
  const { store, mailer, clock, logger } = options;

  const mailOnce = createMailOnce({ store, mailer, clock });

  return [
    defineEventHandler({
      name: 'notifications.mail-email-verification-link',
      module: 'notifications',
      event: UserEmailVerificationRequestedEvent,
      description: 'Mails the single-use link that verifies the account’s e-mail address.',
      async handle({ id, payload }) {
        const pending = await options.emailVerification.pendingVerification(payload.verificationId, payload.userId);
        if (!pending) {
          logger.info('e-mail verification used, replaced or expired before its link was mailed', {
            verificationId: payload.verificationId,
          });
          return;
        }
        const until = new Date(pending.expiresAt).toUTCString();
        const greeting = pending.firstName ? `Hello ${pending.firstName},` : 'Hello,';
        await mailOnce(`${id}:email-verification-link`, {
          to: pending.email,
          subject: 'Verify your e-mail address',
          text: [
            greeting,
            '',
            `Please confirm that this address is yours: open this link within 24 hours (until ${until}) and press the button. It works once.`,
            pending.link,
            '',
            "If you didn't create an account, ignore this message.",
          ].join('\n'),
          html: joinMarkup(
            [
              markup`<p>${greeting}</p>`,
              markup`<p>Please confirm that this address is yours: <a href="${pending.link}">verify your e-mail address</a> within 24 hours (until ${until}). The link works once.</p>`,
              markup`<p style="color:#666">If the link does not work, paste this address into your browser:<br>${pending.link}</p>`,
              markup`<p style="color:#666">If you didn't create an account, ignore this message.</p>`,
            ],
            '\n',
          ).text,
          headers: { 'X-Idt-Template': 'email-verification-link' },
        });
      },
    }),
  ];
}
