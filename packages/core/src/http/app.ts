import { randomUUID } from 'node:crypto';
import {
  ClientClosedError,
  newTraceId,
  ProblemError,
  renderProblem,
  toProblemError,
  traceIdFromTraceparent,
  UnauthorizedError,
} from '@idt/problem';
import type { z } from 'zod';
import { $ZodAsyncError } from 'zod/v4/core';
import type { Authenticator, Principal } from '../auth/principal.js';
import type { Environment, RatePolicyName } from '../config/config.js';
import { asDatabaseUnavailable } from '../db/unavailable.js';
import { type Logger, silentLogger } from '../logger.js';
import { type RequestRateLimiter, ratePartition } from '../rate-limit/partition.js';
import { DEFAULT_MAX_BODY_BYTES, parseParams, readFormBody, readJsonBody, unsafeTextProblem } from './body.js';
import { clientIpOf } from './client-ip.js';
import { IDT_ICON_LINK } from './favicon.js';
import {
  type HandlerResponse,
  type HeaderReader,
  type IncomingRequest,
  incomingFromRequest,
  LightResponse,
  type RequestHead,
  toFetchResponse,
} from './light.js';
import { markup, unsafeRaw } from './markup.js';
import { html, json, strictTransportSecurityFor } from './responses.js';
import type { Route, RouteContext } from './route.js';
import { Router } from './router.js';

/** What the host knows about a request that the Fetch `Request` does not carry. */
export interface RequestInfo {
  /** The peer address of the connection. */
  readonly remoteAddress?: string;
  /**
   * Aborts when the client goes away. Hosts pass it here rather than on the
   * `Request` (undici keeps request signals alive in a finalization registry).
   * It may be a getter that creates the signal on first use.
   */
  readonly signal?: AbortSignal;
  /**
   * Whether the client went away; the pipeline asks this rather than
   * `signal.aborted`, so a host can leave the signal unbuilt.
   */
  readonly clientClosed?: () => boolean;
}

/** A check run before routing, e.g. the setup gate; throws (or rejects with) a `ProblemError` to refuse. */
export type RequestGate = (request: GateRequest) => Promise<void> | void;

/** What a gate sees. */
export interface GateRequest {
  readonly method: string;
  /** The path without the deployment prefix. */
  readonly path: string;
  /** The deployment path prefix (`''` or `/segment`), for paths a gate writes into its answer. */
  readonly prefix: string;
  /** The request's method, absolute URL and headers. */
  readonly request: RequestHead;
}

export type { RequestRateLimiter };

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  readonly environment: Environment;
  /** The public base URL, prefix included; handed to handlers. */
  readonly publicBaseUrl: string;
  /** The deployment path prefix (`''` or `/segment`). */
  readonly pathPrefix?: string;
  /** Honour `x-forwarded-for` for the client IP. */
  readonly trustProxy?: boolean;
  readonly routes: readonly Route[];
  readonly authenticator?: Authenticator;
  /** Absent: no rate limiting (as in Development). */
  readonly rateLimiter?: RequestRateLimiter;
  readonly gates?: readonly RequestGate[];
  readonly logger?: Logger;
  /**
   * Whether a path (without the prefix) is answered in front of the app (a
   * module surface such as the OpenID provider's). Asked only to word a 404:
   * a request under another base path than the configured one is told so.
   */
  readonly knownPath?: (path: string) => boolean;
}

/** A Fetch-standard application: hand it a `Request`, get a `Response`. */
export interface HttpApp {
  fetch(request: Request, info?: RequestInfo): Promise<Response>;
  /**
   * The pipeline on a light request; answers a Fetch `Response` or a
   * {@link LightResponse}. Host adapters use it to skip building Fetch
   * objects (see `createNodeHandler`); `fetch` wraps it.
   */
  handle(request: IncomingRequest, info?: RequestInfo): Promise<HandlerResponse>;
  readonly router: Router;
  readonly options: HttpAppOptions;
}

/**
 * 5xx codes whose `detail` is shown to the caller and that are logged once
 * at warn level, not per request at error level: expected states with a fix
 * (the setup gate's `Setup.Required` says how to finish setup).
 */
export const EXPOSED_SERVER_CODES: ReadonlySet<string> = new Set(['Setup.Required']);

const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request id to echo: the caller's when it is sane, else a new UUID. */
export function resolveRequestId(header: string | null): string {
  return header && REQUEST_ID.test(header) ? header : randomUUID();
}

/**
 * The request id and trace id of a request. When both are new, one random
 * UUID serves both (the trace id is its 32 hex digits): one draw instead of two.
 */
function requestIds(requestIdHeader: string | null, traceparent: string | null): { requestId: string; traceId: string } {
  const requested = requestIdHeader && REQUEST_ID.test(requestIdHeader) ? requestIdHeader : undefined;
  const traced = traceIdFromTraceparent(traceparent);
  if (requested === undefined && traced === undefined) {
    const uuid = randomUUID();
    return { requestId: uuid, traceId: hexOfUuid(uuid) };
  }
  return { requestId: requested ?? randomUUID(), traceId: traced ?? newTraceId() };
}

function hexOfUuid(uuid: string): string {
  return uuid.slice(0, 8) + uuid.slice(9, 13) + uuid.slice(14, 18) + uuid.slice(19, 23) + uuid.slice(24);
}

/**
 * Builds the request pipeline: request id and trace id, prefix, gates,
 * routing (404/405), authentication, rate limiting, tenant and permission
 * checks, validation, the handler, and problem rendering of every error.
 *
 * @example
 * const app = createHttpApp({ environment: 'Production', publicBaseUrl, routes });
 * const response = await app.fetch(new Request('http://localhost/health'));
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const router = new Router(options.routes);
  const prefix = options.pathPrefix ?? '';
  const logger = options.logger ?? silentLogger;
  const gates = options.gates ?? [];
  const hsts = strictTransportSecurityFor(options.publicBaseUrl);
  // Expected 5xx states already announced in the log (once each per app, not per request).
  const announced = new Set<string>();

  // The helpers below word a 404 only: a matched request never calls them.
  /** Whether a prefix-free path is one the app (or what answers in front of it) serves, for any method. */
  const known = (method: string, path: string): boolean =>
    path !== '/' && (router.lookup(method, path).kind !== 'not-found' || (options.knownPath?.(path) ?? false));

  /** Where a path would be one of idt's: as is (`extra` empty), or below one to three extra leading segments. */
  function locate(method: string, path: string): { extra: string; rest: string } | undefined {
    if (known(method, path)) return { extra: '', rest: path };
    let cut = 0;
    for (let segment = 0; segment < 3; segment++) {
      cut = path.indexOf('/', cut + 1);
      if (cut <= 0) return undefined;
      const rest = path.slice(cut);
      if (known(method, rest)) return { extra: path.slice(0, cut), rest };
    }
    return undefined;
  }

  /** The `baseUrl` (and `IDT_PATH_PREFIX`) of idt mounted under `mount`. */
  const baseUrlUnder = (mount: string) => `${new URL(options.publicBaseUrl).origin}${mount} (IDT_PATH_PREFIX=${mount})`;

  /** A request outside the prefix: idt's path as is (the prefix was stripped on the way), or under another mount path. */
  function outsidePrefixDetail(method: string, pathname: string): string | undefined {
    const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
    const found = path === '/' ? { extra: '', rest: '' } : locate(method, path);
    if (!found) return undefined;
    const head = `No route at ${pathname}: idt's baseUrl is ${options.publicBaseUrl}, so its paths start with ${prefix} (${found.rest ? `this one would be ${prefix}${found.rest}` : `${prefix}/health, for one`}).`;
    return found.extra
      ? `${head} If idt is mounted under ${found.extra}, set baseUrl to ${baseUrlUnder(found.extra)}.`
      : `${head} A host or proxy that strips ${prefix} before idt must hand it the full path; if idt is served at the root, drop ${prefix} from baseUrl.`;
  }

  /** A request inside the prefix whose path is one of idt's below extra leading segments: mounted under another path. */
  function extraBaseDetail(method: string, pathname: string, path: string): string | undefined {
    const found = locate(method, path);
    if (!found?.extra) return undefined;
    return `No route at ${pathname}: idt's baseUrl is ${options.publicBaseUrl}${prefix ? '' : ' (no path prefix)'}, where this path would be ${prefix}${found.rest}. If idt is mounted under ${prefix}${found.extra}, set baseUrl to ${baseUrlUnder(`${prefix}${found.extra}`)}.`;
  }

  async function run(
    request: IncomingRequest,
    url: URL,
    info: RequestInfo,
    ids: { requestId: string; traceId: string },
    matched: { route?: Route },
  ): Promise<HandlerResponse> {
    const clientIp = resolveClientIp(request, info, options.trustProxy ?? false);
    let path = url.pathname;
    if (prefix) {
      if (path !== prefix && !path.startsWith(`${prefix}/`)) {
        throw new ProblemError('Http.NotFound', outsidePrefixDetail(request.method, path));
      }
      path = path.slice(prefix.length) || '/';
    }
    if (path.length > 1 && path.endsWith('/')) path = path.replace(/\/+$/, '');
    for (const gate of gates) {
      const pending = gate({ method: request.method, path, prefix, request });
      if (pending) await pending;
    }

    const lookup = router.lookup(request.method, path);
    if (lookup.kind === 'not-found') throw new ProblemError('Http.NotFound', extraBaseDetail(request.method, url.pathname, path));
    if (lookup.kind === 'method-not-allowed') {
      const allow = lookup.allowed.includes('GET') ? [...lookup.allowed, 'HEAD'] : lookup.allowed;
      throw new ProblemError('Http.MethodNotAllowed', `Use ${allow.join(', ')} on this resource.`, {
        headers: { allow: allow.join(', ') },
      });
    }
    const { route, params: rawParams, unsafe } = lookup.match;
    matched.route = route;
    const auth = route.auth ?? 'required';

    let principal: Principal | null = null;
    let authError: unknown;
    if (auth !== 'anonymous' && options.authenticator) {
      try {
        principal = (await options.authenticator.authenticate(request, { clientIp }))?.principal ?? null;
      } catch (error) {
        authError = error;
      }
    }

    const policy = route.ratePolicy === undefined ? 'global' : route.ratePolicy;
    if (policy && options.rateLimiter) {
      const key = ratePartition(policy, principal, clientIp);
      const hit = options.rateLimiter.hit(policy, key);
      const decision = 'then' in hit ? await hit : hit;
      if (!decision.allowed) {
        throw new ProblemError('RateLimit.Exceeded', `Too many requests; retry in ${decision.retryAfterSeconds} seconds.`, {
          headers: { 'retry-after': String(decision.retryAfterSeconds) },
        });
      }
    }
    if (authError !== undefined) throw authError;
    if (auth === 'required' && !principal) {
      throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
    }

    const tenantId = principal?.organizationId ?? null;
    if (principal && (route.tenant ?? 'required') === 'required' && auth !== 'anonymous' && tenantId === null) {
      throw new ProblemError('Tenant.Required');
    }
    if (route.permissions && route.permissions.length > 0) {
      const held = principal?.permissions;
      const missing = route.permissions.filter((permission) => !held?.has(permission));
      if (missing.length > 0) {
        const headers: Record<string, string> =
          principal?.kind === 'service' ? { 'www-authenticate': 'Bearer error="insufficient_scope"' } : {};
        throw new ProblemError('Auth.Forbidden', `This operation needs the ${missing.join(', ')} permission.`, { headers });
      }
    }

    const schemas = route.request ?? {};
    if (unsafe) throw unsafeTextProblem(unsafe);
    // Awaited only when a schema's refinements are async: most requests need no extra promise.
    let params = validate(schemas.params, rawParams);
    if (params instanceof Promise) params = await params;
    let query = validate(schemas.query, url.search === '' ? {} : parseParams(url.search));
    if (query instanceof Promise) query = await query;
    let body: unknown;
    if (schemas.body && (schemas.bodyKind ?? 'json') !== 'raw') {
      const maxBytes = schemas.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
      const source = { headers: request.headers, body: request.body() };
      const raw = schemas.bodyKind === 'form' ? await readFormBody(source, maxBytes) : await readJsonBody(source, maxBytes);
      body = validate(schemas.body, raw);
      if (body instanceof Promise) body = await body;
    }
    const ctx = new PipelineContext(
      request,
      info,
      url,
      route.path,
      params as Record<string, string>,
      query as Record<string, unknown>,
      body,
      principal,
      tenantId,
      ids,
      clientIp,
      options.publicBaseUrl,
      prefix,
    );
    const response = await route.handler(ctx);
    // A response for a credential is nobody else's: no shared or browser cache keeps it unless the handler says so.
    if (principal && !response.headers.has('cache-control')) response.headers.set('cache-control', 'no-store');
    return response;
  }

  async function handle(request: IncomingRequest, info: RequestInfo = {}): Promise<HandlerResponse> {
    const { requestId, traceId } = requestIds(request.headers.get('x-request-id'), request.headers.get('traceparent'));
    const closed = () => (info.clientClosed ? info.clientClosed() : (info.signal?.aborted ?? false));
    let response: HandlerResponse;
    const matched: { route?: Route } = {};
    try {
      const url = new URL(request.url);
      response = await run(request, url, info, { requestId, traceId }, matched);
      if (closed()) throw new ClientClosedError();
    } catch (caught) {
      const error = closed() ? new ClientClosedError() : asDatabaseUnavailable(caught);
      const own = renderOwnError(matched.route, error);
      if (own) {
        response = own;
      } else {
        const rendered = renderProblem(error, { environment: options.environment, traceId });
        const exposed = error instanceof ProblemError && EXPOSED_SERVER_CODES.has(error.code) ? error : undefined;
        if (exposed && rendered.body) {
          rendered.body.detail = exposed.detail;
          delete rendered.body.exception;
          if (!announced.has(exposed.code)) {
            announced.add(exposed.code);
            logger.warn(`${exposed.code}: ${exposed.detail}`, { code: exposed.code, requestId, traceId });
          }
        } else if (rendered.status >= 500) {
          logger.error('request failed', { requestId, traceId, method: request.method, url: request.url, error: caught });
        }
        response =
          rendered.body === null
            ? new LightResponse(null, { status: rendered.status, headers: rendered.headers })
            : exposed && wantsHtml(request.headers.get('accept'))
              ? exposedStatePage(exposed, rendered.status, rendered.headers, traceId)
              : json(rendered.body, { status: rendered.status, headers: rendered.headers });
        // An error describes this request only (a 404 is otherwise heuristically cacheable).
        if (!response.headers.has('cache-control')) response.headers.set('cache-control', 'no-store');
        // A body refused for its size is left unread: closing the connection spares reading the rest
        // of it to reuse the connection (node:http would, and some Fetch hosts cannot reuse it at all).
        if (rendered.status === 413) response.headers.set('connection', 'close');
      }
    }
    response.headers.set('x-request-id', requestId);
    if (!response.headers.has('x-content-type-options')) response.headers.set('x-content-type-options', 'nosniff');
    if (hsts && !response.headers.has('strict-transport-security')) response.headers.set('strict-transport-security', hsts);
    return response;
  }

  async function fetch(request: Request, info: RequestInfo = {}): Promise<Response> {
    return toFetchResponse(await handle(incomingFromRequest(request), { ...info, signal: info.signal ?? request.signal }));
  }

  return { fetch, handle, router, options };
}

/**
 * The context handed to handlers. A class, not an object literal: literals
 * with getters get a fresh hidden class each, which V8 keeps in old space and
 * which made every request's garbage survive until a full collection.
 */
class PipelineContext implements RouteContext {
  readonly requestId: string;
  readonly traceId: string;
  readonly method: string;
  readonly headers: HeaderReader;
  readonly #incoming: IncomingRequest;
  readonly #info: RequestInfo;

  constructor(
    incoming: IncomingRequest,
    info: RequestInfo,
    readonly url: URL,
    readonly routePath: string,
    readonly params: Record<string, string>,
    readonly query: Record<string, unknown>,
    readonly body: unknown,
    readonly principal: Principal | null,
    readonly tenantId: string | null,
    ids: { requestId: string; traceId: string },
    readonly clientIp: string,
    readonly baseUrl: string,
    readonly prefix: string,
  ) {
    this.#incoming = incoming;
    this.#info = info;
    this.method = incoming.method;
    this.headers = incoming.headers;
    this.requestId = ids.requestId;
    this.traceId = ids.traceId;
  }

  get request(): Request {
    return this.#incoming.toRequest();
  }

  get signal(): AbortSignal {
    return this.#info.signal ?? NEVER_ABORTED;
  }
}

/** The signal of requests whose host reports no disconnects. */
const NEVER_ABORTED = new AbortController().signal;

function wantsHtml(accept: string | null): boolean {
  return accept !== null && /\btext\/html\b/i.test(accept);
}

const STATE_PAGE_CSP = "default-src 'none'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** A browser's page for an expected 5xx state (`Setup.Required`): the same sentence as the problem's `detail`. */
function exposedStatePage(
  problem: ProblemError,
  status: number,
  headers: Record<string, string>,
  traceId: string,
): LightResponse {
  const { 'content-type': _problemType, ...rest } = headers;
  const title = problem.code === 'Setup.Required' ? 'Setup is not finished' : 'Service unavailable';
  return html(
    markup`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title}</title>${unsafeRaw(IDT_ICON_LINK)}</head>
<body>
<main>
<h1>${title}</h1>
<p>${problem.detail}</p>
<p><small>Code <code>${problem.code}</code> · trace id <code>${traceId}</code></small></p>
</main>
</body>
</html>
`,
    { status, headers: { ...rest, 'content-security-policy': STATE_PAGE_CSP, 'referrer-policy': 'no-referrer' } },
  );
}

function renderOwnError(route: Route | undefined, error: unknown): HandlerResponse | undefined {
  if (!route?.renderError || error instanceof ClientClosedError) return undefined;
  const problem = toProblemError(error);
  if (problem instanceof ClientClosedError || problem.status >= 500) return undefined;
  const response = route.renderError(problem);
  if (response) for (const [name, value] of Object.entries(problem.headers)) response.headers.set(name, value);
  return response;
}

/**
 * Parses a value with a schema: synchronously, unless the schema has async
 * refinements (zod then refuses the synchronous parse and the async one runs).
 */
function validate(schema: z.ZodType | undefined, value: unknown): unknown {
  if (!schema) return value;
  let result: z.ZodSafeParseResult<unknown>;
  try {
    result = schema.safeParse(value);
  } catch (error) {
    if (!(error instanceof $ZodAsyncError)) throw error;
    return schema.safeParseAsync(value).then((asyncResult) => {
      if (!asyncResult.success) throw asyncResult.error;
      return asyncResult.data;
    });
  }
  if (!result.success) throw result.error;
  return result.data;
}

/**
 * The rate-limit partition of a request (SPEC 8.1): organization, else user,
 * else client IP; the registration policy skips the organization. The one
 * rule of every surface, {@link ratePartition}, applied to the principal.
 */
export const partitionKey: (policy: RatePolicyName, principal: Principal | null, clientIp: string) => string = ratePartition;

function resolveClientIp(request: RequestHead, info: RequestInfo, trustProxy: boolean): string {
  return clientIpOf(request.headers.get('x-forwarded-for'), info.remoteAddress, trustProxy) ?? 'unknown';
}
