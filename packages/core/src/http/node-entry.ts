import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProblemError, renderProblem, resolveTraceId } from '@idt/problem';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from '../db/unavailable.js';
import type { Logger } from '../logger.js';
import type { HttpApp, RequestInfo } from './app.js';
import { mediaTypeOf } from './body.js';
import { type NodeSurfaceHandler, nodeRequestInfo, requestUrl, toIncomingRequest, writeFetchResponse } from './node-adapter.js';
import { strictTransportSecurityFor } from './responses.js';

/** A node:http `(req, res)` handler of a composed idt; also an Express or Connect middleware. */
export type IdtNodeHandler = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => Promise<void>;

/** Options of {@link createIdtNodeHandler}. */
export interface IdtNodeHandlerOptions {
  readonly app: HttpApp;
  readonly trustProxy: boolean;
  /** The node surfaces that may answer a path (prefix included), in order. */
  readonly surfaces: (pathname: string) => readonly NodeSurfaceHandler[];
  /** The Fetch entry point, for requests whose body a framework already read. */
  readonly fetch: (request: Request, info?: RequestInfo) => Promise<Response>;
  readonly logger: Logger;
}

/** A request as frameworks leave it: Express keeps the full path in `originalUrl`; body parsers set `body`. */
interface FrameworkRequest extends IncomingMessage {
  originalUrl?: string;
  body?: unknown;
  _body?: boolean;
}

/**
 * The node entry point: restores the full path under an Express or Connect
 * sub-mount (`app.use('/idt', handler)` strips `/idt` from `req.url`), lets
 * the module surfaces (the OpenID provider, sign-in pages) take their paths,
 * and runs the API pipeline for the rest. When a body parser already read
 * the body, the parsed body is used (JSON, URL-encoded, raw or text); a body
 * that cannot be rebuilt answers 400 `Http.BodyAlreadyRead` naming the parser.
 */
export function createIdtNodeHandler(options: IdtNodeHandlerOptions): IdtNodeHandler {
  const { app, trustProxy } = options;
  const hsts = strictTransportSecurityFor(app.options.publicBaseUrl);
  return async (raw, res) => {
    const req = raw as FrameworkRequest;
    // On every answer, the surfaces' and the fallbacks' below included; a host's own value wins.
    if (hsts && !res.hasHeader('strict-transport-security')) res.setHeader('strict-transport-security', hsts);
    try {
      if (typeof req.originalUrl === 'string' && req.originalUrl !== req.url) req.url = req.originalUrl;
      if (bodyAlreadyRead(req)) {
        await writeFetchResponse(res, await fromParsedBody(req, options));
        return;
      }
      const pathname = pathOf(req.url ?? '/');
      for (const surface of options.surfaces(pathname)) {
        const taken = surface(req, res);
        if (taken === true || (taken !== false && (await taken))) return;
      }
      const response = await app.handle(toIncomingRequest(req, trustProxy), nodeRequestInfo(req, res));
      await writeFetchResponse(res, response);
    } catch (error) {
      options.logger.error('request failed outside the pipeline', { error });
      if (!res.headersSent && isDatabaseUnavailable(error)) {
        res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) });
        res.end('Service Unavailable');
      } else if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('Internal Server Error');
      } else {
        res.destroy(error as Error);
      }
    }
  };
}

function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** Whether another middleware already consumed the request body. */
function bodyAlreadyRead(req: FrameworkRequest): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return false;
  return req._body === true || req.readableDidRead === true || req.readableEnded;
}

/** Builds the request again from the body a parser left on `req.body` and answers it through the Fetch entry. */
async function fromParsedBody(req: FrameworkRequest, options: IdtNodeHandlerOptions): Promise<Response> {
  const url = requestUrl(req, options.trustProxy);
  const type = mediaTypeOf(req.headers['content-type']);
  const body = rebuildBody(req.body, type);
  if (body === undefined) {
    const traceparent = req.headers.traceparent;
    const traceId = resolveTraceId(Array.isArray(traceparent) ? traceparent[0] : traceparent);
    const problem = renderProblem(
      new ProblemError(
        'Http.BodyAlreadyRead',
        `The request body was read by another middleware before idt (a body parser such as express.json(), express.urlencoded() or multer, or a framework's own parser) and cannot be rebuilt${type ? ` from its ${type} result` : ''}. Mount idt before body parsers, or exclude its path from them.`,
      ),
      { traceId, environment: options.app.options.environment },
    );
    options.logger.warn('request body already read by another middleware', { path: pathOf(req.url ?? '/'), contentType: type });
    return new Response(problem.body === null ? null : JSON.stringify(problem.body), {
      status: problem.status,
      headers: { 'content-type': 'application/problem+json', ...problem.headers },
    });
  }
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    const lower = name.toLowerCase();
    if (lower === 'content-length' || lower === 'transfer-encoding' || name.startsWith(':')) continue;
    headers.append(name, req.rawHeaders[i + 1] as string);
  }
  const request = new Request(url, { method: req.method ?? 'POST', headers, body });
  return options.fetch(request, { remoteAddress: req.socket.remoteAddress ?? 'unknown' });
}

/** The raw bytes of a parsed body, or `undefined` when the parser's result cannot be turned back into them. */
function rebuildBody(parsed: unknown, type: string | undefined): Uint8Array | undefined {
  if (parsed instanceof Uint8Array) return parsed;
  if (typeof parsed === 'string') return new TextEncoder().encode(parsed);
  if (parsed === undefined || parsed === null || typeof parsed !== 'object') return undefined;
  if (type === 'application/json' || type?.endsWith('+json')) return new TextEncoder().encode(JSON.stringify(parsed));
  if (type === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(parsed)) {
      if (typeof value === 'string') form.append(name, value);
      else if (Array.isArray(value) && value.every((item) => typeof item === 'string')) {
        for (const item of value) form.append(name, item);
      } else return undefined;
    }
    return new TextEncoder().encode(form.toString());
  }
  return undefined;
}
