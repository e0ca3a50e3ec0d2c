import { defineRoute, json, noContent, type Route } from '@idt/core';
import { z } from 'zod';
import { actorOf } from '../access.js';
import { ConnectionResponse, CreateConnectionInput, UpdateConnectionInput } from '../connections/schemas.js';
import type { SsoConnectionsService } from '../connections/service.js';

const TAGS = ['Single sign-on'];
// Compared with the token's (lowercase) organization id, as the identity routes do.
const OrgParams = z.object({
  orgId: z.uuid({ error: 'Use an organization id.' }).transform((value) => value.toLowerCase()),
});
const connectionId = z.string().min(1).max(100).describe('The connection id (a GUID).');
const OrgConnectionParams = OrgParams.extend({ connectionId });
const PlatformConnectionParams = z.object({ connectionId });

const WRITE_CODES = [
  'Sso.InvalidConnection',
  'Sso.InvalidMetadata',
  'Sso.MetadataUnreachable',
  'Sso.ConnectionNotFound',
  'Identity.OrganizationNotFound',
];
const notReachable = {
  description:
    'No such connection (`Sso.ConnectionNotFound`), or an organization that is not yours (`Identity.OrganizationNotFound`)',
} as const;
const forbidden = {
  description: 'A member without `OrganizationsUpdate`, or not a platform administrator (`Auth.Forbidden`)',
} as const;
const invalid = {
  description:
    'A body that is not a connection of its kind, metadata that cannot be read or fetched (`Sso.InvalidConnection`, `Sso.InvalidMetadata`, `Sso.MetadataUnreachable`)',
} as const;

/** One surface (an organization's, or the platform's) of the connection routes. */
interface Surface {
  readonly base: string;
  readonly prefix: string;
  readonly params: z.ZodType<{ orgId?: string }>;
  readonly itemParams: z.ZodType<{ orgId?: string; connectionId: string }>;
  readonly who: string;
  readonly scope: (params: { orgId?: string }) => string | null;
  readonly problemCodes: readonly string[];
}

function routesOf(connections: SsoConnectionsService, surface: Surface): Route[] {
  const { base, who, scope } = surface;
  const item = `${base}/{connectionId}`;
  const toggle = (enabled: boolean) =>
    defineRoute({
      method: 'POST',
      path: `${item}/${enabled ? 'enable' : 'disable'}`,
      operationId: `${enabled ? 'enable' : 'disable'}${surface.prefix}SsoConnection`,
      summary: enabled
        ? 'Enable a connection: it appears on the sign-in page'
        : 'Disable a connection: nobody signs in through it',
      description: `Idempotent. Counts under the registration rate policy; publishes \`SsoConnectionChangedEvent\` when the state changes. ${who}`,
      tags: TAGS,
      ratePolicy: 'registration',
      request: { params: surface.itemParams },
      problemCodes: [...surface.problemCodes, 'Sso.ConnectionNotFound'],
      responses: { 200: { description: 'The connection', schema: ConnectionResponse }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, clientIp, headers, traceId, params }) =>
        json(
          await connections.setEnabled(
            actorOf(principal, { clientIp, headers, traceId }),
            scope(params),
            params.connectionId,
            enabled,
          ),
        ),
    });
  return [
    defineRoute({
      method: 'GET',
      path: base,
      operationId: `list${surface.prefix}SsoConnections`,
      summary: 'Single sign-on connections, oldest first',
      description: `Secrets are never returned: an OIDC connection says \`clientSecretSet\`. ${who}`,
      tags: TAGS,
      request: { params: surface.params },
      problemCodes: surface.problemCodes,
      responses: {
        200: { description: 'The connections', schema: z.array(ConnectionResponse) },
        403: forbidden,
        404: notReachable,
      },
      handler: async ({ principal, clientIp, headers, traceId, params }) =>
        json(await connections.list(actorOf(principal, { clientIp, headers, traceId }), scope(params))),
    }),
    defineRoute({
      method: 'POST',
      path: base,
      operationId: `create${surface.prefix}SsoConnection`,
      summary: 'Create a connection to an OpenID provider or a SAML 2.0 identity provider',
      description: `\`kind: oidc\` takes \`oidc: { issuer, clientId, clientSecret, scopes }\`; \`kind: saml\` takes \`saml: { metadataXml | metadataUrl, … }\` and answers the SP entity id, ACS URL and SP metadata URL to give the identity provider. Disabled unless \`enabled: true\`. Unknown fields are refused. Counts under the registration rate policy; publishes \`SsoConnectionChangedEvent\`. ${who}`,
      tags: TAGS,
      ratePolicy: 'registration',
      request: { params: surface.params, body: CreateConnectionInput },
      problemCodes: [...surface.problemCodes, ...WRITE_CODES],
      responses: {
        201: { description: 'Created', schema: ConnectionResponse, headers: { Location: 'The connection' } },
        400: invalid,
        403: forbidden,
        404: notReachable,
        422: { description: 'The metadata URL could not be read (`Sso.MetadataUnreachable`)' },
      },
      handler: async ({ principal, clientIp, headers, traceId, params, body, prefix }) => {
        const created = await connections.create(actorOf(principal, { clientIp, headers, traceId }), scope(params), body);
        const path = base.replace('{orgId}', String(params.orgId ?? ''));
        return json(created, { status: 201, headers: { location: `${prefix}${path}/${created.id}` } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: item,
      operationId: `get${surface.prefix}SsoConnection`,
      summary: 'One connection',
      description: who,
      tags: TAGS,
      request: { params: surface.itemParams },
      problemCodes: [...surface.problemCodes, 'Sso.ConnectionNotFound'],
      responses: { 200: { description: 'The connection', schema: ConnectionResponse }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, clientIp, headers, traceId, params }) =>
        json(await connections.get(actorOf(principal, { clientIp, headers, traceId }), scope(params), params.connectionId)),
    }),
    defineRoute({
      method: 'PATCH',
      path: item,
      operationId: `update${surface.prefix}SsoConnection`,
      summary: 'Change a connection',
      description: `The fields given change; the kind never does (\`oidc\` for a SAML connection is refused). An absent \`oidc.clientSecret\` keeps the secret; new SAML metadata replaces the identity provider's details. Counts under the registration rate policy; publishes \`SsoConnectionChangedEvent\`. ${who}`,
      tags: TAGS,
      ratePolicy: 'registration',
      request: { params: surface.itemParams, body: UpdateConnectionInput },
      problemCodes: [...surface.problemCodes, ...WRITE_CODES],
      responses: {
        200: { description: 'The connection as it now is', schema: ConnectionResponse },
        400: invalid,
        403: forbidden,
        404: notReachable,
      },
      handler: async ({ principal, clientIp, headers, traceId, params, body }) =>
        json(
          await connections.update(actorOf(principal, { clientIp, headers, traceId }), scope(params), params.connectionId, body),
        ),
    }),
    defineRoute({
      method: 'DELETE',
      path: item,
      operationId: `delete${surface.prefix}SsoConnection`,
      summary: 'Delete a connection and the identities linked through it',
      description: `Users created through it stay. Counts under the registration rate policy; publishes \`SsoConnectionChangedEvent\`. ${who}`,
      tags: TAGS,
      ratePolicy: 'registration',
      request: { params: surface.itemParams },
      problemCodes: [...surface.problemCodes, 'Sso.ConnectionNotFound'],
      responses: { 204: { description: 'Deleted' }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, clientIp, headers, traceId, params }) => {
        await connections.remove(actorOf(principal, { clientIp, headers, traceId }), scope(params), params.connectionId);
        return noContent();
      },
    }),
    toggle(true),
    toggle(false),
  ];
}

/**
 * The connection routes: an organization's under
 * `/v1/identity/organizations/{orgId}/sso/connections` (its owners and
 * admins, and platform administrators; another organization answers 404)
 * and the platform's under `/v1/admin/sso/connections` (platform
 * administrators). Every change counts under the registration rate policy.
 *
 * @example
 * routes.push(...createSsoConnectionRoutes(connections));
 */
export function createSsoConnectionRoutes(connections: SsoConnectionsService): Route[] {
  return [
    ...routesOf(connections, {
      base: '/v1/identity/organizations/{orgId}/sso/connections',
      prefix: 'Organization',
      params: OrgParams,
      itemParams: OrgConnectionParams,
      who: 'For owners and admins of the organization (`OrganizationsUpdate`) and platform administrators.',
      scope: (params) => {
        // Never fall back to the platform scope: the path always carries the organization.
        if (!params.orgId) throw new Error('The organization routes need an orgId');
        return params.orgId;
      },
      problemCodes: ['Identity.OrganizationNotFound'],
    }),
    ...routesOf(connections, {
      base: '/v1/admin/sso/connections',
      prefix: 'Platform',
      params: z.object({}),
      itemParams: PlatformConnectionParams,
      who: 'Platform connections appear on everyone’s sign-in page; for platform administrators (`AdminAccess` in the platform organization).',
      scope: () => null,
      problemCodes: [],
    }),
  ];
}
