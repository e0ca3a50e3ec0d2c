import { defineRoute, type Route, text } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import type { SsoConnectionsService } from '../connections/service.js';
import '../problems.js';
import type { Clock } from '@idt/core';
import type { ReplayCache } from '../saml/replay-cache.js';
import type { RequestCache } from '../saml/request-cache.js';
import { createSamlServiceProvider } from '../saml/service-provider.js';

/** The media type of SAML metadata (RFC 7580 registers it; IdPs accept it). */
export const SAML_METADATA_TYPE = 'application/samlmetadata+xml';

/** What the public SAML routes need. */
export interface SamlRouteOptions {
  readonly connections: SsoConnectionsService;
  readonly clock: Clock;
  readonly replayCache: ReplayCache;
  readonly requestCache: RequestCache;
}

/**
 * `GET /sso/saml/{connectionId}/metadata`: the service provider metadata of
 * a SAML connection (entity id, ACS URL), public, for the identity
 * provider's administrator to import. A disabled connection answers too, so
 * the IdP can be set up before the connection is enabled.
 *
 * @example
 * routes.push(...createSamlRoutes({ connections, clock, replayCache, requestCache }));
 */
export function createSamlRoutes(options: SamlRouteOptions): Route[] {
  const { connections } = options;
  return [
    defineRoute({
      method: 'GET',
      path: '/sso/saml/{connectionId}/metadata',
      operationId: 'getSamlServiceProviderMetadata',
      summary: 'The SAML service provider metadata of a connection',
      description: 'Public. Its URL is also the service provider’s entity id.',
      tags: ['Single sign-on'],
      auth: 'anonymous',
      request: { params: z.object({ connectionId: z.string().min(1).max(100) }) },
      problemCodes: ['Sso.ConnectionNotFound'],
      responses: {
        200: { description: 'The metadata XML', contentType: SAML_METADATA_TYPE, schema: z.string() },
        404: { description: 'No SAML connection with this id (`Sso.ConnectionNotFound`)' },
      },
      handler: async ({ params }) => {
        const connection = await connections.find(params.connectionId);
        if (connection?.kind !== 'saml') throw new ProblemError('Sso.ConnectionNotFound');
        const provider = createSamlServiceProvider(connections.samlConnectionOf(connection), options);
        return text(provider.metadata(), {
          headers: { 'content-type': `${SAML_METADATA_TYPE}; charset=utf-8`, 'cache-control': 'public, max-age=300' },
        });
      },
    }),
  ];
}
