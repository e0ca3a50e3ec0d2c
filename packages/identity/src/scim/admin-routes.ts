import { defineRoute, json, noContent, type Route } from '@idt/core';
import { z } from 'zod';
import { actorOf } from '../accounts/actor.js';
import { auditContextOf } from '../audit/organization-actions.js';
import { idParam, OrganizationParams } from '../http/routes/accounts-common.js';
import { CreateScimTokenInput, type ScimAdminService, ScimRoleMappingsInput } from './admin-service.js';

const ScimTokenListed = z.object({
  id: z.uuid(),
  name: z.string(),
  prefix: z.string().meta({ description: 'The first 16 characters, for display.' }),
  createdAt: z.iso.datetime(),
  lastUsedAt: z.iso.datetime().nullable(),
});
const ScimTokenCreated = ScimTokenListed.extend({
  token: z.string().meta({ description: 'The bearer token for the directory; shown only in this response.', example: 'scim_…' }),
});
const RoleMappings = z.object({ mappings: z.array(z.object({ group: z.string(), roles: z.array(z.string()) })) });
const TokenParams = z.object({ orgId: idParam('organization'), tokenId: idParam('token') });

const notReachable = {
  description:
    'Not the organization of your token (unless you are a platform administrator), or no such organization (`Identity.OrganizationNotFound`)',
} as const;
const forbidden = { description: 'A member without `OrganizationsUpdate` (not an owner or admin) (`Auth.Forbidden`)' } as const;
const who =
  'For owners and admins of the organization (`OrganizationsUpdate`) and platform administrators (a token for the platform organization).';

/** `/v1/identity/organizations/{orgId}/scim/tokens` and `/scim/role-mappings`: SCIM administration. */
export function createScimAdminRoutes(admin: ScimAdminService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/organizations/{orgId}/scim/tokens',
      operationId: 'createScimToken',
      summary: 'Create a SCIM bearer token for the organization’s directory',
      description: `${who} The token is shown once and stored only as its SHA-256; at most 10 live tokens per organization. Paste it into Okta or Entra ID with the SCIM base URL \`{baseUrl}/scim/v2\`.`,
      tags: ['SCIM'],
      request: { params: OrganizationParams, body: CreateScimTokenInput },
      problemCodes: ['Identity.OrganizationNotFound', 'Scim.TokenLimitReached'],
      responses: {
        201: { description: 'The token (shown once)', schema: ScimTokenCreated },
        403: forbidden,
        404: notReachable,
        422: { description: 'The organization has 10 live tokens (`Scim.TokenLimitReached`)' },
      },
      handler: async (ctx) =>
        json(await admin.createToken(actorOf(ctx.principal), ctx.params.orgId, ctx.body, auditContextOf(ctx)), {
          status: 201,
          headers: { 'cache-control': 'no-store' },
        }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/organizations/{orgId}/scim/tokens',
      operationId: 'listScimTokens',
      summary: 'The organization’s live SCIM tokens (without the tokens)',
      description: who,
      tags: ['SCIM'],
      request: { params: OrganizationParams },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: { 200: { description: 'Newest first', schema: z.array(ScimTokenListed) }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, params }) => json(await admin.listTokens(actorOf(principal), params.orgId)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/organizations/{orgId}/scim/tokens/{tokenId}',
      operationId: 'revokeScimToken',
      summary: 'Revoke a SCIM token; it stops working at once',
      description: who,
      tags: ['SCIM'],
      request: { params: TokenParams },
      problemCodes: ['Identity.OrganizationNotFound', 'Scim.TokenNotFound'],
      responses: {
        204: { description: 'Revoked' },
        403: forbidden,
        404: { description: 'No such organization or live token (`Identity.OrganizationNotFound`, `Scim.TokenNotFound`)' },
      },
      handler: async (ctx) => {
        await admin.revokeToken(actorOf(ctx.principal), ctx.params.orgId, ctx.params.tokenId, auditContextOf(ctx));
        return noContent();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/organizations/{orgId}/scim/role-mappings',
      operationId: 'getScimRoleMappings',
      summary: 'Which roles the members of each directory group get',
      description: who,
      tags: ['SCIM'],
      request: { params: OrganizationParams },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: { 200: { description: 'The mappings', schema: RoleMappings }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, params }) =>
        json({ mappings: await admin.listRoleMappings(actorOf(principal), params.orgId) }),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/identity/organizations/{orgId}/scim/role-mappings',
      operationId: 'setScimRoleMappings',
      summary: 'Replace the group→role mappings; members’ roles follow at once',
      description: `${who} A mapping names a SCIM Group by its displayName (case-insensitive; the group need not exist yet) and the roles its members get: built-in roles but \`owner\`, or the organization's custom roles. SCIM manages only the roles some mapping names; other roles of a member are kept.`,
      tags: ['SCIM'],
      request: { params: OrganizationParams, body: ScimRoleMappingsInput },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: {
        200: { description: 'The mappings as they now are', schema: RoleMappings },
        403: forbidden,
        404: notReachable,
      },
      handler: async (ctx) =>
        json({
          mappings: await admin.setRoleMappings(actorOf(ctx.principal), ctx.params.orgId, ctx.body, auditContextOf(ctx)),
        }),
    }),
  ];
}
