import { auditActorOf, auditRequestOf, defineRoute, json, noContent, type Principal, type Route } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import type { ClientAuditContext } from '../../audit-actions.js';
import {
  BrandingInput,
  BrandingSchema,
  ClientRecordSchema,
  RegisterClientInput,
  RotateSecretInput,
  UpdateClientInput,
} from '../../clients/schemas.js';
import type { ClientActor, ClientService } from '../../clients/service.js';

const RegistrationResponse = z.object({
  client: ClientRecordSchema,
  clientSecret: z.string(),
  issuer: z.string(),
  apiBaseUrl: z.string(),
});

// Compared with the token's (lowercase) organization id, as the identity routes do.
const OrgParams = z.object({ orgId: z.uuid({ error: 'Use an organization id.' }).transform((value) => value.toLowerCase()) });
const ClientParams = OrgParams.extend({ clientId: z.string().min(1).max(200) });
const PlatformClientParams = z.object({ clientId: z.string().min(1).max(200) });

/** Decides whether a caller is a platform administrator (AdminAccess in the platform organization). */
export type PlatformCheck = (principal: Principal | null) => Promise<boolean>;

/** The audit actor and request facts of a route's call (a client route always has a principal by then). */
function auditOf(route: Parameters<typeof auditRequestOf>[0] & { readonly principal: Principal | null }): ClientAuditContext {
  const actor = route.principal ? auditActorOf(route.principal) : ({ type: 'system', id: null, display: null } as const);
  return { actor, request: auditRequestOf(route) };
}

const CLIENT_CODES = ['Clients.NotFound', 'Clients.IdTaken', 'Identity.PlatformOnlyScope', 'Clients.OrganizationInactive'];

/**
 * The organization-scoped clients surface (SPEC 4.1): every route needs
 * `OrganizationClientsManage` in the organization of the path; another
 * organization's clients answer 404. Mutations count under the registration
 * rate policy.
 */
export function createOrganizationClientRoutes(clients: ClientService, _isPlatformAdmin?: PlatformCheck): Route[] {
  const tags = ['Clients'];
  const permissions = ['OrganizationClientsManage'] as const;
  const reachable = (orgId: string, principal: Principal | null) => {
    if (!principal || principal.organizationId !== orgId)
      throw new ProblemError('Clients.NotFound', 'No such organization or client.');
  };
  // Platform-only scopes are never granted on an organization surface, not even by a platform
  // administrator (SPEC 2.2): the platform surface is for that.
  const actor = (principal: Principal | null): ClientActor => ({ userId: principal?.userId ?? null, platformAdmin: false });
  const base = '/v1/identity/organizations/{orgId}/clients';
  return [
    defineRoute({
      method: 'GET',
      path: base,
      operationId: 'listOrganizationClients',
      summary: "List the organization's clients (applications and service accounts)",
      tags,
      permissions,
      request: { params: OrgParams },
      responses: { 200: { description: 'Client records; `kind` tells them apart', schema: z.array(ClientRecordSchema) } },
      handler: async ({ params, principal }) => {
        reachable(params.orgId, principal);
        return json(await clients.list(params.orgId));
      },
    }),
    defineRoute({
      method: 'POST',
      path: base,
      operationId: 'registerOrganizationClient',
      summary: 'Register an application or a service account',
      description: 'The secret is in the response once and cannot be fetched again.',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: OrgParams, body: RegisterClientInput },
      problemCodes: CLIENT_CODES,
      responses: {
        201: { description: 'Registered; `clientSecret` is shown only now', schema: RegistrationResponse },
        409: { description: 'A client with this id exists (`Clients.IdTaken`)' },
        422: { description: 'A platform-only scope (`Identity.PlatformOnlyScope`)' },
      },
      handler: async (route) => {
        const { params, body, principal } = route;
        reachable(params.orgId, principal);
        const registration = await clients.register(actor(principal), params.orgId, body, {}, auditOf(route));
        return json(registration, {
          status: 201,
          headers: {
            location: `${base.replace('{orgId}', params.orgId)}/${encodeURIComponent(registration.client.clientId)}`,
            'cache-control': 'no-store',
          },
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${base}/{clientId}`,
      operationId: 'getOrganizationClient',
      summary: 'One client',
      tags,
      permissions,
      request: { params: ClientParams },
      problemCodes: ['Clients.NotFound'],
      responses: { 200: { description: 'The client', schema: ClientRecordSchema }, 404: { description: 'No such client here' } },
      handler: async ({ params, principal }) => {
        reachable(params.orgId, principal);
        return json(await clients.get(params.orgId, params.clientId));
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${base}/{clientId}`,
      operationId: 'updateOrganizationClient',
      summary: 'Change URIs, scopes or the refresh-token lifetime (not kind or name)',
      description: 'For a service account only `scopes` matters. A `refreshTokenLifetime` change applies to new logins only.',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: ClientParams, body: UpdateClientInput },
      problemCodes: CLIENT_CODES,
      responses: { 200: { description: 'The updated client', schema: ClientRecordSchema } },
      handler: async (route) => {
        const { params, body, principal } = route;
        reachable(params.orgId, principal);
        return json(await clients.update(actor(principal), params.orgId, params.clientId, body, auditOf(route)));
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${base}/{clientId}`,
      operationId: 'deleteOrganizationClient',
      summary: 'Delete a client; its tokens stop validating at once',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: ClientParams },
      problemCodes: ['Clients.NotFound'],
      responses: { 204: { description: 'Deleted' } },
      handler: async (route) => {
        const { params, principal } = route;
        reachable(params.orgId, principal);
        await clients.delete(params.orgId, params.clientId, auditOf(route));
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/{clientId}/rotate-secret`,
      operationId: 'rotateOrganizationClientSecret',
      summary: 'Issue a new secret; the old one stops working at once',
      description: 'With `revokeActiveTokens: true`, every token the client holds also ends. The body is optional.',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: ClientParams, body: RotateSecretInput },
      problemCodes: ['Clients.NotFound'],
      responses: { 200: { description: 'The new secret, shown once', schema: RegistrationResponse } },
      handler: async (route) => {
        const { params, body, principal } = route;
        reachable(params.orgId, principal);
        return json(await clients.rotateSecret(actor(principal), params.orgId, params.clientId, body, auditOf(route)), {
          headers: { 'cache-control': 'no-store' },
        });
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/{clientId}/suspend`,
      operationId: 'suspendOrganizationClient',
      summary: 'Suspend a client: it gets invalid_client and its tokens stop validating',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: ClientParams },
      problemCodes: ['Clients.NotFound', 'Identity.ClientAlreadySuspended'],
      responses: { 200: { description: 'The suspended client', schema: ClientRecordSchema } },
      handler: async (route) => {
        const { params, principal } = route;
        reachable(params.orgId, principal);
        return json(await clients.suspend(params.orgId, params.clientId, auditOf(route)));
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/{clientId}/reinstate`,
      operationId: 'reinstateOrganizationClient',
      summary: 'Reinstate a suspended client',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: ClientParams },
      problemCodes: ['Clients.NotFound', 'Identity.ClientNotSuspended'],
      responses: { 200: { description: 'The reinstated client', schema: ClientRecordSchema } },
      handler: async (route) => {
        const { params, principal } = route;
        reachable(params.orgId, principal);
        return json(await clients.reinstate(params.orgId, params.clientId, auditOf(route)));
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${base}/{clientId}/branding`,
      operationId: 'getOrganizationClientBranding',
      summary: "An application's branding on the sign-in pages",
      tags,
      permissions,
      request: { params: ClientParams },
      problemCodes: ['Clients.NotFound'],
      responses: { 200: { description: 'Branding (logo as a data URL)', schema: BrandingSchema } },
      handler: async ({ params, principal }) => {
        reachable(params.orgId, principal);
        return json(await clients.getBranding(params.orgId, params.clientId));
      },
    }),
    defineRoute({
      method: 'PUT',
      path: `${base}/{clientId}/branding`,
      operationId: 'putOrganizationClientBranding',
      summary: "Set an application's display name, tagline, theme and logo",
      description: 'The logo is a base64 PNG, JPEG or WebP image of at most 2 MiB, checked by its magic bytes.',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: ClientParams, body: BrandingInput, maxBodyBytes: 3_500_000 },
      problemCodes: ['Clients.NotFound'],
      responses: { 200: { description: 'The branding', schema: BrandingSchema } },
      handler: async (route) => {
        const { params, body, principal } = route;
        reachable(params.orgId, principal);
        return json(await clients.putBranding(params.orgId, params.clientId, body, auditOf(route)));
      },
    }),
  ];
}

const PlatformRegisterInput = z.intersection(
  z.object({ organizationId: z.uuid({ error: 'Use an organization id.' }) }),
  RegisterClientInput,
);

/**
 * The platform clients surface `/v1/identity/clients`: platform
 * administrators (AdminAccess in the platform organization) manage every
 * organization's clients and may grant platform-only scopes.
 */
export function createPlatformClientRoutes(clients: ClientService, isPlatformAdmin: PlatformCheck): Route[] {
  const tags = ['Platform clients'];
  const permissions = ['AdminAccess'] as const;
  const admin = async (principal: Principal | null): Promise<ClientActor> => {
    if (!(await isPlatformAdmin(principal))) {
      throw new ProblemError('Auth.Forbidden', 'Only platform administrators may use the platform clients surface.');
    }
    return { userId: principal?.userId ?? null, platformAdmin: true };
  };
  const base = '/v1/identity/clients';
  return [
    defineRoute({
      method: 'GET',
      path: base,
      operationId: 'listPlatformClients',
      summary: 'List every client, optionally of one organization',
      tags,
      permissions,
      request: { query: z.object({ organizationId: z.uuid().optional() }) },
      responses: { 200: { description: 'Client records', schema: z.array(ClientRecordSchema) } },
      handler: async ({ query, principal }) => {
        await admin(principal);
        return json(await clients.list(query.organizationId));
      },
    }),
    defineRoute({
      method: 'POST',
      path: base,
      operationId: 'registerPlatformClient',
      summary: 'Register a client for any organization (platform-only scopes allowed)',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { body: PlatformRegisterInput },
      problemCodes: CLIENT_CODES,
      responses: { 201: { description: 'Registered; `clientSecret` is shown only now', schema: RegistrationResponse } },
      handler: async (route) => {
        const actor = await admin(route.principal);
        const { organizationId, ...input } = route.body;
        const registration = await clients.register(actor, organizationId, input, {}, auditOf(route));
        return json(registration, { status: 201, headers: { 'cache-control': 'no-store' } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${base}/{clientId}`,
      operationId: 'getPlatformClient',
      summary: 'One client of any organization',
      tags,
      permissions,
      request: { params: PlatformClientParams },
      problemCodes: ['Clients.NotFound'],
      responses: { 200: { description: 'The client', schema: ClientRecordSchema } },
      handler: async ({ params, principal }) => {
        await admin(principal);
        return json(await clients.get(undefined, params.clientId));
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${base}/{clientId}`,
      operationId: 'updatePlatformClient',
      summary: 'Change a client of any organization',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: PlatformClientParams, body: UpdateClientInput },
      problemCodes: CLIENT_CODES,
      responses: { 200: { description: 'The updated client', schema: ClientRecordSchema } },
      handler: async (route) =>
        json(await clients.update(await admin(route.principal), undefined, route.params.clientId, route.body, auditOf(route))),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${base}/{clientId}`,
      operationId: 'deletePlatformClient',
      summary: 'Delete a client of any organization',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: PlatformClientParams },
      problemCodes: ['Clients.NotFound'],
      responses: { 204: { description: 'Deleted' } },
      handler: async (route) => {
        await admin(route.principal);
        await clients.delete(undefined, route.params.clientId, auditOf(route));
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/{clientId}/rotate-secret`,
      operationId: 'rotatePlatformClientSecret',
      summary: 'Issue a new secret for a client of any organization',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: PlatformClientParams, body: RotateSecretInput },
      problemCodes: ['Clients.NotFound'],
      responses: { 200: { description: 'The new secret, shown once', schema: RegistrationResponse } },
      handler: async (route) =>
        json(
          await clients.rotateSecret(await admin(route.principal), undefined, route.params.clientId, route.body, auditOf(route)),
          {
            headers: { 'cache-control': 'no-store' },
          },
        ),
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/{clientId}/suspend`,
      operationId: 'suspendPlatformClient',
      summary: 'Suspend a client of any organization',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: PlatformClientParams },
      problemCodes: ['Clients.NotFound', 'Identity.ClientAlreadySuspended'],
      responses: { 200: { description: 'The suspended client', schema: ClientRecordSchema } },
      handler: async (route) => {
        await admin(route.principal);
        return json(await clients.suspend(undefined, route.params.clientId, auditOf(route)));
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/{clientId}/reinstate`,
      operationId: 'reinstatePlatformClient',
      summary: 'Reinstate a client of any organization',
      tags,
      permissions,
      ratePolicy: 'registration',
      request: { params: PlatformClientParams },
      problemCodes: ['Clients.NotFound', 'Identity.ClientNotSuspended'],
      responses: { 200: { description: 'The reinstated client', schema: ClientRecordSchema } },
      handler: async (route) => {
        await admin(route.principal);
        return json(await clients.reinstate(undefined, route.params.clientId, auditOf(route)));
      },
    }),
  ];
}
