/**
 * Node requests in the pipeline and the pipeline's answers on Node
 * responses: the conversions `@idt/core/node` and the node entry point share.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { HttpApp, RequestInfo } from './app.js';
import { type HandlerResponse, type HeaderReader, type IncomingRequest, LightResponse } from './light.js';

/** A node:http handler that may decline a request; answers `true` when it took it. */
export type NodeSurfaceHandler = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/** A node-level handler that may take a request before the Fetch app; returns `true` when it did. */
export type NodePreHandler = NodeSurfaceHandler;

/** Options of {@link createNodeHandler}. */
export interface NodeHandlerOptions {
  /** Honour `x-forwarded-proto` and `x-forwarded-host` when building the request URL. */
  readonly trustProxy?: boolean;
  /** Handlers tried in order before the Fetch app (the OpenID provider mounts this way). */
  readonly before?: readonly NodePreHandler[];
}

/**
 * Turns a Node request into a Fetch `Request`. The body is streamed, not
 * buffered. The request carries no signal: undici keeps request signals
 * reachable from a finalization registry, which under load grows memory and
 * slows every request; {@link clientSignal} gives the disconnect signal instead.
 */
export function toFetchRequest(req: IncomingMessage, trustProxy = false, url = requestUrl(req, trustProxy)): Request {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.charCodeAt(0) === 58 /* ':' pseudo-headers of HTTP/2 */) continue;
    headers.append(name, raw[i + 1] as string);
  }
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(url, {
    method,
    headers,
    ...(hasBody ? { body: Readable.toWeb(req) as unknown as ReadableStream, duplex: 'half' } : {}),
  } as RequestInit);
}

/** The absolute URL of a Node request (forwarded protocol and host honoured behind a trusted proxy). */
export function requestUrl(req: IncomingMessage, trustProxy = false): string {
  const forwardedProto = trustProxy ? headerValue(req.headers['x-forwarded-proto'])?.split(',')[0]?.trim() : undefined;
  const forwardedHost = trustProxy ? headerValue(req.headers['x-forwarded-host'])?.split(',')[0]?.trim() : undefined;
  const protocol = forwardedProto ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  const host = sanitizeHost(forwardedHost ?? req.headers.host);
  return `${protocol}://${host}${req.url?.startsWith('/') ? req.url : '/'}`;
}

/**
 * A Node request as the pipeline's {@link IncomingRequest}: headers read
 * straight from `req.headers`, the body is `req` itself, and the Fetch
 * `Request` is only built when a handler asks for it.
 */
export function toIncomingRequest(req: IncomingMessage, trustProxy = false): IncomingRequest {
  const method = req.method ?? 'GET';
  const url = requestUrl(req, trustProxy);
  const headers: HeaderReader = {
    get(name) {
      const value = req.headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
  let request: Request | undefined;
  return {
    method,
    url,
    headers,
    body: () => (method === 'GET' || method === 'HEAD' ? null : req),
    toRequest: () => {
      request ??= toFetchRequest(req, trustProxy, url);
      return request;
    },
  };
}

/** A signal that aborts when the client disconnects before the response is finished (at once if it already did). */
export function clientSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (res.destroyed && !res.writableFinished) controller.abort();
  else
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
  return controller.signal;
}

/** Writes a handler's response (a Fetch `Response` or a {@link LightResponse}) to a Node response, streaming a Fetch body. */
export async function writeFetchResponse(res: ServerResponse, response: HandlerResponse): Promise<void> {
  if (response.status === 499) {
    res.destroy();
    return;
  }
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  if (response instanceof LightResponse) {
    // Built by a response helper: one write with a Content-Length.
    const body = response.text;
    if (body !== null && response.status !== 204 && response.status !== 304) {
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    res.writeHead(response.status, headers);
    res.end(body === null || res.req.method === 'HEAD' ? undefined : body);
    return;
  }
  res.writeHead(response.status, headers);
  if (!response.body || res.req.method === 'HEAD') {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise<void>((resolve) => res.once('drain', resolve));
      if (res.destroyed) {
        await reader.cancel();
        return;
      }
    }
    res.end();
  } catch (error) {
    res.destroy(error as Error);
  }
}

/**
 * A `(req, res)` handler for `node:http` that runs pre-handlers, then the app.
 *
 * @example
 * import { createServer } from 'node:http';
 * const server = createServer(createNodeHandler(app));
 * server.listen(8080);
 */
export function createNodeHandler(app: HttpApp, options: NodeHandlerOptions = {}) {
  const trustProxy = options.trustProxy ?? app.options.trustProxy ?? false;
  const before = options.before ?? [];
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      for (const handler of before) {
        const taken = handler(req, res);
        if (taken === true || (taken !== false && (await taken))) return;
      }
      const request = toIncomingRequest(req, trustProxy);
      const response = await app.handle(request, new NodeRequestInfo(req, res));
      await writeFetchResponse(res, response);
    } catch (error) {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('Internal Server Error');
      } else {
        res.destroy(error as Error);
      }
    }
  };
}

/** What the pipeline learns from a Node request beyond its head: the peer address and a lazily built disconnect signal. */
export function nodeRequestInfo(req: IncomingMessage, res: ServerResponse): RequestInfo {
  return new NodeRequestInfo(req, res);
}

/**
 * What the pipeline learns from a Node request beyond its head: the peer
 * address, and the disconnect signal, built only when a handler asks for it
 * (most requests never do). A class so that every request shares one shape.
 */
class NodeRequestInfo implements RequestInfo {
  readonly remoteAddress: string;
  readonly #res: ServerResponse;
  #signal: AbortSignal | undefined;

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.remoteAddress = req.socket.remoteAddress ?? 'unknown';
    this.#res = res;
  }

  get signal(): AbortSignal {
    this.#signal ??= clientSignal(this.#res);
    return this.#signal;
  }

  clientClosed(): boolean {
    return this.#res.destroyed && !this.#res.writableFinished;
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function sanitizeHost(host: string | undefined): string {
  if (host && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host)) return host;
  return 'localhost';
}
