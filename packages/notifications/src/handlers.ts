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
  type EmailChangeService,
  type MemberDirectory,
  UserEmailChangedEvent,
  UserEmailChangeRequestedEvent,
  UserSessionEvictedEvent,
} from '@idt/identity';
import { InquirySubmittedEvent } from '@idt/inquiries';
import { createMailOnce } from './mail-once.js';
import type { NotificationsService } from './service.js';
import type { NotificationStore } from './store.js';

/** Options of {@link createNotificationHandlers}. */
export interface NotificationHandlerOptions {
  /** Where the mails sent are recorded. */
  readonly store: Pick<NotificationStore, 'wasMailed' | 'recordMail'>;
  readonly service: NotificationsService;
  readonly mailer: Mailer;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The public base URL, for links in mails. */
  readonly baseUrl: string;
  /** The identity module's e-mail change service: the confirmation link of a pending change. */
  readonly emailChange: Pick<EmailChangeService, 'pendingConfirmation'>;
  /** The identity module's member directory: who holds `InquiriesRead`. */
  readonly members: Pick<MemberDirectory, 'withPermission'>;
}

/**
 * The notifications module's reactions to integration events. Each is
 * idempotent per event id (the outbox delivers at least once): notifications
 * carry the event id as their source key, and every mail sent is recorded
 * per event and recipient before the next one goes out.
 *
 * - `InquirySubmittedEvent` → an in-app `InquirySubmitted` notification and a
 *   mail to every member of the organization holding `InquiriesRead`,
 *   unless they opted out of that channel or type;
 * - `UserEmailChangeRequestedEvent` → the confirmation link mailed to the
 *   new address (transactional: preferences do not apply), unless the change
 *   was confirmed or replaced meanwhile;
 * - `UserEmailChangedEvent` → a security notice mailed to the old address
 *   (transactional) and an in-app `SecurityAlert` (personal);
 * - `UserSessionEvictedEvent` → an in-app `SecurityAlert` (personal).
 */
export function createNotificationHandlers(options: NotificationHandlerOptions): EventHandlerDefinition<any>[] {
  const { store, service, mailer, clock, logger } = options;

  const mailOnce = createMailOnce({ store, mailer, clock });

  return [
    defineEventHandler({
      name: 'notifications.inquiry-submitted',
      module: 'notifications',
      event: InquirySubmittedEvent,
      description: 'Notifies (in-app and by mail, unless opted out) every member holding InquiriesRead of a new inquiry.',
      async handle({ id, payload }) {
        const staff = await options.members.withPermission('InquiriesRead', { organizationId: payload.organizationId });
        const title = `New inquiry from ${payload.name}`.slice(0, 200);
        const message = `${payload.name} (${payload.email}) sent an inquiry about ${payload.projectType}.`.slice(0, 2000);
        const actionUrl = `/v1/inquiries/${payload.inquiryId}`;
        await service.notify(
          staff.map((member) => ({
            userId: member.userId,
            organizationId: payload.organizationId,
            type: 'InquirySubmitted' as const,
            title,
            message,
            actionUrl,
            sourceKey: `${id}:inquiry-submitted`,
          })),
        );
        const link = `${options.baseUrl}${actionUrl}`;
        for (const member of staff) {
          if (!(await service.accepts(member.userId, payload.organizationId, 'email', 'InquirySubmitted'))) continue;
          await mailOnce(`${id}:inquiry-submitted`, {
            to: member.email,
            subject: title,
            text: [
              message,
              '',
              `Open it: ${link}`,
              '',
              'You get this because you can read inquiries; turn it off in your notification preferences.',
            ].join('\n'),
            html: joinMarkup(
              [
                markup`<p>${message}</p>`,
                markup`<p><a href="${link}">Open the inquiry</a></p>`,
                markup`<p style="color:#666">You get this because you can read inquiries; turn it off in your notification preferences.</p>`,
              ],
              '\n',
            ).text,
            headers: { 'X-Idt-Template': 'inquiry-submitted' },
          });
        }
        logger.debug('inquiry notifications sent', { inquiryId: payload.inquiryId, staff: staff.length });
      },
    }),
    defineEventHandler({
      name: 'notifications.mail-email-change-confirmation',
      module: 'notifications',
      event: UserEmailChangeRequestedEvent,
      description: 'Mails the confirmation link of an e-mail change to the new address.',
      async handle({ id, payload }) {
        const pending = await options.emailChange.pendingConfirmation(payload.changeId, payload.userId);
        if (!pending) {
          logger.info('e-mail change confirmed or replaced before its link was mailed', { changeId: payload.changeId });
          return;
        }
        const until = new Date(pending.expiresAt).toUTCString();
        await mailOnce(`${id}:email-change-confirmation`, {
          to: pending.newEmail,
          subject: 'Confirm your new e-mail address',
          text: [
            'You asked to use this e-mail address for your account.',
            '',
            `Confirm it by opening this link within 24 hours (until ${until}):`,
            pending.link,
            '',
            "If you didn't ask for this, ignore this message; nothing changes.",
          ].join('\n'),
          html: joinMarkup(
            [
              markup`<p>You asked to use this e-mail address for your account.</p>`,
              markup`<p><a href="${pending.link}">Confirm your new e-mail address</a> within 24 hours (until ${until}).</p>`,
              markup`<p style="color:#666">If the button does not work, paste this link into your browser:<br>${pending.link}</p>`,
              markup`<p style="color:#666">If you didn't ask for this, ignore this message; nothing changes.</p>`,
            ],
            '\n',
          ).text,
          headers: { 'X-Idt-Template': 'email-change-confirmation' },
        });
      },
    }),
    defineEventHandler({
      name: 'notifications.mail-email-changed-notice',
      module: 'notifications',
      event: UserEmailChangedEvent,
      description: 'Mails a security notice to the old address after an e-mail change.',
      async handle({ id, payload }) {
        const changed = `The e-mail address of your account was changed from ${payload.oldEmail} to ${payload.newEmail}.`;
        await mailOnce(`${id}:email-changed-notice`, {
          to: payload.oldEmail,
          subject: 'Your e-mail address was changed',
          text: [
            changed,
            'You now sign in with the new address.',
            '',
            "If you didn't do this, contact your administrator at once.",
          ].join('\n'),
          html: joinMarkup(
            [
              markup`<p>${changed}</p>`,
              markup`<p>You now sign in with the new address.</p>`,
              markup`<p><strong>If you didn't do this, contact your administrator at once.</strong></p>`,
            ],
            '\n',
          ).text,
          headers: { 'X-Idt-Template': 'email-changed-notice' },
        });
      },
    }),
    defineEventHandler({
      name: 'notifications.email-changed-alert',
      module: 'notifications',
      event: UserEmailChangedEvent,
      description: 'Creates a personal SecurityAlert when a user changed their e-mail address.',
      async handle({ id, payload }) {
        await service.notify([
          {
            userId: payload.userId,
            organizationId: null,
            type: 'SecurityAlert',
            title: 'Your e-mail address was changed',
            message: `You now sign in with ${payload.newEmail} instead of ${payload.oldEmail}. If you did not do this, contact your administrator at once.`,
            sourceKey: `${id}:email-changed`,
          },
        ]);
      },
    }),
    defineEventHandler({
      name: 'notifications.session-evicted-alert',
      module: 'notifications',
      event: UserSessionEvictedEvent,
      description: 'Creates a personal SecurityAlert when a newer sign-in evicted one of the user’s sessions.',
      async handle({ id, payload }) {
        await service.notify([
          {
            userId: payload.userId,
            organizationId: null,
            type: 'SecurityAlert',
            title: 'Signed out on an older device',
            message: 'A new sign-in went past the number of sessions you may keep, so your oldest session was ended.',
            sourceKey: `${id}:session-evicted`,
          },
        ]);
      },
    }),
  ];
}
