import {
  type Clock,
  defineEventHandler,
  type EventHandlerDefinition,
  joinMarkup,
  type Logger,
  type Mailer,
  markup,
} from '@idt/core';
import {
  type PasswordResetService,
  UserPasswordChangedEvent,
  UserPasswordResetEvent,
  UserPasswordResetRequestedEvent,
} from '@idt/identity';
import { createMailOnce } from './mail-once.js';
import type { NotificationsService } from './service.js';
import type { NotificationStore } from './store.js';

/** Options of {@link createPasswordNotificationHandlers}. */
export interface PasswordNotificationHandlerOptions {
  /** Where the mails sent are recorded (once per event and recipient). */
  readonly store: Pick<NotificationStore, 'wasMailed' | 'recordMail'>;
  readonly service: Pick<NotificationsService, 'notify'>;
  readonly mailer: Mailer;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The identity module's reset service: the link of a pending reset. */
  readonly passwordReset: Pick<PasswordResetService, 'pendingReset'>;
}

/**
 * The notifications module's reactions to the password events of
 * `@idt/identity`, each idempotent per event id (mails are recorded per
 * event and recipient, notifications carry the event id as source key):
 *
 * - `UserPasswordResetRequestedEvent` → the reset link mailed to the
 *   account's address (transactional), unless the reset was used, replaced
 *   or expired meanwhile;
 * - `UserPasswordResetEvent` → a security notice mailed to the address and
 *   an in-app `SecurityAlert`;
 * - `UserPasswordChangedEvent` → the same, for a change by the signed-in user.
 */
export function createPasswordNotificationHandlers(options: PasswordNotificationHandlerOptions): EventHandlerDefinition<any>[] {
  const { store, service, mailer, clock, logger } = options;

  const mailOnce = createMailOnce({ store, mailer, clock });

  function notice(id: string, key: string, to: string, subject: string, sentence: string, template: string) {
    return mailOnce(`${id}:${key}`, {
      to,
      subject,
      text: [sentence, '', "If you didn't do this, reset your password at once and contact your administrator."].join('\n'),
      html: joinMarkup(
        [
          markup`<p>${sentence}</p>`,
          markup`<p><strong>If you didn't do this, reset your password at once and contact your administrator.</strong></p>`,
        ],
        '\n',
      ).text,
      headers: { 'X-Idt-Template': template },
    });
  }

  return [
    defineEventHandler({
      name: 'notifications.mail-password-reset-link',
      module: 'notifications',
      event: UserPasswordResetRequestedEvent,
      description: 'Mails the single-use password reset link to the account’s address.',
      async handle({ id, payload }) {
        const pending = await options.passwordReset.pendingReset(payload.resetId, payload.userId);
        if (!pending) {
          logger.info('password reset used, replaced or expired before its link was mailed', { resetId: payload.resetId });
          return;
        }
        const until = new Date(pending.expiresAt).toUTCString();
        await mailOnce(`${id}:password-reset-link`, {
          to: pending.email,
          subject: 'Reset your password',
          text: [
            `Hello ${pending.firstName},`,
            '',
            `Someone asked to reset the password of your account. Open this link within an hour (until ${until}) to choose a new one. It works once.`,
            pending.link,
            '',
            "If you didn't ask for this, ignore this message; your password stays as it is.",
          ].join('\n'),
          html: joinMarkup(
            [
              markup`<p>Hello ${pending.firstName},</p>`,
              markup`<p>Someone asked to reset the password of your account. <a href="${pending.link}">Choose a new password</a> within an hour (until ${until}). The link works once.</p>`,
              markup`<p style="color:#666">If the link does not work, paste this address into your browser:<br>${pending.link}</p>`,
              markup`<p style="color:#666">If you didn't ask for this, ignore this message; your password stays as it is.</p>`,
            ],
            '\n',
          ).text,
          headers: { 'X-Idt-Template': 'password-reset-link' },
        });
      },
    }),
    defineEventHandler({
      name: 'notifications.mail-password-reset-notice',
      module: 'notifications',
      event: UserPasswordResetEvent,
      description: 'Mails a security notice to the account’s address after a password reset.',
      handle: ({ id, payload }) =>
        notice(
          id,
          'password-reset-notice',
          payload.email,
          'Your password was reset',
          payload.by === 'operator'
            ? 'An administrator set a new password for your account. You were signed out everywhere.'
            : 'The password of your account was reset with a link sent to this address. You were signed out everywhere.',
          'password-reset-notice',
        ),
    }),
    defineEventHandler({
      name: 'notifications.password-reset-alert',
      module: 'notifications',
      event: UserPasswordResetEvent,
      description: 'Creates a personal SecurityAlert after a password reset.',
      async handle({ id, payload }) {
        await service.notify([
          {
            userId: payload.userId,
            organizationId: null,
            type: 'SecurityAlert',
            title: 'Your password was reset',
            message:
              payload.by === 'operator'
                ? 'An administrator set a new password for your account, and every session ended. If you did not ask for this, contact your administrator at once.'
                : 'Your password was reset with a link sent to your e-mail address, and every session ended. If you did not do this, contact your administrator at once.',
            sourceKey: `${id}:password-reset`,
          },
        ]);
      },
    }),
    defineEventHandler({
      name: 'notifications.mail-password-changed-notice',
      module: 'notifications',
      event: UserPasswordChangedEvent,
      description: 'Mails a security notice to the account’s address after a password change.',
      handle: ({ id, payload }) =>
        notice(
          id,
          'password-changed-notice',
          payload.email,
          'Your password was changed',
          'The password of your account was changed. Your other sessions were signed out.',
          'password-changed-notice',
        ),
    }),
    defineEventHandler({
      name: 'notifications.password-changed-alert',
      module: 'notifications',
      event: UserPasswordChangedEvent,
      description: 'Creates a personal SecurityAlert after a password change.',
      async handle({ id, payload }) {
        await service.notify([
          {
            userId: payload.userId,
            organizationId: null,
            type: 'SecurityAlert',
            title: 'Your password was changed',
            message:
              'Your password was changed and your other sessions were signed out. If you did not do this, reset your password and contact your administrator at once.',
            sourceKey: `${id}:password-changed`,
          },
        ]);
      },
    }),
  ];
}
