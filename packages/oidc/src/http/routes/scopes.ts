import { defineRoute, json, type Route } from '@idt/core';
import { z } from 'zod';
import type { ClientService } from '../../clients/service.js';

const ScopeEntry = z.object({ scope: z.string(), description: z.string(), default: z.boolean(), platformOnly: z.boolean() });

/** `GET /v1/identity/scopes`: the scope catalog (SPEC 2.2), permission `ScopeRead`. */
export function createScopeRoutes(clients: ClientService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/scopes',
      operationId: 'listScopes',
      summary: 'The scope catalog: every grantable scope with its default and platform-only flags',
      tags: ['Clients'],
      permissions: ['ScopeRead'],
      responses: { 200: { description: 'Scope catalog entries', schema: z.array(ScopeEntry) } },
      handler: async () => json(await clients.scopes()),
    }),
  ];
}
