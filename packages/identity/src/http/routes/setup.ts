import { auditRequestOf, defineRoute, json, type Route } from '@idt/core';
import { z } from 'zod';
import { SetupAdminInput, type SetupService } from '../../setup/service.js';

const SetupStatus = z.object({ setupRequired: z.boolean() });
const SetupCreated = z.object({ userId: z.uuid(), organizationId: z.uuid() });

/** `GET /v1/identity/setup/status` and `POST /v1/identity/setup/admin` (SPEC 4.6). */
export function createSetupRoutes(setup: SetupService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/setup/status',
      operationId: 'getSetupStatus',
      summary: 'Whether the service still needs its first administrator',
      tags: ['Setup'],
      auth: 'anonymous',
      responses: { 200: { description: 'The setup state', schema: SetupStatus } },
      handler: async () => json({ setupRequired: await setup.isSetupRequired() }, { headers: { 'cache-control': 'no-store' } }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/setup/admin',
      operationId: 'createSetupAdmin',
      summary: 'Create the first administrator, the platform organization and its owner membership',
      description: 'Available once: afterwards it answers 409 `Setup.AlreadyCompleted`.',
      tags: ['Setup'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { body: SetupAdminInput },
      problemCodes: ['Setup.AlreadyCompleted', 'Identity.EmailTaken'],
      responses: {
        201: { description: 'Setup is complete', schema: SetupCreated },
        409: { description: 'Setup was already complete (`Setup.AlreadyCompleted`) or the e-mail is taken' },
      },
      handler: async (ctx) => json(await setup.completeSetup(ctx.body, { via: 'api', ...auditRequestOf(ctx) }), { status: 201 }),
    }),
  ];
}
