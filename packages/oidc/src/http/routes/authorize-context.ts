import { defineRoute, json, type Route } from '@idt/core';
import { ProblemError } from '@idt/problem';
import type Provider from 'oidc-provider';
import { z } from 'zod';
import { ThemeSchema } from '../../clients/schemas.js';
import { brandingOf, type ClientService } from '../../clients/service.js';
import { INTERACTION_BASE } from '../../interactions/handler.js';

const AuthorizeContext = z.object({
  clientId: z.string(),
  displayName: z.string(),
  tagline: z.string().nullable(),
  logo: z.string().nullable().describe('A data: URL'),
  theme: ThemeSchema.nullable(),
  firstParty: z.boolean(),
  prompt: z.string(),
  scopes: z.array(z.object({ scope: z.string(), description: z.string() })),
});

/** Options of {@link createAuthorizeContextRoutes}. */
export interface AuthorizeContextOptions {
  readonly provider: () => Provider;
  readonly clients: ClientService;
  /** The origin and path prefix the sign-in pages live under. */
  readonly authUrl: string;
  readonly pathPrefix: string;
}

/**
 * `GET /v1/identity/auth/authorize-context?returnUrl=…` (SPEC 4.3): the
 * requesting client's display name, tagline, logo, theme and requested
 * scopes, for a pending sign-in. A return URL on another origin, or one that
 * names no pending sign-in, answers 404. There is no read by client id.
 */
export function createAuthorizeContextRoutes(options: AuthorizeContextOptions): Route[] {
  const authOrigin = new URL(options.authUrl).origin;
  const interactionPath = new RegExp(
    `^${(options.pathPrefix + INTERACTION_BASE).replace(/[/\\^$*+?.()|[\]{}]/g, '\\$&')}/([A-Za-z0-9_-]{1,64})(?:/[a-z]*)?$`,
  );
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/auth/authorize-context',
      operationId: 'getAuthorizeContext',
      summary: "The requesting application's branding and scopes for a pending sign-in",
      tags: ['Sign-in'],
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { query: z.object({ returnUrl: z.string().min(1).max(2000) }) },
      problemCodes: ['Authorize.UnknownReturnUrl'],
      responses: {
        200: { description: 'Branding and scope descriptions', schema: AuthorizeContext },
        404: { description: 'Not a local return URL, or no pending sign-in (`Authorize.UnknownReturnUrl`)' },
      },
      handler: async ({ query }) => {
        let url: URL;
        try {
          url = new URL(query.returnUrl, `${authOrigin}/`);
        } catch {
          throw new ProblemError('Authorize.UnknownReturnUrl');
        }
        const match = url.origin === authOrigin ? interactionPath.exec(url.pathname) : null;
        if (!match?.[1]) throw new ProblemError('Authorize.UnknownReturnUrl');
        const interaction = await options.provider().Interaction.find(match[1]);
        const clientId = interaction?.params?.client_id;
        if (!interaction || typeof clientId !== 'string') throw new ProblemError('Authorize.UnknownReturnUrl');
        const client = await options.clients.findStored(clientId);
        if (!client) throw new ProblemError('Authorize.UnknownReturnUrl');
        const branding = brandingOf(client);
        const descriptions = new Map((await options.clients.scopes()).map((row) => [row.scope, row.description]));
        const allowed = new Set(client.scopes);
        const scopes = String(interaction.params.scope ?? '')
          .split(' ')
          .filter((scope) => scope && allowed.has(scope))
          .map((scope) => ({ scope, description: descriptions.get(scope) ?? scope }));
        return json(
          {
            clientId: client.clientId,
            displayName: branding.displayName,
            tagline: branding.tagline,
            logo: branding.logo,
            theme: branding.themeJson,
            firstParty: client.firstParty,
            prompt: interaction.prompt.name,
            scopes,
          },
          { headers: { 'cache-control': 'no-store' } },
        );
      },
    }),
  ];
}
