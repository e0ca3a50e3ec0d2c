import { defineRoute, json, type Route } from '@idt/core';
import { z } from 'zod';
import { actorOf } from '../access.js';
import { SsoPolicyInput, SsoPolicyResponse, type SsoPolicyService } from '../policy/service.js';

const TAGS = ['Single sign-on'];
const OrgParams = z.object({
  orgId: z.uuid({ error: 'Use an organization id.' }).transform((value) => value.toLowerCase()),
});
const WHO = 'For owners and admins of the organization (`OrganizationsUpdate`) and platform administrators.';
const forbidden = { description: 'A member without `OrganizationsUpdate` (`Auth.Forbidden`)' } as const;
const notReachable = { description: 'An organization that is not yours (`Identity.OrganizationNotFound`)' } as const;

/**
 * `GET|PUT /v1/identity/organizations/{orgId}/sso/policy`: the
 * organization's `ssoRequired`. With it, addresses of the organization's
 * verified domains sign in only through its enabled connection (password and
 * passkey sign-in are refused for them).
 *
 * @example
 * routes.push(...createSsoPolicyRoutes(policies));
 */
export function createSsoPolicyRoutes(policies: SsoPolicyService): Route[] {
  const path = '/v1/identity/organizations/{orgId}/sso/policy';
  return [
    defineRoute({
      method: 'GET',
      path,
      operationId: 'getOrganizationSsoPolicy',
      summary: 'The organization’s single sign-on policy',
      description: WHO,
      tags: TAGS,
      request: { params: OrgParams },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: { 200: { description: 'The policy', schema: SsoPolicyResponse }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, clientIp, headers, traceId, params }) =>
        json(await policies.get(actorOf(principal, { clientIp, headers, traceId }), params.orgId)),
    }),
    defineRoute({
      method: 'PUT',
      path,
      operationId: 'putOrganizationSsoPolicy',
      summary: 'Require single sign-on for the organization’s verified domains',
      description: `\`{ "ssoRequired": true }\` refuses password and passkey sign-in for addresses of the organization’s verified domains while it has an enabled connection. Publishes \`SsoPolicyChangedEvent\` when it changes. ${WHO}`,
      tags: TAGS,
      ratePolicy: 'registration',
      request: { params: OrgParams, body: SsoPolicyInput },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: {
        200: { description: 'The policy as it now is', schema: SsoPolicyResponse },
        400: { description: 'Not `{ "ssoRequired": boolean }`' },
        403: forbidden,
        404: notReachable,
      },
      handler: async ({ principal, clientIp, headers, traceId, params, body }) =>
        json(await policies.put(actorOf(principal, { clientIp, headers, traceId }), params.orgId, body)),
    }),
  ];
}
