import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHttpApp, createIdt, defineRoute, type Idt, type IdtModule, json } from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import { createTestDatabase, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiDocsRoutes } from '../src/http/api-docs.js';

const ENV = { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent' } as const;
const ORIGIN = 'http://app.test';

/** A module with one route and one surface (answered in front of the routes, as the OpenID provider's are). */
function things(): IdtModule<'things'> {
  return {
    id: 'things',
    setup: () => ({
      services: {},
      routes: [
        defineRoute({
          method: 'GET',
          path: '/v1/things',
          operationId: 'listThings',
          summary: 'Things',
          auth: 'anonymous',
          responses: { 200: { description: 'Things' } },
          handler: () => json({ items: [] }),
        }),
      ],
      surfaces: [
        {
          name: 'provider',
          matches: (path) => path.startsWith('/connect/'),
          node(_req: IncomingMessage, res: ServerResponse) {
            res.writeHead(200, { 'content-type': 'text/plain' }).end('provider');
            return true;
          },
        },
      ],
    }),
  };
}

/** A 404 problem document: its detail, after checking it is one, without a stack. */
async function notFoundDetail(response: Response): Promise<string> {
  expect(response.status).toBe(404);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ code: 'Http.NotFound', status: 404 });
  expect(body).not.toHaveProperty('exception');
  return body.detail as string;
}

const DEFAULT_DETAIL = 'No resource exists at this address.';

describe('a 404 under another base path than the configured baseUrl names it', () => {
  let database: TestDatabase;
  let atRoot: Idt;
  let underAuth: Idt;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite', [coreMigrations]);
    const common = {
      database: database.db,
      env: { ...ENV, IDT_DATA_DIR: database.dataDir },
      mailer: { send: async () => undefined },
    };
    atRoot = await createIdt({ ...common, baseUrl: ORIGIN, modules: [things()] });
    underAuth = await createIdt({ ...common, baseUrl: `${ORIGIN}/auth`, modules: [things()] });
  });
  afterAll(async () => {
    await atRoot?.close();
    await underAuth?.close();
    await database?.destroy();
  });

  it('knows the plain 404 text', async () => {
    expect(await notFoundDetail(await atRoot.fetch(new Request(`${ORIGIN}/nothing/here`)))).toBe(DEFAULT_DETAIL);
  });

  it('mounted under /auth with a baseUrl without it: says which baseUrl is configured and which to set', async () => {
    expect(await notFoundDetail(await atRoot.fetch(new Request(`${ORIGIN}/auth/v1/things?page=2`)))).toBe(
      `No route at /auth/v1/things: idt's baseUrl is ${ORIGIN} (no path prefix), where this path would be /v1/things. If idt is mounted under /auth, set baseUrl to ${ORIGIN}/auth (IDT_PATH_PREFIX=/auth).`,
    );
    // The paths answered in front of the routes (the OpenID provider's) count too.
    expect(await notFoundDetail(await atRoot.fetch(new Request(`${ORIGIN}/auth/connect/authorize`)))).toContain(
      `where this path would be /connect/authorize. If idt is mounted under /auth, set baseUrl to ${ORIGIN}/auth`,
    );
    // Up to three extra segments; a path that is none of idt's below them keeps the plain text.
    expect(await notFoundDetail(await atRoot.fetch(new Request(`${ORIGIN}/a/b/c/v1/things`)))).toContain(
      'If idt is mounted under /a/b/c, set baseUrl',
    );
    expect(await notFoundDetail(await atRoot.fetch(new Request(`${ORIGIN}/auth/v1/unknown`)))).toBe(DEFAULT_DETAIL);
    expect(await notFoundDetail(await atRoot.fetch(new Request(`${ORIGIN}/auth`)))).toBe(DEFAULT_DETAIL);
  });

  it('with baseUrl under /auth, requests that arrive without it: says the paths start with /auth', async () => {
    expect(await notFoundDetail(await underAuth.fetch(new Request(`${ORIGIN}/v1/things`)))).toBe(
      `No route at /v1/things: idt's baseUrl is ${ORIGIN}/auth, so its paths start with /auth (this one would be /auth/v1/things). A host or proxy that strips /auth before idt must hand it the full path; if idt is served at the root, drop /auth from baseUrl.`,
    );
    expect(await notFoundDetail(await underAuth.fetch(new Request(`${ORIGIN}/connect/token`, { method: 'POST' })))).toContain(
      '(this one would be /auth/connect/token)',
    );
    expect(await notFoundDetail(await underAuth.fetch(new Request(`${ORIGIN}/`)))).toContain(
      'so its paths start with /auth (/auth/health, for one)',
    );
    // Under yet another mount path.
    expect(await notFoundDetail(await underAuth.fetch(new Request(`${ORIGIN}/id/v1/things`)))).toBe(
      `No route at /id/v1/things: idt's baseUrl is ${ORIGIN}/auth, so its paths start with /auth (this one would be /auth/v1/things). If idt is mounted under /id, set baseUrl to ${ORIGIN}/id (IDT_PATH_PREFIX=/id).`,
    );
    expect(await notFoundDetail(await underAuth.fetch(new Request(`${ORIGIN}/auth/x/v1/things`)))).toContain(
      `where this path would be /auth/v1/things. If idt is mounted under /auth/x, set baseUrl to ${ORIGIN}/auth/x`,
    );
    expect(await notFoundDetail(await underAuth.fetch(new Request(`${ORIGIN}/elsewhere`)))).toBe(DEFAULT_DETAIL);
    // The right paths still answer.
    expect((await underAuth.fetch(new Request(`${ORIGIN}/auth/v1/things`))).status).toBe(200);
    expect((await underAuth.fetch(new Request(`${ORIGIN}/auth/connect/x`))).status).toBe(200);
  });
});

describe('paths written into answers carry the path prefix', () => {
  it('names the OpenAPI document under the prefix when the API viewer is not installed, and links the icon inline', async () => {
    const routes = createApiDocsRoutes({
      routes: () => routes,
      serverUrl: `${ORIGIN}/idt`,
      pathPrefix: '/idt',
      // No viewer bundle: what a deployment without @scalar/api-reference answers.
      scalarScriptPath: '',
    });
    const app = createHttpApp({ environment: 'Production', publicBaseUrl: `${ORIGIN}/idt`, pathPrefix: '/idt', routes });
    const viewer = await app.fetch(new Request(`${ORIGIN}/idt/scalar`));
    expect(await notFoundDetail(viewer)).toBe(
      'The API viewer is optional and not installed: npm install @scalar/api-reference. The document is at /idt/openapi/v1.json.',
    );
    expect((await app.fetch(new Request(`${ORIGIN}/idt/openapi/v1.json`))).status).toBe(200);

    const withViewer = createApiDocsRoutes({
      routes: () => [],
      serverUrl: `${ORIGIN}/idt`,
      pathPrefix: '/idt',
      scalarScriptPath: import.meta.filename,
    });
    const page = await createHttpApp({
      environment: 'Production',
      publicBaseUrl: `${ORIGIN}/idt`,
      pathPrefix: '/idt',
      routes: withViewer,
    }).fetch(new Request(`${ORIGIN}/idt/scalar`));
    const text = await page.text();
    expect(text).toContain('href="/idt/openapi/v1.json"');
    expect(text).toContain('<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,');
    expect(page.headers.get('content-security-policy')).toContain("img-src 'self' data:");
  });
});
