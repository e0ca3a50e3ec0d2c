import { describe, expect, it } from 'vitest';
import '../problems.js';
import { createHttpApp } from './app.js';
import { generateOpenApiDocument } from './openapi.js';
import { json } from './responses.js';
import { defineRoute } from './route.js';

describe('routes that only document another surface', () => {
  const documented = defineRoute({
    method: 'POST',
    path: '/connect/token',
    operationId: 'oidcToken',
    summary: 'token',
    tags: ['OpenID Connect'],
    auth: 'anonymous',
    documentationOnly: true,
    openApi: {
      security: [{ clientBasic: [] }],
      securitySchemes: {
        oauth2: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: 'http://api.test/connect/token', scopes: {} } } },
        clientBasic: { type: 'http', scheme: 'basic' },
      },
      defaultSecurity: ['oauth2'],
      tagDescriptions: { 'OpenID Connect': 'How to get a token.' },
      extensions: { 'x-error-format': 'oauth' },
    },
    responses: { 200: { description: 'tokens' } },
    handler: () => json({ routed: true }),
  });

  it('is never routed: the app answers 404 as if it were absent', async () => {
    const app = createHttpApp({ environment: 'Testing', publicBaseUrl: 'http://api.test', routes: [documented] });
    const response = await app.fetch(new Request('http://api.test/connect/token', { method: 'POST' }));
    expect(response.status).toBe(404);
  });

  it('appears in the document with its security, schemes, tag description and extensions', () => {
    const document = generateOpenApiDocument({ routes: [documented], serverUrl: 'http://api.test' }) as unknown as Record<
      string,
      any
    >;
    const operation = document.paths['/connect/token'].post;
    expect(operation.security).toEqual([{ clientBasic: [] }]);
    expect(operation['x-documentation-only']).toBe(true);
    expect(operation['x-error-format']).toBe('oauth');
    expect(Object.keys(document.components.securitySchemes)).toEqual(['bearerAuth', 'apiKey', 'oauth2', 'clientBasic']);
    expect(document.security).toEqual([{ bearerAuth: [] }, { apiKey: [] }, { oauth2: [] }]);
    expect(document.tags).toEqual([{ name: 'OpenID Connect', description: 'How to get a token.' }]);
  });
});
