import { type ProblemRegistry, problemRegistry, reasonPhrase } from '@idt/problem';
import { z } from 'zod';
import type { Route } from './route.js';

/** Options of {@link generateOpenApiDocument}. */
export interface OpenApiOptions {
  readonly routes: readonly Route[];
  readonly title?: string;
  readonly version?: string;
  readonly description?: string;
  /** The public base URL, prefix included; becomes the only server. */
  readonly serverUrl: string;
  /** Where error codes come from; the process-wide registry by default. */
  readonly registry?: ProblemRegistry;
}

type JsonSchema = Record<string, unknown>;

/** A generated OpenAPI 3.1 document. */
export interface OpenApiDocument {
  openapi: '3.1.1';
  info: { title: string; version: string; description?: string };
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
  tags?: Array<{ name: string; description?: string }>;
}

function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  delete json.$schema;
  return json;
}

function parametersOf(schema: z.ZodType | undefined, location: 'path' | 'query'): unknown[] {
  if (!schema) return [];
  const json = toSchema(schema, 'input');
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    const parameter: Record<string, unknown> = {
      name,
      in: location,
      required: location === 'path' ? true : required.has(name),
      schema: rest,
    };
    if (typeof description === 'string') parameter.description = description;
    if (location === 'query' && (rest.type === 'array' || rest.type === 'object')) {
      parameter.style = 'form';
      parameter.explode = true;
    }
    return parameter;
  });
}

function problemResponse(status: number, description: string) {
  return {
    description,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemDetails' } } },
    ...(status === 429 ? { headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait' } } } : {}),
  };
}

/**
 * Generates the OpenAPI 3.1 document of a route table. Request and response
 * schemas come from the routes' zod schemas; error responses reference one
 * `ProblemDetails` schema whose `code` is the `ErrorCode` enum of every
 * registered code.
 *
 * @example
 * const document = generateOpenApiDocument({ routes, serverUrl: config.publicBaseUrl });
 */
export function generateOpenApiDocument(options: OpenApiOptions): OpenApiDocument {
  const registry = options.registry ?? problemRegistry;
  const paths: OpenApiDocument['paths'] = {};
  const tags = new Set<string>();
  const tagDescriptions = new Map<string, string>();
  const extraSchemes: Record<string, unknown> = {};
  const defaultSecurity: Array<Record<string, string[]>> = [];
  for (const route of options.routes) {
    if (route.hidden) continue;
    for (const [name, scheme] of Object.entries(route.openApi?.securitySchemes ?? {})) extraSchemes[name] = scheme;
    for (const name of route.openApi?.defaultSecurity ?? []) {
      if (!defaultSecurity.some((entry) => name in entry)) defaultSecurity.push({ [name]: [] });
    }
    for (const [tag, text] of Object.entries(route.openApi?.tagDescriptions ?? {})) tagDescriptions.set(tag, text);
    const auth = route.auth ?? 'required';
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
    };
    const notes: string[] = [];
    if (route.description) notes.push(route.description);
    if (route.permissions?.length) notes.push(`Requires permission ${route.permissions.map((p) => `\`${p}\``).join(', ')}.`);
    if (route.ratePolicy !== false) notes.push(`Rate-limit policy: \`${route.ratePolicy ?? 'global'}\`.`);
    if (notes.length) operation.description = notes.join('\n\n');
    if (route.tags?.length) {
      operation.tags = [...route.tags];
      for (const tag of route.tags) tags.add(tag);
    }
    if (route.permissions?.length) operation['x-permissions'] = [...route.permissions];
    if (route.problemCodes?.length) operation['x-problem-codes'] = [...route.problemCodes];
    if (auth === 'anonymous') operation.security = [];
    else if (auth === 'optional') operation.security = [{ bearerAuth: [] }, { apiKey: [] }, {}];
    if (route.openApi?.security) operation.security = route.openApi.security.map((entry) => ({ ...entry }));
    if (route.documentationOnly) operation['x-documentation-only'] = true;
    for (const [name, value] of Object.entries(route.openApi?.extensions ?? {})) operation[name] = value;
    const parameters = [...parametersOf(route.request?.params, 'path'), ...parametersOf(route.request?.query, 'query')];
    if (parameters.length) operation.parameters = parameters;
    const request = route.request;
    if (request?.body && request.bodyKind !== 'raw') {
      const contentType = request.bodyKind === 'form' ? 'application/x-www-form-urlencoded' : 'application/json';
      const schema = toSchema(request.body, 'input');
      operation.requestBody = {
        required: !request.body.safeParse(undefined).success,
        content: { [contentType]: { schema } },
      };
    } else if (request?.bodyKind === 'raw' && request.rawContentType) {
      operation.requestBody = {
        required: true,
        content: { [request.rawContentType]: { schema: request.body ? toSchema(request.body, 'input') : {} } },
      };
    }
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses)) {
      const entry: Record<string, unknown> = { description: response.description };
      if (response.schema) {
        entry.content = { [response.contentType ?? 'application/json']: { schema: toSchema(response.schema, 'output') } };
      } else if (response.contentType) {
        entry.content = { [response.contentType]: {} };
      }
      if (response.headers) {
        entry.headers = Object.fromEntries(
          Object.entries(response.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
        );
      }
      responses[status] = entry;
    }
    const problems = new Map<number, string>();
    if (parameters.length || request?.body)
      problems.set(400, 'The request is invalid (`Validation.Failed`, `Http.ClientError`).');
    if (auth !== 'anonymous') problems.set(401, 'No valid credential (`Auth.Unauthenticated`).');
    if (auth !== 'anonymous' && (route.permissions?.length || (route.tenant ?? 'required') === 'required')) {
      problems.set(403, 'The caller lacks a permission or an organization (`Auth.Forbidden`, `Tenant.Required`).');
    }
    if (route.ratePolicy !== false) problems.set(429, 'Too many requests (`RateLimit.Exceeded`).');
    problems.set(500, 'Unexpected failure (`Server.Error`).');
    for (const [status, description] of problems) {
      if (!(String(status) in responses)) responses[String(status)] = problemResponse(status, description);
    }
    operation.responses = responses;
    const pathItem = paths[route.path] ?? {};
    pathItem[route.method.toLowerCase()] = operation;
    paths[route.path] = pathItem;
  }
  const codes = registry.list();
  return {
    openapi: '3.1.1',
    info: {
      title: options.title ?? 'idt API',
      version: options.version ?? '1',
      ...(options.description ? { description: options.description } : {}),
    },
    servers: [{ url: options.serverUrl }],
    ...(tags.size
      ? {
          tags: [...tags].sort().map((name) => {
            const description = tagDescriptions.get(name);
            return description ? { name, description } : { name };
          }),
        }
      : {}),
    paths,
    components: {
      schemas: {
        ErrorCode: {
          type: 'string',
          description: 'Every registered problem code.',
          enum: codes.map((code) => code.code),
          'x-enum-descriptions': Object.fromEntries(
            codes.map((code) => [code.code, `${code.status} ${reasonPhrase(code.status)}: ${code.description}`]),
          ),
        },
        ProblemDetails: {
          type: 'object',
          description: 'An RFC 9457 problem document.',
          required: ['type', 'title', 'status', 'detail', 'code', 'traceId'],
          properties: {
            type: { type: 'string', const: 'about:blank' },
            title: { type: 'string', description: "The status's reason phrase." },
            status: { type: 'integer' },
            detail: { type: 'string', description: 'A user-safe sentence; one fixed sentence on every 5xx.' },
            code: { $ref: '#/components/schemas/ErrorCode' },
            traceId: { type: 'string', description: 'The W3C trace id of the request.' },
            errors: {
              type: 'object',
              description: 'Validation messages keyed by camelCase member path.',
              additionalProperties: { type: 'array', items: { type: 'string' } },
            },
            exception: {
              type: 'object',
              description: 'Development only, 5xx only.',
              properties: {
                type: { type: 'string' },
                message: { type: 'string' },
                stack: { type: 'array', items: { type: 'string' } },
              },
            },
          },
        },
      },
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        ...extraSchemes,
      },
    },
    ...{ security: [{ bearerAuth: [] }, { apiKey: [] }, ...defaultSecurity] },
  } as OpenApiDocument;
}
