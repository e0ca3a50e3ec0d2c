import { defineRoute, json, noContent, type Route } from '@idt/core';
import { z } from 'zod';
import { callerOf } from '../access.js';
import { AnnouncementInput, AnnouncementListQuery, AnnouncementResponse } from '../announcements/schemas.js';
import type { AnnouncementsService } from '../announcements/service.js';

const TAGS = ['Announcements'];
const IdParams = z.object({ id: z.string().min(1).max(100).describe('The announcement id (a GUID).') });
const notFound = { description: 'No such announcement in your organization (`Announcements.NotFound`)' } as const;
const invalidMove = { description: 'Not a move its status allows (`Announcements.InvalidStatusTransition`)' } as const;

/**
 * The routes of announcements: readers under `/v1/announcements`
 * (`AnnouncementRead`), managers under `/v1/admin/announcements`
 * (`AnnouncementManage`), both on the token's organization.
 *
 * @example
 * routes.push(...createAnnouncementRoutes(announcements));
 */
export function createAnnouncementRoutes(announcements: AnnouncementsService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/announcements',
      operationId: 'listActiveAnnouncements',
      summary: 'The announcements for you: active, targeted, not dismissed',
      description: 'Pinned first, then newest. Includes announcements platform administrators sent to every organization.',
      tags: TAGS,
      permissions: ['AnnouncementRead'],
      responses: { 200: { description: 'The announcements', schema: z.array(AnnouncementResponse) } },
      handler: async ({ principal }) => json(await announcements.listActive(callerOf(principal))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/announcements/{id}/dismiss',
      operationId: 'dismissAnnouncement',
      summary: 'Dismiss an announcement for yourself',
      description: 'Idempotent. A non-dismissible one is 422 `Announcements.NotDismissible`.',
      tags: TAGS,
      permissions: ['AnnouncementRead'],
      request: { params: IdParams },
      problemCodes: ['Announcements.NotFound', 'Announcements.NotDismissible'],
      responses: {
        204: { description: 'Dismissed' },
        404: notFound,
        422: { description: 'The announcement cannot be dismissed (`Announcements.NotDismissible`)' },
      },
      handler: async ({ principal, params }) => {
        await announcements.dismiss(callerOf(principal), params.id);
        return noContent();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/admin/announcements',
      operationId: 'listAnnouncements',
      summary: 'Every announcement of your organization, newest first',
      tags: TAGS,
      permissions: ['AnnouncementManage'],
      request: { query: AnnouncementListQuery },
      responses: { 200: { description: 'The announcements', schema: z.array(AnnouncementResponse) } },
      handler: async ({ principal, query }) => json(await announcements.list(callerOf(principal), query.status)),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/admin/announcements',
      operationId: 'createAnnouncement',
      summary: 'Create an announcement',
      description:
        'Scheduled when `publishAt` is in the future (the job publishes it then), else Draft. Target `all` (every organization) is for platform administrators only.',
      tags: TAGS,
      permissions: ['AnnouncementManage'],
      request: { body: AnnouncementInput },
      responses: {
        201: {
          description: 'The announcement',
          schema: AnnouncementResponse,
          headers: { Location: '`/v1/admin/announcements/{id}`' },
        },
      },
      handler: async ({ prefix, principal, body }) => {
        const created = await announcements.create(callerOf(principal), body);
        return json(created, { status: 201, headers: { location: `${prefix}/v1/admin/announcements/${created.id}` } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/admin/announcements/{id}',
      operationId: 'getAnnouncement',
      summary: 'One announcement of your organization',
      tags: TAGS,
      permissions: ['AnnouncementManage'],
      request: { params: IdParams },
      problemCodes: ['Announcements.NotFound'],
      responses: { 200: { description: 'The announcement', schema: AnnouncementResponse }, 404: notFound },
      handler: async ({ principal, params }) => json(await announcements.get(callerOf(principal), params.id)),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/admin/announcements/{id}',
      operationId: 'updateAnnouncement',
      summary: 'Replace an announcement’s fields',
      description:
        'Draft, Scheduled and Published ones; a Draft or Scheduled one becomes Scheduled or Draft by its new `publishAt`. Expired and Archived ones are 422.',
      tags: TAGS,
      permissions: ['AnnouncementManage'],
      request: { params: IdParams, body: AnnouncementInput },
      problemCodes: ['Announcements.NotFound', 'Announcements.InvalidStatusTransition'],
      responses: { 200: { description: 'The announcement', schema: AnnouncementResponse }, 404: notFound, 422: invalidMove },
      handler: async ({ principal, params, body }) => json(await announcements.update(callerOf(principal), params.id, body)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/admin/announcements/{id}',
      operationId: 'archiveAnnouncement',
      summary: 'Archive an announcement',
      description: 'Announcements are archived, never deleted. Idempotent.',
      tags: TAGS,
      permissions: ['AnnouncementManage'],
      request: { params: IdParams },
      problemCodes: ['Announcements.NotFound'],
      responses: { 204: { description: 'Archived' }, 404: notFound },
      handler: async ({ principal, params }) => {
        await announcements.archive(callerOf(principal), params.id);
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/admin/announcements/{id}/publish',
      operationId: 'publishAnnouncement',
      summary: 'Publish an announcement now',
      description: 'From Draft or Scheduled; publishing a published one changes nothing. Publishes `AnnouncementPublishedEvent`.',
      tags: TAGS,
      permissions: ['AnnouncementManage'],
      request: { params: IdParams },
      problemCodes: ['Announcements.NotFound', 'Announcements.InvalidStatusTransition'],
      responses: { 200: { description: 'The announcement', schema: AnnouncementResponse }, 404: notFound, 422: invalidMove },
      handler: async ({ principal, params }) => json(await announcements.publish(callerOf(principal), params.id)),
    }),
  ];
}
