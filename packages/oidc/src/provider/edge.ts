import { IncomingMessage, type ServerResponse } from 'node:http';
import {
  clientIpOf,
  decodeComponent,
  decodeUtf8Strict,
  mediaTypeOf,
  type NodeSurfaceHandler,
  parseParams,
  pathsUnder,
  type RateLimitDecision,
  type RequestRateLimiter,
} from '@idt/core';
import { ValidationProblem } from '@idt/problem';
import { ACCOUNT_BASE } from '../interactions/account.js';
import { ASSETS_BASE, INTERACTION_BASE } from '../interactions/handler.js';
import { PASSWORD_RESET_PATH } from '../interactions/password-reset-page.js';
import { VERIFY_EMAIL_PAGE } from '../interactions/verify-email-page.js';
import { rateLimitRefusal } from '../policy/rate-limit-refusal.js';
import { authLimitedEndpoint, authPartition, requestClientId } from '../policy/rate-partition.js';
import { OIDC_ROUTES } from './create-provider.js';
import { NO_STORE_HEADERS } from './middleware.js';

// The provider's edge on node:http: which paths are the provider's and the pages', the guard every
// provider request passes before oidc-provider and the database see it (safe text, oidc-provider's
// body limit, POST to GET for the endpoints that take both), the `auth` rate limit, and the hand-over
// to oidc-provider's app.

const PROVIDER_PATHS = [
  OIDC_ROUTES.authorization,
  OIDC_ROUTES.token,
  OIDC_ROUTES.end_session,
  OIDC_ROUTES.revocation,
  OIDC_ROUTES.introspection,
  OIDC_ROUTES.pushed_authorization_request,
  OIDC_ROUTES.jwks,
  '/.well-known/openid-configuration',
];

/** Whether a path (without the deployment prefix) is one of oidc-provider's endpoints. */
export const isProviderPath: (path: string) => boolean = pathsUnder(PROVIDER_PATHS);
const isAccountPath = pathsUnder([ACCOUNT_BASE]);
// A: passwords (the reset page the mailed links open)
const isPasswordResetPath = pathsUnder([PASSWORD_RESET_PATH]);
// B: verified e-mail (the confirm page the mailed links open)
const isVerifyEmailPath = pathsUnder([VERIFY_EMAIL_PAGE]);

const INTERACTION_PREFIX = `${INTERACTION_BASE}/`;
const ASSETS_PREFIX = `${ASSETS_BASE}/`;

/** Whether a path (without the deployment prefix) belongs to the sign-in or account pages. */
export function isPagePath(path: string): boolean {
  return (
    path.startsWith(INTERACTION_PREFIX) ||
    path.startsWith(ASSETS_PREFIX) ||
    isAccountPath(path) ||
    isPasswordResetPath(path) ||
    isVerifyEmailPath(path)
  );
}

/** The largest form handed to the provider: oidc-provider itself refuses bodies over 56 KiB. */
const MAX_PROVIDER_FORM_BYTES = 56 * 1024;

/** The description of an OAuth error naming what holds text that is not safe to store. */
function unsafeDescription(what: string): string {
  return `${what} contains a NUL character or bytes that are not valid UTF-8.`;
}

/** Parsed query or form parameters (a repeated name is an array). */
type Params = Record<string, string | string[]>;

/** The parameters of a query string or form when it is safe, else the description naming its first unsafe parameter. */
function checkParams(text: string): Params | string {
  try {
    return parseParams(text);
  } catch (error) {
    if (!(error instanceof ValidationProblem)) throw error;
    return unsafeDescription(`The ${Object.keys(error.errors ?? {})[0] ?? 'request'} parameter`);
  }
}

/** A provider request that passed the guard, with what the guard parsed of it. */
interface GuardedRequest {
  /** `req` itself, or (when the form was read) a copy carrying the buffered body: oidc-provider reads the stream itself. */
  readonly req: IncomingMessage;
  readonly query: Params | undefined;
  /** The URL-encoded form body, read and parsed once here; the rate limiter reads its `client_id`. */
  readonly form: Params | undefined;
  /** The form body's text (checked UTF-8), when the form was read. */
  readonly formText?: string;
}

/** Whether HTTP Basic client credentials (form-encoded, then Base64) decode to safe text. */
function safeBasicCredentials(header: string | undefined): boolean {
  const match = header ? /^Basic\s+(\S+)\s*$/i.exec(header) : null;
  if (!match?.[1]) return true;
  const decoded = decodeUtf8Strict(Buffer.from(match[1], 'base64'));
  if (decoded === undefined) return false;
  return decoded.split(':').every((part) => decodeComponent(part.replace(/\+/g, ' ')) !== undefined);
}

/**
 * Checks a provider request's path, query, Basic credentials and form body
 * for NUL characters and bytes that are not valid UTF-8, before oidc-provider
 * and the database see them. Answers the OAuth error description of a
 * refusal, or the request to hand on with its parsed query and form.
 */
function guardProviderRequest(req: IncomingMessage, rawUrl: string): string | GuardedRequest | Promise<string | GuardedRequest> {
  const index = rawUrl.indexOf('?');
  if (decodeComponent(index === -1 ? rawUrl : rawUrl.slice(0, index)) === undefined) {
    return unsafeDescription('The request path');
  }
  const query = index === -1 ? undefined : checkParams(rawUrl.slice(index + 1));
  if (typeof query === 'string') return query;
  if (!safeBasicCredentials(req.headers.authorization)) return unsafeDescription('The Authorization header');
  if (req.method !== 'POST' || mediaTypeOf(req.headers['content-type']) !== 'application/x-www-form-urlencoded') {
    return { req, query, form: undefined };
  }
  return readProviderForm(req, query);
}

/**
 * Reads the form body (up to oidc-provider's own limit) and checks it. Events
 * rather than an async iterator: this runs on every token request. On a body
 * that is too large the request is paused unread; Node drains it after the
 * answer.
 */
function readProviderForm(req: IncomingMessage, query: Params | undefined): Promise<string | GuardedRequest> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PROVIDER_FORM_BYTES) {
        settle();
        req.pause();
        resolve('The request body is too large.');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      settle();
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      const text = decodeUtf8Strict(body);
      if (text === undefined) return resolve(unsafeDescription('The request body'));
      const form = checkParams(text);
      resolve(typeof form === 'string' ? form : { req: withBody(req, body), query, form, formText: text });
    };
    const onError = (error: Error) => {
      settle();
      reject(error);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * A request like `req` whose (already consumed) body is `body`, for
 * oidc-provider to read. The provider reads a body through
 * `req.iterator()`, so the copy answers that with the buffered bytes instead
 * of streaming them through a second Readable.
 */
function withBody(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method as string;
  copy.url = req.url as string;
  copy.headers = req.headers;
  copy.rawHeaders = req.rawHeaders;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.httpVersion = req.httpVersion;
  copy.complete = true;
  copy.iterator = (() => bufferedIterator(body)) as IncomingMessage['iterator'];
  return copy;
}

/** The endpoints OpenID Connect requires to take GET and POST alike. */
const GET_OR_POST_PATHS: ReadonlySet<string> = new Set([OIDC_ROUTES.authorization, OIDC_ROUTES.end_session]);

/**
 * A POST to the authorization or end-session endpoint as the GET
 * oidc-provider serves (OpenID Connect Core 3.1.2.1 and RP-Initiated Logout
 * 1.0 section 2: each takes both): the form body,
 * already read and checked by the guard, becomes the query; the URL's own
 * query is dropped, as the parameters of a POST are its form's. Every check
 * of a GET then applies unchanged (PKCE, redirect URI, organization hint,
 * response mode, interactions and cookies). A POST without a form carries
 * no parameters. oidc-provider's own POST route would need the single
 * sign-on cookie to be `SameSite=None`; it stays `Lax`, so a cross-site POST
 * arrives without it and the person signs in again.
 */
function postAsGet(request: GuardedRequest, pathname: string): { request: GuardedRequest; rawUrl: string } {
  const { req } = request;
  const rawUrl = request.formText ? `${pathname}?${request.formText}` : pathname;
  const copy = new IncomingMessage(req.socket);
  copy.method = 'GET';
  copy.url = rawUrl;
  const { 'content-type': _type, 'content-length': _length, 'transfer-encoding': _encoding, ...headers } = req.headers;
  copy.headers = headers;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.httpVersion = req.httpVersion;
  copy.complete = true;
  copy.iterator = (() => bufferedIterator(Buffer.alloc(0))) as IncomingMessage['iterator'];
  return { request: { req: copy, query: request.form, form: undefined }, rawUrl };
}

/** An async iterator of one chunk: what `Readable.iterator()` gives for a buffered body, without an async generator. */
function bufferedIterator(body: Buffer): AsyncIterableIterator<Buffer> {
  let done = body.byteLength === 0;
  const iterator: AsyncIterableIterator<Buffer> = {
    [Symbol.asyncIterator]: () => iterator,
    next() {
      if (done) return Promise.resolve({ done: true, value: undefined });
      done = true;
      return Promise.resolve({ done: false, value: body });
    },
    return() {
      done = true;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return iterator;
}

/** Answers 400 `invalid_request` the way oidc-provider words its errors. */
function invalidRequest(res: ServerResponse, description: string): true {
  res.writeHead(400, { 'content-type': 'application/json; charset=utf-8', ...NO_STORE_HEADERS });
  res.end(JSON.stringify({ error: 'invalid_request', error_description: description }));
  return true;
}

/** Options of {@link createProviderEdge}. */
export interface ProviderEdgeOptions {
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  /** Read the client address from `x-forwarded-for` (behind a trusted proxy). */
  readonly trustProxy: boolean;
  /** Rate limiting of the provider endpoints (the `auth` policy); none in Development. */
  readonly rateLimiter?: RequestRateLimiter;
  /** The organization of a client id, the `auth` partition (`createClientOrganizations`): synchronous while remembered. */
  readonly clientOrganization: (clientId: string) => string | null | Promise<string | null>;
  /** oidc-provider's app callback: the current provider's (it is rebuilt when signing keys rotate). */
  readonly callback: (req: IncomingMessage, res: ServerResponse) => unknown;
  /** The node handler of the sign-in and account pages. */
  readonly pages: NodeSurfaceHandler;
}

/** The node handlers of the provider's edge. */
export interface ProviderEdge {
  /** The provider's endpoints and the sign-in pages; answers `false` synchronously for every other path. */
  readonly nodeHandler: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;
  /** oidc-provider's endpoints only: the node surface behind the pages. */
  readonly providerHandler: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;
}

/**
 * The node handlers in front of oidc-provider: each provider request is
 * guarded (safe text, body limit), counted against the `auth` rate
 * limit (SPEC 8.1), then handed to oidc-provider with its URL relative to
 * the mount point.
 */
export function createProviderEdge(options: ProviderEdgeOptions): ProviderEdge {
  const { pathPrefix, trustProxy } = options;

  /**
   * Counts a provider request against the `auth` policy (SPEC 8.1) in the
   * partition `policy/rate-partition.ts` decides, and answers the refusal of
   * `policy/rate-limit-refusal.ts` itself. Synchronous while the client's
   * organization is remembered and a rate-limit lease holds.
   */
  function rateLimited(request: GuardedRequest, res: ServerResponse, path: string): boolean | Promise<boolean> {
    const limiter = options.rateLimiter;
    const endpoint = limiter ? authLimitedEndpoint(path) : undefined;
    if (!limiter || !endpoint) return false;
    const { req } = request;
    const clientId = requestClientId({
      endpoint,
      method: req.method,
      authorization: req.headers.authorization,
      query: request.query,
      form: request.form,
    });
    const organizationId = clientId === undefined ? null : options.clientOrganization(clientId);
    if (organizationId instanceof Promise) return organizationId.then((resolved) => count(limiter, req, res, resolved));
    return count(limiter, req, res, organizationId);
  }

  function count(
    limiter: RequestRateLimiter,
    req: IncomingMessage,
    res: ServerResponse,
    organizationId: string | null,
  ): boolean | Promise<boolean> {
    const ip = clientIpOf(req.headers['x-forwarded-for'], req.socket.remoteAddress, trustProxy);
    const decision = limiter.hit('auth', authPartition({ organizationId, ip }));
    return 'then' in decision ? decision.then((settled) => refuse(req, res, settled)) : refuse(req, res, decision);
  }

  /** Sends the refusal when the decision refuses; `true` when it did. */
  function refuse(req: IncomingMessage, res: ServerResponse, decision: RateLimitDecision): boolean {
    if (decision.allowed) return false;
    const traceparent = req.headers.traceparent;
    const refusal = rateLimitRefusal(decision, typeof traceparent === 'string' ? traceparent : undefined);
    res.writeHead(refusal.status, refusal.headers);
    res.end(JSON.stringify(refusal.body));
    return true;
  }

  const prefixSlash = `${pathPrefix}/`;
  /** A request's raw URL, its path, and its path under the deployment prefix; `undefined` outside the prefix. */
  function locate(req: IncomingMessage): { rawUrl: string; pathname: string; path: string } | undefined {
    const rawUrl = req.url ?? '/';
    const query = rawUrl.indexOf('?');
    const pathname = query === -1 ? rawUrl : rawUrl.slice(0, query);
    if (pathPrefix && pathname !== pathPrefix && !pathname.startsWith(prefixSlash)) return undefined;
    return { rawUrl, pathname, path: pathname.slice(pathPrefix.length) || '/' };
  }

  /** Takes the provider's requests and the pages'; answers `false` synchronously for every other path. */
  function nodeHandler(req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> {
    const at = locate(req);
    if (at && isPagePath(at.path)) return options.pages(req, res);
    return serveLocated(req, res, at);
  }

  /** oidc-provider's endpoints: the node surface behind the pages. */
  function providerHandler(req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> {
    return serveLocated(req, res, locate(req));
  }

  function serveLocated(req: IncomingMessage, res: ServerResponse, at: ReturnType<typeof locate>): boolean | Promise<boolean> {
    if (!at || !isProviderPath(at.path)) return false;
    return serveProvider(req, res, at.rawUrl, at.pathname, at.path);
  }

  function serveProvider(
    req: IncomingMessage,
    res: ServerResponse,
    rawUrl: string,
    pathname: string,
    path: string,
  ): boolean | Promise<boolean> {
    const guarded = guardProviderRequest(req, rawUrl);
    if (typeof guarded === 'string') return invalidRequest(res, guarded);
    if (guarded instanceof Promise) {
      return guarded.then((checked) =>
        typeof checked === 'string' ? invalidRequest(res, checked) : limitAndMount(checked, res, rawUrl, pathname, path),
      );
    }
    return limitAndMount(guarded, res, rawUrl, pathname, path);
  }

  function limitAndMount(
    request: GuardedRequest,
    res: ServerResponse,
    rawUrl: string,
    pathname: string,
    path: string,
  ): boolean | Promise<boolean> {
    if (request.req.method === 'POST' && GET_OR_POST_PATHS.has(path)) {
      const asGet = postAsGet(request, pathname);
      return limitAndMount(asGet.request, res, asGet.rawUrl, pathname, path);
    }
    const limited = rateLimited(request, res, path);
    if (limited === true) return true;
    if (limited === false) return mount(request.req, res, rawUrl);
    return limited.then((refused) => refused || mount(request.req, res, rawUrl));
  }

  /** Hands a request to oidc-provider, its URL relative to the mount point. */
  async function mount(req: IncomingMessage, res: ServerResponse, rawUrl: string): Promise<boolean> {
    const mounted = req as IncomingMessage & { originalUrl?: string };
    mounted.originalUrl = rawUrl;
    mounted.url = rawUrl.slice(pathPrefix.length) || '/';
    await options.callback(req, res);
    return true;
  }

  return { nodeHandler, providerHandler };
}
