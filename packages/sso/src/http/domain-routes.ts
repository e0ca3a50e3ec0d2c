import { defineRoute, json, noContent, type Route } from '@idt/core';
import { z } from 'zod';
import { actorOf } from '../access.js';
import { AddDomainInput, DomainResponse } from '../connections/schemas.js';
import type { SsoDomainsService } from '../domains/service.js';

const TAGS = ['Single sign-on'];
const OrgParams = z.object({
  orgId: z.uuid({ error: 'Use an organization id.' }).transform((value) => value.toLowerCase()),
});
const DomainParams = OrgParams.extend({ domainId: z.string().min(1).max(100).describe('The domain id (a GUID).') });
const WHO = 'For owners and admins of the organization (`OrganizationsUpdate`) and platform administrators.';
const notReachable = {
  description: 'No such domain (`Sso.DomainNotFound`), or an organization that is not yours (`Identity.OrganizationNotFound`)',
} as const;
const forbidden = { description: 'A member without `OrganizationsUpdate` (`Auth.Forbidden`)' } as const;

/**
 * The routes of `/v1/identity/organizations/{orgId}/domains`: add a domain,
 * publish its `idt-verification=…` TXT record, verify it. Another
 * organization answers 404.
 *
 * @example
 * routes.push(...createSsoDomainRoutes(domains));
 */
export function createSsoDomainRoutes(domains: SsoDomainsService): Route[] {
  const base = '/v1/identity/organizations/{orgId}/domains';
  return [
    defineRoute({
      method: 'GET',
      path: base,
      operationId: 'listOrganizationDomains',
      summary: "Your organization's domains, oldest first",
      description: WHO,
      tags: TAGS,
      request: { params: OrgParams },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: { 200: { description: 'The domains', schema: z.array(DomainResponse) }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, clientIp, headers, traceId, params }) =>
        json(await domains.list(actorOf(principal, { clientIp, headers, traceId }), params.orgId)),
    }),
    defineRoute({
      method: 'POST',
      path: base,
      operationId: 'addOrganizationDomain',
      summary: 'Add a domain to verify',
      description: `Answers the TXT record to publish at the domain (\`verification\`), then call \`…/{domainId}/verify\`. ${WHO}`,
      tags: TAGS,
      request: { params: OrgParams, body: AddDomainInput },
      problemCodes: ['Identity.OrganizationNotFound', 'Sso.InvalidDomain', 'Sso.DomainExists'],
      responses: {
        201: { description: 'Added, not yet verified', schema: DomainResponse, headers: { Location: 'The domain' } },
        400: { description: 'Not a domain name (`Sso.InvalidDomain`)' },
        403: forbidden,
        404: notReachable,
        409: { description: 'Your organization already added it (`Sso.DomainExists`)' },
      },
      handler: async ({ principal, clientIp, headers, traceId, params, body, prefix }) => {
        const added = await domains.add(actorOf(principal, { clientIp, headers, traceId }), params.orgId, body);
        return json(added, {
          status: 201,
          headers: { location: `${prefix}${base.replace('{orgId}', params.orgId)}/${added.id}` },
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${base}/{domainId}`,
      operationId: 'getOrganizationDomain',
      summary: 'One domain',
      description: WHO,
      tags: TAGS,
      request: { params: DomainParams },
      problemCodes: ['Identity.OrganizationNotFound', 'Sso.DomainNotFound'],
      responses: { 200: { description: 'The domain', schema: DomainResponse }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, clientIp, headers, traceId, params }) =>
        json(await domains.get(actorOf(principal, { clientIp, headers, traceId }), params.orgId, params.domainId)),
    }),
    defineRoute({
      method: 'POST',
      path: `${base}/{domainId}/verify`,
      operationId: 'verifyOrganizationDomain',
      summary: 'Check the TXT record and mark the domain verified',
      description: `A domain is verified by at most one organization. Publishes \`DomainVerifiedEvent\`. Counts under the registration rate policy (it asks DNS). ${WHO}`,
      tags: TAGS,
      ratePolicy: 'registration',
      request: { params: DomainParams },
      problemCodes: [
        'Identity.OrganizationNotFound',
        'Sso.DomainNotFound',
        'Sso.DomainTaken',
        'Sso.DomainVerificationFailed',
        'Sso.DnsUnavailable',
      ],
      responses: {
        200: { description: 'The domain, verified', schema: DomainResponse },
        403: forbidden,
        404: notReachable,
        409: { description: 'Another organization verified it (`Sso.DomainTaken`)' },
        422: { description: 'The TXT record is not there (yet) (`Sso.DomainVerificationFailed`)' },
        503: { description: 'DNS did not answer (`Sso.DnsUnavailable`)' },
      },
      handler: async ({ principal, clientIp, headers, traceId, params }) =>
        json(await domains.verify(actorOf(principal, { clientIp, headers, traceId }), params.orgId, params.domainId)),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${base}/{domainId}`,
      operationId: 'deleteOrganizationDomain',
      summary: 'Remove a domain',
      description: `Addresses of the domain no longer route to the organization's connections. ${WHO}`,
      tags: TAGS,
      request: { params: DomainParams },
      problemCodes: ['Identity.OrganizationNotFound', 'Sso.DomainNotFound'],
      responses: { 204: { description: 'Removed' }, 403: forbidden, 404: notReachable },
      handler: async ({ principal, clientIp, headers, traceId, params }) => {
        await domains.remove(actorOf(principal, { clientIp, headers, traceId }), params.orgId, params.domainId);
        return noContent();
      },
    }),
  ];
}
