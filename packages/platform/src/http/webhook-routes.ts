import { auditRequestOf, defineRoute, json, noContent, type Route } from '@idt/core';
import { z } from 'zod';
import { callerOf } from '../access.js';
import {
  DeliveriesQuery,
  DeliveryAttemptPage,
  EndpointCreated,
  EndpointInput,
  EndpointPatch,
  EndpointResponse,
  RotateSecretInput,
} from '../webhooks/schemas.js';
import type { WebhooksService } from '../webhooks/service.js';

const TAGS = ['Webhooks'];
const IdParams = z.object({ id: z.string().min(1).max(100).describe('The endpoint id (a GUID).') });
const notFound = { description: 'No such endpoint (`Webhooks.EndpointNotFound`)' } as const;
const PERMISSIONS = ['WebhooksManage'];

/**
 * The routes of `/v1/webhooks`: platform administrators, or platform service
 * accounts with `webhooks.manage`; everyone else 403 `Auth.Forbidden`.
 *
 * @example
 * routes.push(...createWebhookRoutes(webhooks));
 */
export function createWebhookRoutes(webhooks: WebhooksService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks/event-types',
      operationId: 'listWebhookEventTypes',
      summary: 'The event types endpoints can subscribe to',
      tags: TAGS,
      permissions: PERMISSIONS,
      responses: {
        200: { description: 'The types', schema: z.array(z.object({ type: z.string(), description: z.string() })) },
      },
      handler: async ({ principal }) => json(await webhooks.eventTypes(callerOf(principal))),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks/endpoints',
      operationId: 'listWebhookEndpoints',
      summary: 'Every webhook endpoint',
      tags: TAGS,
      permissions: PERMISSIONS,
      responses: { 200: { description: 'The endpoints', schema: z.array(EndpointResponse) } },
      handler: async ({ principal }) => json(await webhooks.list(callerOf(principal))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/webhooks/endpoints',
      operationId: 'createWebhookEndpoint',
      summary: 'Create a webhook endpoint',
      description:
        'The answer carries the signing secret (`whsec_…`) this once. Loopback and private hosts are 422 `Webhooks.PrivateHostRefused` unless the deployment allows them; then plain http is accepted too. Cloud metadata hosts (169.254.169.254 and the like, or a name resolving to one) are 422 whatever the deployment allows.',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: { body: EndpointInput },
      problemCodes: ['Webhooks.UnknownEventType', 'Webhooks.PrivateHostRefused'],
      responses: {
        201: {
          description: 'The endpoint and its secret',
          schema: EndpointCreated,
          headers: { Location: '`/v1/webhooks/endpoints/{id}`' },
        },
        422: { description: 'A loopback, private or cloud metadata host (`Webhooks.PrivateHostRefused`)' },
      },
      handler: async (route) => {
        const created = await webhooks.create(callerOf(route.principal), route.body, auditRequestOf(route));
        return json(created, {
          status: 201,
          headers: { location: `${route.prefix}/v1/webhooks/endpoints/${created.endpoint.id}` },
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks/endpoints/{id}',
      operationId: 'getWebhookEndpoint',
      summary: 'One webhook endpoint',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: { params: IdParams },
      problemCodes: ['Webhooks.EndpointNotFound'],
      responses: { 200: { description: 'The endpoint', schema: EndpointResponse }, 404: notFound },
      handler: async ({ principal, params }) => json(await webhooks.get(callerOf(principal), params.id)),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/webhooks/endpoints/{id}',
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint',
      description: 'Enabling a disabled endpoint clears its disabled reason and failure streak.',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: { params: IdParams, body: EndpointPatch },
      problemCodes: ['Webhooks.EndpointNotFound', 'Webhooks.UnknownEventType', 'Webhooks.PrivateHostRefused'],
      responses: { 200: { description: 'The endpoint', schema: EndpointResponse }, 404: notFound },
      handler: async (route) =>
        json(await webhooks.update(callerOf(route.principal), route.params.id, route.body, auditRequestOf(route))),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/webhooks/endpoints/{id}',
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint and its delivery log',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: { params: IdParams },
      problemCodes: ['Webhooks.EndpointNotFound'],
      responses: { 204: { description: 'Deleted' }, 404: notFound },
      handler: async (route) => {
        await webhooks.remove(callerOf(route.principal), route.params.id, auditRequestOf(route));
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/webhooks/endpoints/{id}/rotate-secret',
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate an endpoint’s signing secret',
      description: 'The previous secret keeps signing (a second `v1,` entry) for `graceSeconds` (0..604800, 86400 by default).',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: { params: IdParams, body: RotateSecretInput },
      problemCodes: ['Webhooks.EndpointNotFound'],
      responses: {
        200: {
          description: 'The new secret',
          schema: z.object({ secret: z.string(), previousSecretExpiresAt: z.string().meta({ format: 'date-time' }) }),
        },
        404: notFound,
      },
      handler: async (route) =>
        json(await webhooks.rotateSecret(callerOf(route.principal), route.params.id, route.body, auditRequestOf(route))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/webhooks/endpoints/{id}/test',
      operationId: 'testWebhookEndpoint',
      summary: 'Send a webhook.test message to an endpoint',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: { params: IdParams },
      problemCodes: ['Webhooks.EndpointNotFound'],
      responses: { 202: { description: 'Queued', schema: z.object({ messageId: z.string() }) }, 404: notFound },
      handler: async ({ principal, params }) => json(await webhooks.sendTest(callerOf(principal), params.id), { status: 202 }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks/endpoints/{id}/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: 'An endpoint’s delivery attempts, newest first',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: { params: IdParams, query: DeliveriesQuery },
      problemCodes: ['Webhooks.EndpointNotFound'],
      responses: { 200: { description: 'A page of attempts', schema: DeliveryAttemptPage }, 404: notFound },
      handler: async ({ principal, params, query }) => json(await webhooks.deliveries(callerOf(principal), params.id, query)),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/webhooks/messages/{messageId}/retry',
      operationId: 'retryWebhookMessage',
      summary: 'Send a message to an endpoint again',
      description: 'A new series of attempts under the same `webhook-id`.',
      tags: TAGS,
      permissions: PERMISSIONS,
      request: {
        params: z.object({ messageId: z.string().min(1).max(100) }),
        query: z.object({ endpointId: z.string({ error: 'Name the endpoint.' }).min(1).max(100) }),
      },
      problemCodes: ['Webhooks.EndpointNotFound', 'Webhooks.MessageNotFound'],
      responses: { 202: { description: 'Queued' }, 404: { description: 'No such endpoint or message' } },
      handler: async ({ principal, params, query }) => {
        await webhooks.retry(callerOf(principal), params.messageId, query.endpointId);
        return json({ messageId: params.messageId }, { status: 202 });
      },
    }),
  ];
}
