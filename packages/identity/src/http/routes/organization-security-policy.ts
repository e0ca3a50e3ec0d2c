import { defineRoute, json, type Route } from '@idt/core';
import { actorOf } from '../../accounts/actor.js';
import { accountAuditContextOf } from '../../audit/account-actions.js';
import {
  OrganizationSecurityPolicyRecord,
  type OrganizationSecurityPolicyService,
  UpdateOrganizationSecurityPolicyInput,
} from '../../organization-policy/service.js';
import { OrganizationParams } from './accounts-common.js';

const notReachable = {
  description:
    'Not the organization of your token (unless you are a platform administrator), or no such organization (`Identity.OrganizationNotFound`)',
} as const;
const forbidden = {
  description: 'You are a member without `OrganizationsUpdate` (not an owner or admin) (`Auth.Forbidden`)',
} as const;

/** `GET|PUT /v1/identity/organizations/{orgId}/security-policy`. */
export function createOrganizationSecurityPolicyRoutes(policies: OrganizationSecurityPolicyService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/organizations/{orgId}/security-policy',
      operationId: 'getOrganizationSecurityPolicy',
      summary: "Your organization's security policy",
      description:
        'Whether members need a second factor (`requireMfa`) and a verified e-mail address (`requireVerifiedEmail`). For owners and admins of the organization (`OrganizationsUpdate`) and platform administrators (a token for the platform organization).',
      tags: ['Organizations'],
      request: { params: OrganizationParams },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: {
        200: { description: 'The policy', schema: OrganizationSecurityPolicyRecord },
        403: forbidden,
        404: notReachable,
      },
      handler: async ({ principal, params }) => json(await policies.read(actorOf(principal), params.orgId)),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/identity/organizations/{orgId}/security-policy',
      operationId: 'updateOrganizationSecurityPolicy',
      summary: "Change your organization's security policy",
      description:
        'Sets `requireMfa`, `requireVerifiedEmail` or both (an absent field stays as it is; unknown fields are refused). Takes effect at the next sign-in of every member, on every instance. Publishes `OrganizationSecurityPolicyChangedEvent`. Same callers as the GET.',
      tags: ['Organizations'],
      request: { params: OrganizationParams, body: UpdateOrganizationSecurityPolicyInput },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: {
        200: { description: 'The policy as it now is', schema: OrganizationSecurityPolicyRecord },
        403: forbidden,
        404: notReachable,
      },
      handler: async (ctx) =>
        json(await policies.update(actorOf(ctx.principal), ctx.params.orgId, ctx.body, accountAuditContextOf(ctx))),
    }),
  ];
}
