import { defineRoute, json, type Principal, type Route } from '@idt/core';
import { UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import {
  ChangeStatusInput,
  CommentCreated,
  CommentInput,
  CommentResponse,
  InquiryInput,
  InquiryListQuery,
  InquiryResponse,
} from '../schemas.js';
import type { InquiriesService } from '../service.js';

const TAGS = ['Inquiries'];
const IdParams = z.object({ id: z.string().min(1).max(100).describe('The inquiry id (a GUID).') });
const CommentParams = IdParams.extend({ commentId: z.string().min(1).max(100).describe('The comment id (a GUID).') });
const notFound = {
  description: 'No such inquiry in your organization, or one you may not see (`Inquiry.NotFound`)',
} as const;

function caller(principal: Principal | null): Principal {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  return principal;
}

/**
 * The routes of `/v1/inquiries` (SPEC 4.8), tenant-owned: they work on the
 * token's organization only.
 *
 * @example
 * routes.push(...createInquiryRoutes(inquiries));
 */
export function createInquiryRoutes(inquiries: InquiriesService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/inquiries',
      operationId: 'listInquiries',
      summary: 'Every inquiry of your organization, newest first',
      description: 'Filter with `status` (case-insensitive); a value that names no status is ignored.',
      tags: TAGS,
      permissions: ['InquiriesRead'],
      request: { query: InquiryListQuery },
      responses: { 200: { description: 'The inquiries', schema: z.array(InquiryResponse) } },
      handler: async ({ principal, query }) => json(await inquiries.list(caller(principal), { status: query.status })),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/inquiries/submitted',
      operationId: 'listSubmittedInquiries',
      summary: 'The inquiries you submitted, newest first',
      description: 'Empty for a service account, whose inquiries have no submitter.',
      tags: TAGS,
      responses: { 200: { description: 'Your inquiries', schema: z.array(InquiryResponse) } },
      handler: async ({ principal }) => json(await inquiries.listSubmitted(caller(principal))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/inquiries',
      operationId: 'submitInquiry',
      summary: 'Submit an inquiry',
      description:
        'The submitter is the caller (null for a service account), never a body field. The caller’s IP address is kept and never returned. Publishes `InquirySubmittedEvent`.',
      tags: TAGS,
      permissions: ['InquiriesWrite'],
      request: { body: InquiryInput },
      responses: { 200: { description: 'The new inquiry, status `New`', schema: InquiryResponse } },
      handler: async ({ principal, body, clientIp }) => json(await inquiries.submit(caller(principal), body, { ip: clientIp })),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/inquiries/{id}',
      operationId: 'getInquiry',
      summary: 'One inquiry',
      description: 'Without `InquiriesRead`, only an inquiry you submitted; any other answers 404.',
      tags: TAGS,
      request: { params: IdParams },
      problemCodes: ['Inquiry.NotFound'],
      responses: { 200: { description: 'The inquiry', schema: InquiryResponse }, 404: notFound },
      handler: async ({ principal, params }) => json(await inquiries.get(caller(principal), params.id)),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/inquiries/{id}/status',
      operationId: 'changeInquiryStatus',
      summary: 'Move an inquiry to its next status',
      description:
        'New → Reviewed → Contacted → Closed, one step at a time; any other move (staying put included) is 422 `Inquiries.InvalidStatusTransition`. `newStatus` is case-insensitive. Without `InquiriesRead`, only an inquiry you submitted.',
      tags: TAGS,
      permissions: ['InquiriesWrite'],
      request: { params: IdParams, body: ChangeStatusInput },
      problemCodes: ['Inquiry.NotFound', 'Inquiries.InvalidStatusTransition'],
      responses: {
        200: { description: 'The inquiry with its new status', schema: InquiryResponse },
        404: notFound,
        422: { description: 'Not the next status (`Inquiries.InvalidStatusTransition`)' },
      },
      handler: async ({ principal, params, body }) =>
        json(await inquiries.changeStatus(caller(principal), params.id, body.newStatus)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/inquiries/{id}/comments',
      operationId: 'listInquiryComments',
      summary: 'The comments on an inquiry, oldest first',
      description: 'Internal comments are included only for callers with `InquiriesRead`.',
      tags: TAGS,
      request: { params: IdParams },
      problemCodes: ['Inquiry.NotFound'],
      responses: { 200: { description: 'The comments', schema: z.array(CommentResponse) }, 404: notFound },
      handler: async ({ principal, params }) => json(await inquiries.listComments(caller(principal), params.id)),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/inquiries/{id}/comments',
      operationId: 'addInquiryComment',
      summary: 'Comment on an inquiry',
      description: 'The author id and name come from the token. An internal comment (staff only) also needs `InquiriesRead`.',
      tags: TAGS,
      permissions: ['InquiriesWrite'],
      request: { params: IdParams, body: CommentInput },
      problemCodes: ['Inquiry.NotFound'],
      responses: {
        201: {
          description: 'The comment was added',
          schema: CommentCreated,
          headers: { Location: '`/v1/inquiries/{id}/comments/{commentId}`' },
        },
        404: notFound,
      },
      handler: async ({ prefix, principal, params, body }) => {
        const created = await inquiries.addComment(caller(principal), params.id, body);
        const inquiryId = encodeURIComponent(params.id.trim().toLowerCase());
        return json(created, {
          status: 201,
          headers: { location: `${prefix}/v1/inquiries/${inquiryId}/comments/${created.id}` },
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/inquiries/{id}/comments/{commentId}',
      operationId: 'getInquiryComment',
      summary: 'One comment on an inquiry',
      description: 'An internal comment is visible only to callers with `InquiriesRead`.',
      tags: TAGS,
      request: { params: CommentParams },
      problemCodes: ['Inquiry.NotFound', 'Inquiry.CommentNotFound'],
      responses: {
        200: { description: 'The comment', schema: CommentResponse },
        404: { description: 'No such inquiry (`Inquiry.NotFound`) or comment (`Inquiry.CommentNotFound`) you may see' },
      },
      handler: async ({ principal, params }) => json(await inquiries.getComment(caller(principal), params.id, params.commentId)),
    }),
  ];
}
