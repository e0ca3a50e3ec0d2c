import { resolveRequestId } from '@idt/core';
import { problemResponse } from '../auth/http.js';
import type { BffSessions, CurrentSession } from '../sessions/current.js';
import { sanitizeNegotiateResponse } from './negotiate.js';
import { API_MOUNT, forwardedFor, isTraversal, parseApiBase, UPSTREAM_HUB_PATH } from './shared.js';

/** Default time the API has to answer with its response headers. */
export const DEFAULT_API_TIMEOUT_MS = 30_000;

/** Default cap on a request body the proxy buffers (bodies are buffered so a 401 can be replayed). */
export const DEFAULT_MAX_PROXY_BODY_BYTES = 10 * 1024 * 1024;

/** Options of {@link createApiProxy}. */
export interface ApiProxyOptions {
  /** The API's base URL, deployment prefix included (`BFF_API_BASE_URL`): `/api/v1/x` maps to `${apiBaseUrl}/v1/x`. */
  readonly apiBaseUrl: string;
  readonly sessions: BffSessions;
  /** The fetch that reaches the API (a WHATWG fetch, which decodes compressed bodies); global `fetch` by default. */
  readonly fetch?: typeof fetch;
  /** How long the API has to answer with its response headers (default 30 s); the body then streams without a limit. */
  readonly timeoutMs?: number;
  /** Largest request body, in bytes (default 10 MiB); a larger one answers 413. Raise it for uploads through the BFF. */
  readonly maxBodyBytes?: number;
  /**
   * The BFF sits behind a reverse proxy it trusts: the incoming
   * `X-Forwarded-For` is kept and the peer address appended. Otherwise the
   * upstream sees the peer address alone.
   */
  readonly trustProxy?: boolean;
}

/** What the host knows about the connection (core's `RequestInfo` fits). */
export interface ApiProxyRequestInfo {
  /** The peer address, appended to `X-Forwarded-For`. */
  readonly remoteAddress?: string;
  /** Aborts when the browser goes away: the upstream call is abandoned. */
  readonly signal?: AbortSignal;
}

/** The `/api/*` handler of a BFF. */
export type ApiProxy = (request: Request, info?: ApiProxyRequestInfo) => Promise<Response>;

/** Methods that change nothing: no CSRF token needed. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Request headers the browser may send on to the API; everything else (Cookie, Authorization…) stays here. */
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'accept-language',
  'content-type',
  'if-match',
  'if-none-match',
  'if-modified-since',
  'if-unmodified-since',
  'if-range',
  'range',
  'traceparent',
  'tracestate',
] as const;

/** Response headers that describe one connection, not the message, and cookies the API has no business setting on the BFF's host. */
const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'set-cookie',
  'set-cookie2',
]);

/** Encodings fetch decodes itself: the body it hands over is no longer encoded. */
const DECODED_ENCODINGS = new Set(['gzip', 'x-gzip', 'deflate', 'br', 'zstd']);

/** Statuses whose responses carry no body. */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

const TIMED_OUT = Symbol('timed out');
const CLIENT_GONE = Symbol('client gone');

type BufferedBody = Uint8Array | null | 'too-large';

/**
 * Creates the `/api/*` proxy of a BFF: the browser calls `/api/<path>` with
 * its session cookie; the proxy calls `${apiBaseUrl}/<path>` with the
 * session's access token as `Authorization: Bearer`.
 *
 * - Paths that could escape the API base (`..`, `%2e%2e`, `..%2f`, `\`) answer 400.
 * - No session: 401 `Bff.SessionMissing` (503 `Bff.UpstreamUnavailable` when
 *   a due refresh could not reach the provider). Methods other than GET, HEAD and
 *   OPTIONS need `x-csrf-token` matching the session: else 403 `Bff.CsrfInvalid`.
 * - Only an allow-list of request headers is forwarded (never Cookie, never
 *   the browser's Authorization); `X-Request-Id` is kept or minted, the peer
 *   address goes into `X-Forwarded-For`.
 * - The access token is refreshed by `sessions.current()` before it expires;
 *   if the API still answers 401, the session is refreshed once more (forced)
 *   and the request replayed once (bodies are buffered, up to `maxBodyBytes`,
 *   413 beyond). A refused refresh answers 401 `Bff.SessionRefreshFailed` and
 *   clears the cookies.
 * - API unreachable: 503 `Bff.UpstreamUnavailable`; no response headers
 *   within `timeoutMs`: 504 `Bff.UpstreamTimeout`.
 * - The response streams back with hop-by-hop headers and `Set-Cookie`
 *   removed, `Cache-Control: no-store` when the API set no cache policy, and
 *   the session's `Set-Cookie` values appended. The hub's negotiate response
 *   loses any `url`/`accessToken` redirect members.
 *
 * @example
 * const api = createApiProxy({ apiBaseUrl: 'http://idt:8080', sessions });
 * // in the host: if (url.pathname.startsWith('/api/')) return api(request, { remoteAddress });
 */
export function createApiProxy(options: ApiProxyOptions): ApiProxy {
  const base = parseApiBase(options.apiBaseUrl);
  const { sessions } = options;
  const send = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_API_TIMEOUT_MS;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_PROXY_BODY_BYTES;
  const trustProxy = options.trustProxy ?? false;

  return async function apiProxy(request: Request, info: ApiProxyRequestInfo = {}): Promise<Response> {
    const requestId = resolveRequestId(request.headers.get('x-request-id'));
    const fail = (code: string, extra: Parameters<typeof problemResponse>[2] = {}) =>
      problemResponse(request, code, { requestId, ...extra });

    const url = new URL(request.url);
    const path = url.pathname;
    if (path !== API_MOUNT && !path.startsWith(`${API_MOUNT}/`)) return fail('Http.NotFound');
    const rest = path.slice(API_MOUNT.length) || '/';
    if (isTraversal(rest)) {
      return fail('Http.ClientError', { detail: 'The path may not contain dot segments, backslashes or their encodings.' });
    }

    const method = request.method.toUpperCase();
    const current = await sessions.current(request.headers);
    if (current.session === null) return fail(current.code, { setCookie: current.setCookie });
    if (!SAFE_METHODS.has(method) && !sessions.csrfMatches(current.session, request.headers.get('x-csrf-token'))) {
      return fail('Bff.CsrfInvalid', { setCookie: current.setCookie });
    }

    const body = await readBody(request, method, maxBodyBytes);
    if (body === 'too-large') {
      return fail('Http.ClientError', {
        status: 413,
        detail: `The request body exceeds ${maxBodyBytes} bytes.`,
        headers: { connection: 'close' },
        setCookie: current.setCookie,
      });
    }

    const target = `${base.origin}${base.path}${rest}${searchWithoutToken(url)}`;
    const headers = forwardHeaders(request.headers, requestId, info.remoteAddress, trustProxy);
    const call = (token: string) => callUpstream(send, target, method, headers, body, token, timeoutMs, info.signal);

    let session: CurrentSession = current;
    let outcome = await call(current.session.accessToken);
    if (outcome.kind === 'response' && outcome.response.status === 401) {
      await outcome.response.body?.cancel().catch(() => undefined);
      const refreshed = await sessions.current(request.headers, { forceRefresh: true });
      if (refreshed.session === null) {
        const setCookie =
          refreshed.code === 'Bff.SessionRefreshFailed' && refreshed.setCookie.length === 0
            ? sessions.clearCookies()
            : refreshed.setCookie;
        return fail(refreshed.code, { setCookie });
      }
      session = { session: refreshed.session, setCookie: [...current.setCookie, ...refreshed.setCookie] };
      outcome = await call(refreshed.session.accessToken);
    }

    switch (outcome.kind) {
      case 'timeout':
        return fail('Bff.UpstreamTimeout', { setCookie: session.setCookie });
      case 'unavailable':
        return fail('Bff.UpstreamUnavailable', { setCookie: session.setCookie });
      case 'client-gone':
        return new Response(null, { status: 499 });
    }
    let response = relayResponse(outcome.response, base, target, requestId, session.setCookie);
    if (rest === `${UPSTREAM_HUB_PATH}/negotiate`) response = await sanitizeNegotiateResponse(response);
    return response;
  };
}

/** The query with any `access_token` removed: the BFF's bearer is the only credential the API sees. */
function searchWithoutToken(url: URL): string {
  if (!url.searchParams.has('access_token')) return url.search;
  const params = new URLSearchParams(url.search);
  params.delete('access_token');
  const search = params.toString();
  return search ? `?${search}` : '';
}

function forwardHeaders(incoming: Headers, requestId: string, remoteAddress: string | undefined, trustProxy: boolean): Headers {
  const headers = new Headers();
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = incoming.get(name);
    if (value !== null) headers.set(name, value);
  }
  headers.set('x-request-id', requestId);
  const forwarded = forwardedFor(incoming.get('x-forwarded-for'), remoteAddress, trustProxy);
  if (forwarded) headers.set('x-forwarded-for', forwarded);
  // The BFF streams the body on; let the hop to the API stay uncompressed rather than decode and re-frame it.
  headers.set('accept-encoding', 'identity');
  return headers;
}

/** The request body, buffered so that it can be sent twice; `'too-large'` past the cap (the rest is not read). */
async function readBody(request: Request, method: string, limit: number): Promise<BufferedBody> {
  if (method === 'GET' || method === 'HEAD' || !request.body) return null;
  const declared = Number(request.headers.get('content-length') ?? '');
  // Past the cap the rest is left unread, not cancelled: cancelling a node request turned into a web stream
  // (Readable.toWeb) throws an uncaught "Controller is already closed" on Node 20 when more data arrives. The
  // 413 goes out with Connection: close, which ends the upload.
  if (Number.isFinite(declared) && declared > limit) return 'too-large';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      reader.releaseLock();
      return 'too-large';
    }
    chunks.push(value);
  }
  if (size === 0) return method === 'POST' || method === 'PUT' || method === 'PATCH' ? new Uint8Array(0) : null;
  return Buffer.concat(chunks, size);
}

type Outcome =
  | { kind: 'response'; response: Response }
  | { kind: 'timeout' }
  | { kind: 'unavailable'; error: unknown }
  | { kind: 'client-gone' };

async function callUpstream(
  send: typeof fetch,
  target: string,
  method: string,
  forwarded: Headers,
  body: Uint8Array | null,
  token: string,
  timeoutMs: number,
  clientSignal: AbortSignal | undefined,
): Promise<Outcome> {
  if (clientSignal?.aborted) return { kind: 'client-gone' };
  const headers = new Headers(forwarded);
  headers.set('authorization', `Bearer ${token}`);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(TIMED_OUT), timeoutMs);
  // The listener stays for the body: a browser that leaves mid-download cancels the upstream transfer too.
  const onClientGone = () => controller.abort(CLIENT_GONE);
  clientSignal?.addEventListener('abort', onClientGone, { once: true });
  try {
    const response = await send(target, {
      method,
      headers,
      body,
      redirect: 'manual',
      signal: controller.signal,
    });
    return { kind: 'response', response };
  } catch (error) {
    clientSignal?.removeEventListener('abort', onClientGone);
    if (controller.signal.reason === TIMED_OUT) return { kind: 'timeout' };
    if (controller.signal.reason === CLIENT_GONE) return { kind: 'client-gone' };
    return { kind: 'unavailable', error };
  } finally {
    clearTimeout(timer);
  }
}

function relayResponse(
  upstream: Response,
  base: ReturnType<typeof parseApiBase>,
  target: string,
  requestId: string,
  setCookie: readonly string[],
): Response {
  const headers = new Headers();
  const connectionTokens = new Set(
    (upstream.headers.get('connection') ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter(Boolean),
  );
  const encoding = upstream.headers.get('content-encoding')?.trim().toLowerCase();
  const decoded = encoding !== undefined && DECODED_ENCODINGS.has(encoding);
  upstream.headers.forEach((value, name) => {
    if (DROPPED_RESPONSE_HEADERS.has(name) || connectionTokens.has(name)) return;
    if (decoded && (name === 'content-encoding' || name === 'content-length')) return;
    headers.set(name, value);
  });
  const location = headers.get('location');
  if (location !== null) headers.set('location', rewriteLocation(location, base, target));
  if (!headers.has('cache-control')) headers.set('cache-control', 'no-store');
  if (!headers.has('x-request-id')) headers.set('x-request-id', requestId);
  for (const cookie of setCookie) headers.append('set-cookie', cookie);
  const bodyless = NULL_BODY_STATUSES.has(upstream.status);
  if (bodyless) upstream.body?.cancel().catch(() => undefined);
  return new Response(bodyless ? null : upstream.body, {
    status: upstream.status,
    statusText: upstream.statusText,
    headers,
  });
}

/** A redirect into the API becomes one into `/api`; any other target is left alone. */
function rewriteLocation(location: string, base: ReturnType<typeof parseApiBase>, target: string): string {
  let resolved: URL;
  try {
    resolved = new URL(location, target);
  } catch {
    return location;
  }
  if (resolved.origin !== base.origin) return location;
  const path = resolved.pathname;
  if (base.path && path !== base.path && !path.startsWith(`${base.path}/`)) return location;
  return `${API_MOUNT}${path.slice(base.path.length) || '/'}${resolved.search}${resolved.hash}`;
}
