import { defineRoute, json, noContent, PageQuery, type Principal, pageSchema, type Route } from '@idt/core';
import { UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { CreateNotificationInput, NotificationResponse, PreferenceInput, PreferencesResponse } from '../schemas.js';
import type { NotificationsService } from '../service.js';

const TAGS = ['Notifications'];
const IdParams = z.object({ id: z.string().min(1).max(100).describe('The notification id (a GUID).') });
const notFound = { description: 'No such notification of yours in this organization (`Notifications.NotFound`)' } as const;

function caller(principal: Principal | null): Principal {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  return principal;
}

/**
 * The routes of `/v1/notifications`: the caller's own notifications in the
 * token's organization (and personal ones), preferences, and sending a
 * notification to a member (`NotificationsWrite`).
 *
 * @example
 * routes.push(...createNotificationRoutes(service));
 */
export function createNotificationRoutes(service: NotificationsService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/notifications',
      operationId: 'listNotifications',
      summary: 'Your notifications, newest first (archived ones left out)',
      tags: TAGS,
      permissions: ['NotificationRead'],
      request: { query: PageQuery },
      responses: { 200: { description: 'A page of notifications', schema: pageSchema(NotificationResponse) } },
      handler: async ({ principal, query }) => json(await service.list(caller(principal), query)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/notifications/unread-count',
      operationId: 'countUnreadNotifications',
      summary: 'How many of your notifications are unread',
      tags: TAGS,
      permissions: ['NotificationRead'],
      responses: { 200: { description: 'The count', schema: z.object({ count: z.number().int() }) } },
      handler: async ({ principal }) => json({ count: await service.unreadCount(caller(principal)) }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/notifications/read-all',
      operationId: 'markAllNotificationsRead',
      summary: 'Mark every notification of yours read',
      tags: TAGS,
      permissions: ['NotificationRead'],
      responses: { 204: { description: 'Done' } },
      handler: async ({ principal }) => {
        await service.markAllRead(caller(principal));
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/notifications/{id}/read',
      operationId: 'markNotificationRead',
      summary: 'Mark a notification read (again is fine)',
      tags: TAGS,
      permissions: ['NotificationRead'],
      request: { params: IdParams },
      problemCodes: ['Notifications.NotFound'],
      responses: { 204: { description: 'Read' }, 404: notFound },
      handler: async ({ principal, params }) => {
        await service.markRead(caller(principal), params.id);
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/notifications/{id}/archive',
      operationId: 'archiveNotification',
      summary: 'Archive a notification: it leaves the list and the unread count',
      tags: TAGS,
      permissions: ['NotificationRead'],
      request: { params: IdParams },
      problemCodes: ['Notifications.NotFound'],
      responses: { 204: { description: 'Archived' }, 404: notFound },
      handler: async ({ principal, params }) => {
        await service.archive(caller(principal), params.id);
        return noContent();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/notifications/preferences',
      operationId: 'getNotificationPreferences',
      summary: 'Your notification preferences per channel and type in this organization',
      description: 'Everything is on until you turn it off. Transactional mail (e-mail change, security notices) ignores them.',
      tags: TAGS,
      permissions: ['EmailPreferenceManage'],
      responses: { 200: { description: 'The preferences', schema: PreferencesResponse } },
      handler: async ({ principal }) => json({ channels: await service.preferences(caller(principal)) }),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/notifications/preferences',
      operationId: 'setNotificationPreference',
      summary: 'Turn a channel, or one type on a channel, on or off',
      tags: TAGS,
      permissions: ['EmailPreferenceManage'],
      request: { body: PreferenceInput },
      responses: { 204: { description: 'Saved' } },
      handler: async ({ principal, body }) => {
        await service.setPreference(caller(principal), body);
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/notifications',
      operationId: 'sendNotification',
      summary: 'Send a notification to a member of your organization',
      description:
        'For services and administrators holding `NotificationsWrite` (scope `notifications.write`). The recipient gets it live on the realtime hub.',
      tags: TAGS,
      permissions: ['NotificationsWrite'],
      request: { body: CreateNotificationInput },
      problemCodes: ['Notifications.RecipientNotMember'],
      responses: {
        201: { description: 'Created', schema: z.object({ id: z.string() }) },
        422: { description: 'The recipient is not an active member of your organization (`Notifications.RecipientNotMember`)' },
      },
      handler: async ({ principal, body }) => {
        const record = await service.send(caller(principal), body);
        return json({ id: record.id }, { status: 201 });
      },
    }),
  ];
}
