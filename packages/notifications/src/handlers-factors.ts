import { type Clock, defineEventHandler, type EventHandlerDefinition, joinMarkup, type Mailer, markup } from '@idt/core';
import { UserSecondFactorRemovedEvent, UserSecondFactorsResetEvent } from '@idt/identity';
import { createMailOnce } from './mail-once.js';
import type { NotificationsService } from './service.js';
import type { NotificationStore } from './store.js';

/** Options of {@link createFactorNotificationHandlers}. */
export interface FactorNotificationHandlerOptions {
  /** Where the mails sent are recorded (once per event and recipient). */
  readonly store: Pick<NotificationStore, 'wasMailed' | 'recordMail'>;
  readonly service: Pick<NotificationsService, 'notify'>;
  readonly mailer: Mailer;
  readonly clock: Clock;
}

/**
 * The notifications module's reactions to the second-factor events of
 * `@idt/identity`, each idempotent per event id (mails are recorded per
 * event and recipient, notifications carry the event id as source key):
 *
 * - `UserSecondFactorRemovedEvent` → a security notice mailed to the
 *   account's address and an in-app `SecurityAlert`;
 * - `UserSecondFactorsResetEvent` → the same, for an administrator's reset.
 */
export function createFactorNotificationHandlers(options: FactorNotificationHandlerOptions): EventHandlerDefinition<any>[] {
  const { store, service, mailer, clock } = options;
  const mailOnce = createMailOnce({ store, mailer, clock });

  function notice(sourceKey: string, to: string, subject: string, sentence: string, template: string) {
    const warning = "If you didn't expect this, change your password at once and contact your administrator.";
    return mailOnce(sourceKey, {
      to,
      subject,
      text: [sentence, '', warning].join('\n'),
      html: joinMarkup([markup`<p>${sentence}</p>`, markup`<p><strong>${warning}</strong></p>`], '\n').text,
      headers: { 'X-Idt-Template': template },
    });
  }

  return [
    defineEventHandler({
      name: 'notifications.mail-second-factor-removed-notice',
      module: 'notifications',
      event: UserSecondFactorRemovedEvent,
      description: 'Mails a security notice to the account’s address after its authenticator app was removed.',
      handle: ({ id, payload }) =>
        notice(
          `${id}:second-factor-removed-notice`,
          payload.email,
          'Two-step sign-in changed on your account',
          'The authenticator app was removed from your account: signing in no longer asks for its codes.',
          'second-factor-removed-notice',
        ),
    }),
    defineEventHandler({
      name: 'notifications.second-factor-removed-alert',
      module: 'notifications',
      event: UserSecondFactorRemovedEvent,
      description: 'Creates a personal SecurityAlert after the authenticator app was removed.',
      async handle({ id, payload }) {
        await service.notify([
          {
            userId: payload.userId,
            organizationId: null,
            type: 'SecurityAlert',
            title: 'Authenticator app removed',
            message:
              'The authenticator app was removed from your account. If you did not do this, change your password and contact your administrator at once.',
            sourceKey: `${id}:second-factor-removed`,
          },
        ]);
      },
    }),
    defineEventHandler({
      name: 'notifications.mail-second-factors-reset-notice',
      module: 'notifications',
      event: UserSecondFactorsResetEvent,
      description: 'Mails a security notice to the account’s address after an administrator reset its second factors.',
      handle: ({ id, payload }) =>
        notice(
          `${id}:second-factors-reset-notice`,
          payload.email,
          'Your two-step sign-in was reset',
          'An administrator of your organization reset the two-step sign-in of your account: your authenticator app and recovery codes no longer work. Set up a new one from your account page.',
          'second-factors-reset-notice',
        ),
    }),
    defineEventHandler({
      name: 'notifications.second-factors-reset-alert',
      module: 'notifications',
      event: UserSecondFactorsResetEvent,
      description: 'Creates a personal SecurityAlert after an administrator reset the second factors.',
      async handle({ id, payload }) {
        await service.notify([
          {
            userId: payload.userId,
            organizationId: null,
            type: 'SecurityAlert',
            title: 'Two-step sign-in reset',
            message:
              'An administrator reset your two-step sign-in: your authenticator app and recovery codes no longer work. Set up a new one from your account page.',
            sourceKey: `${id}:second-factors-reset`,
          },
        ]);
      },
    }),
  ];
}
