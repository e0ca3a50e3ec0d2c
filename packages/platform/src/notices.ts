import { defineEventHandler, type EventHandlerDefinition, type Logger } from '@idt/core';
import type { PlatformDirectory } from './access.js';
import type { AnnouncementsStore } from './announcements/store.js';
import { AnnouncementPublishedEvent, WebhookEndpointDisabledEvent } from './events.js';

/**
 * The port through which the platform module creates in-app notifications:
 * `idt.services.notifications.service` of `@idt/notifications` is one.
 * Creation is idempotent per `sourceKey` and user.
 */
export interface PlatformNotifier {
  notify(
    notifications: ReadonlyArray<{
      readonly userId: string;
      readonly organizationId: string | null;
      readonly type: 'Announcement' | 'SystemNotification';
      readonly title: string;
      readonly message: string;
      readonly actionUrl?: string | null;
      readonly sourceKey: string;
    }>,
  ): Promise<unknown>;
}

/** Options of {@link createPlatformNoticeHandlers}. */
export interface PlatformNoticeOptions {
  /** Absent when the notifications module is not composed: administrators are then told through the log only. */
  readonly notifier?: PlatformNotifier;
  readonly directory: PlatformDirectory;
  readonly announcements: Pick<AnnouncementsStore, 'find'>;
  readonly logger: Logger;
}

/** Notifications are created this many at a time (an announcement to every organization can reach many members). */
const BATCH = 500;

/**
 * The platform module's notices, idempotent per event id:
 * - `AnnouncementPublishedEvent` → one in-app `Announcement` notification
 *   per targeted member who may read announcements (`AnnouncementRead`):
 *   of the organization, holding the role, or of every organization for
 *   `all`; nothing when the announcement was unpublished meanwhile;
 * - `WebhookEndpointDisabledEvent` → a `SystemNotification` to each owner
 *   and admin of the platform organization, and a warning in the log.
 */
export function createPlatformNoticeHandlers(options: PlatformNoticeOptions): EventHandlerDefinition<any>[] {
  const { notifier, directory, logger } = options;
  const handlers: EventHandlerDefinition<any>[] = [
    defineEventHandler({
      name: 'platform.webhook-endpoint-disabled-notice',
      module: 'platform',
      event: WebhookEndpointDisabledEvent,
      description: 'Tells the platform administrators that delivery disabled a webhook endpoint.',
      async handle({ id, payload }) {
        logger.warn('a webhook endpoint was disabled', { endpointId: payload.endpointId, reason: payload.reason });
        if (!notifier) return;
        const admins = await directory.platformAdministrators();
        await notifier.notify(
          admins.map((admin) => ({
            userId: admin.userId,
            organizationId: admin.organizationId,
            type: 'SystemNotification' as const,
            title: 'A webhook endpoint was disabled',
            message: `${payload.url}: ${payload.reason} Fix the receiver, then enable the endpoint again; failed messages can be redelivered.`,
            actionUrl: `/v1/webhooks/endpoints/${payload.endpointId}`,
            sourceKey: `${id}:webhook-endpoint-disabled`,
          })),
        );
      },
    }),
  ];
  if (!notifier) return handlers;
  handlers.push(
    defineEventHandler({
      name: 'platform.announcement-notifications',
      module: 'platform',
      event: AnnouncementPublishedEvent,
      description: 'Creates one in-app Announcement notification per member the published announcement targets.',
      async handle({ id, payload }) {
        const announcement = await options.announcements.find(payload.organizationId, payload.announcementId);
        if (announcement?.status !== 'Published') return;
        if (announcement.target === 'role' && announcement.targetValue === null) return;
        // Those who can read it: the readers of GET /v1/announcements.
        const members = await directory.members(
          announcement.target === 'all' ? null : announcement.organizationId,
          'AnnouncementRead',
          announcement.target === 'role' && announcement.targetValue !== null ? announcement.targetValue : undefined,
        );
        const message = announcement.content.length > 2000 ? `${announcement.content.slice(0, 1999)}…` : announcement.content;
        for (let start = 0; start < members.length; start += BATCH) {
          await notifier.notify(
            members.slice(start, start + BATCH).map((member) => ({
              userId: member.userId,
              organizationId: member.organizationId,
              type: 'Announcement' as const,
              title: announcement.title,
              message,
              actionUrl: announcement.actionUrl ?? '/v1/announcements',
              // Per organization: with target `all`, one person can be a member of several.
              sourceKey: `${id}:announcement:${member.organizationId}`,
            })),
          );
        }
        logger.debug('announcement notifications created', { announcementId: announcement.id, members: members.length });
      },
    }),
  );
  return handlers;
}
