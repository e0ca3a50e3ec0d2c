/**
 * The node:http adapter of the idt HTTP kit.
 *
 * @packageDocumentation
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { HttpApp } from './http/app.js';

/** A node-level handler that may take a request before the Fetch app; returns `true` when it did. */
export type NodePreHandler = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

/** Options of {@link createNodeHandler}. */
export interface NodeHandlerOptions {
  /** Honour `x-forwarded-proto` and `x-forwarded-host` when building the request URL. */
  readonly trustProxy?: boolean;
  /** Handlers tried in order before the Fetch app (the OpenID provider mounts this way). */
  readonly before?: readonly NodePreHandler[];
}

/**
 * Turns a Node request into a Fetch `Request`. The body is streamed, not
 * buffered; the request's signal aborts when the client disconnects.
 */
export function toFetchRequest(req: IncomingMessage, res: ServerResponse, trustProxy = false): Request {
  const forwardedProto = trustProxy ? headerValue(req.headers['x-forwarded-proto'])?.split(',')[0]?.trim() : undefined;
  const forwardedHost = trustProxy ? headerValue(req.headers['x-forwarded-host'])?.split(',')[0]?.trim() : undefined;
  const protocol = forwardedProto ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  const host = sanitizeHost(forwardedHost ?? req.headers.host);
  const url = `${protocol}://${host}${req.url?.startsWith('/') ? req.url : '/'}`;
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.charCodeAt(0) === 58 /* ':' pseudo-headers of HTTP/2 */) continue;
    headers.append(name, raw[i + 1] as string);
  }
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(url, {
    method,
    headers,
    signal: controller.signal,
    ...(hasBody ? { body: Readable.toWeb(req) as unknown as ReadableStream, duplex: 'half' } : {}),
  } as RequestInit);
}

/** Writes a Fetch `Response` to a Node response, streaming its body. */
export async function writeFetchResponse(res: ServerResponse, response: Response): Promise<void> {
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
        if (await handler(req, res)) return;
      }
      const request = toFetchRequest(req, res, trustProxy);
      const response = await app.fetch(request, { remoteAddress: req.socket.remoteAddress ?? 'unknown' });
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

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function sanitizeHost(host: string | undefined): string {
  if (host && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host)) return host;
  return 'localhost';
}
