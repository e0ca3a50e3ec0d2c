import { auditRequestOf, type HandlerResponse, type Route, type RouteContext } from '@idt/core';
import type { ProblemError } from '@idt/problem';
import { z } from 'zod';
import type { OrganizationAuditContext } from '../audit/organization-actions.js';
import { asScimError, SCIM_MEDIA_TYPE, ScimError, scimErrorResponse } from './errors.js';
import { LIST_RESPONSE_SCHEMA, MAX_BODY_BYTES, MAX_RESULTS } from './schemas.js';
import type { ScimTokenIdentity } from './store.js';

/** The path of the SCIM service, below the deployment prefix. */
export const SCIM_BASE_PATH = '/scim/v2';

/** What a SCIM handler gets: the request, the organization of its token, the SCIM base URL and the parsed body. */
export interface ScimRequest {
  readonly ctx: RouteContext;
  /** The organization the bearer token belongs to (`''` on discovery endpoints). */
  readonly organizationId: string;
  /** The SCIM base URL, e.g. `https://id.example.com/scim/v2`. */
  readonly base: string;
  /** The parsed JSON body (`undefined` without one). */
  readonly body: unknown;
  /** Who the writes are recorded as on the audit trail (the `scim` actor: the token's id and name) and the request's facts. */
  readonly audit: OrganizationAuditContext;
}

/** A SCIM endpoint: method, path below `/scim/v2`, and a handler. */
export interface ScimEndpoint {
  readonly method: Route['method'];
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  /** Discovery endpoints answer without a token. */
  readonly anonymous?: boolean;
  /** The handler never reads a body (an endpoint that refuses every request): none is read or checked. */
  readonly ignoresBody?: boolean;
  readonly handler: (request: ScimRequest) => Promise<HandlerResponse>;
}

/** The mapping of SCIM bearer tokens to their organizations, ids and names. */
export type ScimTokenResolver = (token: string) => Promise<ScimTokenIdentity | undefined>;

const unauthorized = (detail: string) => new ScimError(401, detail, undefined, { 'www-authenticate': 'Bearer realm="scim"' });

async function tokenOf(ctx: RouteContext, resolve: ScimTokenResolver): Promise<ScimTokenIdentity> {
  const header = ctx.headers.get('authorization') ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw unauthorized('A SCIM bearer token is required (Authorization: Bearer <token>).');
  const token = await resolve(match[1] as string);
  if (!token) throw unauthorized('The SCIM token is unknown or revoked.');
  return token;
}

/** Reads a JSON body of at most 1 MiB, `application/scim+json` or `application/json`. */
async function readBody(ctx: RouteContext): Promise<unknown> {
  const type = (ctx.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== SCIM_MEDIA_TYPE && type !== 'application/json') {
    throw new ScimError(415, `Send the body as ${SCIM_MEDIA_TYPE}.`, 'invalidSyntax');
  }
  const tooLarge = () =>
    new ScimError(413, `A SCIM request body has at most ${MAX_BODY_BYTES} bytes.`, undefined, { connection: 'close' });
  const declared = Number(ctx.headers.get('content-length') ?? '0');
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const stream = ctx.request.body;
  if (!stream) throw new ScimError(400, 'The request needs a JSON body.', 'invalidSyntax');
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new ScimError(400, 'The request needs a JSON body.', 'invalidSyntax');
  try {
    return JSON.parse(text);
  } catch {
    throw new ScimError(400, 'The body is not valid JSON.', 'invalidSyntax');
  }
}

function responsesOf(method: Route['method']): Route['responses'] {
  if (method === 'DELETE') return { 204: { description: 'Deleted' } };
  if (method === 'POST') return { 201: { description: 'Created', contentType: SCIM_MEDIA_TYPE } };
  return { 200: { description: 'The SCIM resource or list', contentType: SCIM_MEDIA_TYPE } };
}

/** Turns SCIM endpoints into routes that answer SCIM's media type and error schema. */
export function scimRoutes(endpoints: readonly ScimEndpoint[], resolve: ScimTokenResolver): Route[] {
  return endpoints.map((endpoint): Route => {
    const hasBody =
      !endpoint.ignoresBody && (endpoint.method === 'POST' || endpoint.method === 'PUT' || endpoint.method === 'PATCH');
    // The `{id}` of a resource's path, documented (the handler decides what an id of ours looks like).
    const params = endpoint.path.includes('{id}') ? { params: z.object({ id: z.string().describe('The resource id') }) } : {};
    return {
      method: endpoint.method,
      path: `${SCIM_BASE_PATH}${endpoint.path}`,
      operationId: endpoint.operationId,
      summary: endpoint.summary,
      description:
        'SCIM 2.0 (RFC 7643, 7644) for an organization: `Authorization: Bearer <SCIM token>` (see `/v1/identity/organizations/{orgId}/scim/tokens`); bodies and errors in `application/scim+json`. See docs/scim.md.',
      tags: ['SCIM'],
      auth: 'anonymous',
      request: {
        ...params,
        ...(hasBody ? { bodyKind: 'raw' as const, rawContentType: SCIM_MEDIA_TYPE, maxBodyBytes: MAX_BODY_BYTES } : {}),
      },
      responses: responsesOf(endpoint.method),
      openApi: {
        ...(endpoint.anonymous
          ? {}
          : { security: [{ scimBearer: [] }], securitySchemes: { scimBearer: { type: 'http', scheme: 'bearer' } } }),
        extensions: { 'x-error-format': 'scim' },
      },
      renderError: (problem: ProblemError) => scimErrorResponse(asScimError(problem) ?? new ScimError(500, 'Internal error.')),
      handler: async (ctx: RouteContext) => {
        try {
          const token = endpoint.anonymous ? undefined : await tokenOf(ctx, resolve);
          const body = hasBody ? await readBody(ctx) : undefined;
          const audit: OrganizationAuditContext = {
            ...(token ? { actor: { type: 'scim', id: token.tokenId, display: token.name } } : {}),
            ...auditRequestOf(ctx),
          };
          const organizationId = token?.organizationId ?? '';
          return await endpoint.handler({ ctx, organizationId, base: `${ctx.baseUrl}${SCIM_BASE_PATH}`, body, audit });
        } catch (error) {
          const scim = asScimError(error);
          if (scim) return scimErrorResponse(scim);
          throw error;
        }
      },
    };
  });
}

/** `startIndex` and `count` of a list request (RFC 7644 §3.4.2.4): 1-based, `count` at most {@link MAX_RESULTS}. */
export function pageOf(url: URL): { startIndex: number; count: number } {
  const read = (name: string, fallback: number) => {
    const raw = url.searchParams.get(name);
    if (raw === null || raw === '') return fallback;
    if (!/^-?\d{1,9}$/.test(raw)) throw new ScimError(400, `${name} must be a whole number.`, 'invalidValue');
    return Number(raw);
  };
  return { startIndex: Math.max(1, read('startIndex', 1)), count: Math.min(MAX_RESULTS, Math.max(0, read('count', 100))) };
}

/** A ListResponse body. */
export function listResponse(total: number, startIndex: number, resources: unknown[]) {
  return {
    schemas: [LIST_RESPONSE_SCHEMA],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

/** Whether `excludedAttributes` names `members`. */
export function excludesMembers(url: URL): boolean {
  const excluded = url.searchParams.get('excludedAttributes') ?? '';
  return excluded.split(',').some((name) => name.trim().toLowerCase() === 'members');
}
