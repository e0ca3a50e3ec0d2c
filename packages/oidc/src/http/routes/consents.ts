import { defineRoute, json, noContent, type Route } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import type { ConsentStore } from '../../interactions/stores.js';

const Consent = z.object({ clientId: z.string(), scopes: z.array(z.string()), updatedAt: z.string() });

/**
 * The caller's remembered consents: `GET /v1/identity/consents` and
 * `DELETE /v1/identity/consents/{clientId}` (withdraws the consent and ends
 * the client's grants for the user).
 */
export function createConsentRoutes(
  consents: ConsentStore,
  revokeGrants: (userId: string, clientId: string) => Promise<void>,
): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/consents',
      operationId: 'listConsents',
      summary: 'The applications you allowed, with the scopes you allowed them',
      tags: ['Consents'],
      tenant: 'optional',
      responses: { 200: { description: 'Remembered consents', schema: z.array(Consent) } },
      handler: async ({ principal }) => {
        if (!principal?.userId) return json([]);
        return json(await consents.list(principal.userId));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/consents/{clientId}',
      operationId: 'withdrawConsent',
      summary: 'Withdraw your consent to an application; its refresh tokens for you stop working',
      tags: ['Consents'],
      tenant: 'optional',
      request: { params: z.object({ clientId: z.string().min(1).max(200) }) },
      problemCodes: ['Clients.NotFound'],
      responses: { 204: { description: 'Withdrawn' }, 404: { description: 'No consent for that application' } },
      handler: async ({ params, principal }) => {
        if (!principal?.userId || !(await consents.forget(principal.userId, params.clientId))) {
          throw new ProblemError('Clients.NotFound', 'You have not allowed that application.');
        }
        await revokeGrants(principal.userId, params.clientId);
        return noContent();
      },
    }),
  ];
}
