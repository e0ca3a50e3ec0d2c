import { createReadStream, existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { ProblemError } from '@idt/problem';
import { IDT_ICON_LINK } from './favicon.js';
import { markup, unsafeRaw } from './markup.js';
import { generateOpenApiDocument, type OpenApiDocument } from './openapi.js';
import { html, json } from './responses.js';
import { defineRoute, type Route } from './route.js';

/** Options of {@link createApiDocsRoutes}. */
export interface ApiDocsOptions {
  /** Every route of the host; the docs routes add themselves (hidden). */
  readonly routes: () => readonly Route[];
  readonly serverUrl: string;
  /** The deployment path prefix, for the viewer's links. */
  readonly pathPrefix?: string;
  readonly title?: string;
  readonly description?: string;
  /** The Scalar standalone bundle; resolved from `@scalar/api-reference` when absent. */
  readonly scalarScriptPath?: string;
}

/**
 * Finds the Scalar standalone bundle of the installed `@scalar/api-reference`
 * package, or `undefined` when the package is not installed.
 */
export function resolveScalarScript(): string | undefined {
  for (const base of [import.meta.url, `${process.cwd()}/package.json`]) {
    try {
      const path = createRequire(base).resolve('@scalar/api-reference/browser/standalone.js');
      if (existsSync(path)) return path;
    } catch {
      // not resolvable from here; try the next base
    }
  }
  return undefined;
}

const VIEWER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * `GET /openapi/v1.json` (the generated document) and `GET /scalar` (an API
 * viewer served from the installed `@scalar/api-reference`, no CDN; its
 * content security policy forbids every other origin).
 */
export function createApiDocsRoutes(options: ApiDocsOptions): Route[] {
  let cached: OpenApiDocument | undefined;
  const document = () => {
    cached ??= generateOpenApiDocument({
      routes: options.routes(),
      serverUrl: options.serverUrl,
      title: options.title ?? 'idt API',
      version: '1',
      ...(options.description ? { description: options.description } : {}),
    });
    return cached;
  };
  const prefix = options.pathPrefix ?? '';
  return [
    defineRoute({
      method: 'GET',
      path: '/openapi/v1.json',
      operationId: 'getOpenApiDocument',
      summary: 'The OpenAPI 3.1 document of this API',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      responses: { 200: { description: 'OpenAPI 3.1 document' } },
      handler: () => json(document(), { headers: { 'cache-control': 'no-cache' } }),
    }),
    defineRoute({
      method: 'GET',
      path: '/scalar',
      operationId: 'getApiViewer',
      summary: 'An API reference viewer',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: () => {
        if (!(options.scalarScriptPath ?? resolveScalarScript())) {
          throw new ProblemError(
            'Http.NotFound',
            `The API viewer is optional and not installed: npm install @scalar/api-reference. The document is at ${prefix}/openapi/v1.json.`,
          );
        }
        const configuration = JSON.stringify({
          withDefaultFonts: false,
          hideClientButton: false,
          telemetry: false,
          agent: { disabled: true },
          mcp: { disabled: true },
        });
        const page = markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title ?? 'idt API'} reference</title>
${unsafeRaw(IDT_ICON_LINK)}
</head>
<body>
<noscript>The API reference needs JavaScript. The raw document is at <a href="${prefix}/openapi/v1.json">${prefix}/openapi/v1.json</a>.</noscript>
<script id="api-reference" data-url="${`${prefix}/openapi/v1.json`}" data-configuration="${configuration}"></script>
<script src="${`${prefix}/scalar/standalone.js`}"></script>
</body>
</html>
`;
        return html(page, { headers: { 'content-security-policy': VIEWER_CSP, 'x-frame-options': 'DENY' } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/scalar/standalone.js',
      operationId: 'getApiViewerScript',
      summary: 'The API viewer script',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      responses: { 200: { description: 'JavaScript', contentType: 'text/javascript' } },
      handler: () => {
        const path = options.scalarScriptPath ?? resolveScalarScript();
        if (!path) throw new ProblemError('Http.NotFound', 'The API viewer is not installed (@scalar/api-reference).');
        const size = statSync(path).size;
        const stream = Readable.toWeb(createReadStream(path)) as unknown as ReadableStream;
        return new Response(stream, {
          headers: {
            'content-type': 'text/javascript; charset=utf-8',
            'content-length': String(size),
            'cache-control': 'public, max-age=3600',
          },
        });
      },
    }),
  ];
}
