import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProblemError, renderProblem, resolveTraceId, toProblemError } from '@idt/problem';
import type { IdtConfig } from '../config/config.js';
import { resolveRequestId } from './app.js';
import { mediaTypeOf } from './body.js';
import { strictTransportSecurityFor } from './responses.js';

/** What {@link createBodyErrorHandler} needs of a composed idt (an `Idt` fits). */
export interface BodyErrorHandlerSource {
  readonly config: Pick<IdtConfig, 'pathPrefix' | 'environment' | 'publicBaseUrl'>;
}

/**
 * An Express or Connect error middleware: it declares four parameters, which
 * is how Express tells error handlers from other middleware. Typed on
 * `node:http`, so idt does not depend on Express; `app.use` takes it as is.
 */
export type BodyErrorHandler = (
  error: unknown,
  req: IncomingMessage,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => Promise<void>;

/** What body parsers leave on their errors (`body-parser`, `raw-body` and their `http-errors`; Fastify's `FST_ERR_CTP_*`). */
interface BodyParserError {
  /** body-parser's name of the failure, e.g. `entity.parse.failed`. */
  readonly type?: unknown;
  /** Fastify's error code, e.g. `FST_ERR_CTP_INVALID_MEDIA_TYPE`. */
  readonly code?: unknown;
  readonly status?: unknown;
  readonly statusCode?: unknown;
  /** The parser's byte limit, on `entity.too.large`. */
  readonly limit?: unknown;
  readonly charset?: unknown;
  readonly encoding?: unknown;
}

/** A body failure this handler answers: its name (body-parser's `type` or Fastify's `code`) and its 4xx status. */
interface BodyFailure {
  readonly name: string;
  readonly status: number;
  readonly error: BodyParserError;
}

/** A request as Express leaves it: the full path in `originalUrl`. */
interface ExpressRequest extends IncomingMessage {
  originalUrl?: string;
}

/**
 * An Express (4 or 5) or Connect error middleware for hosts whose body
 * parsers run before idt (`app.use(express.json())` ahead of
 * `app.use('/idt', idt.handler)`): what those parsers refuse on a request
 * under idt's path answers idt's problem document (SPEC 7.1,
 * `application/problem+json`) instead of Express's HTML error page, in the
 * words idt's own body reader uses: 400 `Http.ClientError` for malformed
 * JSON, 413 for a body over the parser's `limit` (naming that limit), 415
 * for a charset or content encoding the parser does not support, and
 * `Http.ClientError` with the parser's status for any other client error it
 * marks with a `type`. Fastify's refusal of a `Content-Type` header it cannot
 * parse (`FST_ERR_CTP_INVALID_MEDIA_TYPE`, raised before any route runs)
 * answers 415 the same way. None of idt's routes runs for such a request, so
 * nothing changes. Every other error, and every error on a path outside
 * idt's prefix, goes on to `next(error)`: the host's own error handling is
 * unchanged. With no path prefix, every path is idt's.
 *
 * Mounting idt before the body parsers is better still: idt then reads its
 * own bodies under its own limits (1 MiB for JSON, more for uploads, where
 * `express.json()` stops at 100 kB by default).
 *
 * @example
 * import express from 'express';
 * import { createBodyErrorHandler } from '@idt/core/node';
 *
 * const app = express();
 * app.use(express.json()); // the host's parsers, for every path
 * app.use('/idt', idt.handler);
 * app.use(createBodyErrorHandler(idt)); // after the parsers and idt: a bad body under /idt answers idt's problem document
 */
export function createBodyErrorHandler(idt: BodyErrorHandlerSource): BodyErrorHandler {
  const { pathPrefix: prefix, environment } = idt.config;
  const hsts = strictTransportSecurityFor(idt.config.publicBaseUrl);
  const isIdtPath = (req: ExpressRequest): boolean => {
    if (prefix === '') return true;
    const url = req.originalUrl ?? req.url ?? '/';
    const end = url.search(/[?#]/);
    const path = end === -1 ? url : url.slice(0, end);
    return path === prefix || path.startsWith(`${prefix}/`);
  };
  // Four parameters, `next` included: Express counts them.
  return async (error, raw, res, next) => {
    const req = raw as ExpressRequest;
    const failure = bodyFailure(error);
    if (failure === undefined || res.headersSent || !isIdtPath(req)) {
      next(error);
      return;
    }
    if (failure.name === 'request.aborted') {
      // The client is gone: nothing to answer.
      res.destroy();
      return;
    }
    const header = (name: string) => {
      const value = req.headers[name];
      return (Array.isArray(value) ? value[0] : value) ?? null;
    };
    const rendered = renderProblem(problemOf(failure, mediaTypeOf(header('content-type'))), {
      environment,
      traceId: resolveTraceId(header('traceparent')),
    });
    const headers: Record<string, string> = {
      ...rendered.headers,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-request-id': resolveRequestId(header('x-request-id')),
    };
    if (hsts && !res.hasHeader('strict-transport-security')) headers['strict-transport-security'] = hsts;
    const body = JSON.stringify(rendered.body);
    headers['content-length'] = String(Buffer.byteLength(body));
    res.writeHead(rendered.status, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

/** A body parser's refusal of a request: a 4xx status and a body-parser `type` or a Fastify `FST_ERR_CTP_` code; else `undefined`. */
function bodyFailure(error: unknown): BodyFailure | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const failure = error as BodyParserError;
  const status = failure.status ?? failure.statusCode;
  if (typeof status !== 'number' || status < 400 || status > 499) return undefined;
  if (typeof failure.type === 'string') return { name: failure.type, status, error: failure };
  if (typeof failure.code === 'string' && failure.code.startsWith('FST_ERR_CTP_'))
    return { name: failure.code, status, error: failure };
  return undefined;
}

/** A token the client sent (a charset, a content encoding), when it is safe to repeat in a `detail`. */
function token(value: unknown): string | undefined {
  return typeof value === 'string' && /^[A-Za-z0-9._+-]{1,40}$/.test(value) ? value : undefined;
}

/** A media type as `mediaTypeOf` gives it, safe to repeat in a `detail`. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/;

/** idt's problem for a parser's refusal: the words idt's own body reader (`body.ts`) uses where it has them. */
function problemOf({ name, status, error }: BodyFailure, type: string): ProblemError {
  switch (name) {
    case 'entity.parse.failed':
      return new ProblemError(
        'Http.ClientError',
        type === 'application/json' || type.endsWith('+json')
          ? 'The request body is not valid JSON.'
          : `The request body is not valid ${MEDIA_TYPE.test(type) ? type : 'for its content type'}.`,
        { cause: error },
      );
    case 'entity.too.large': {
      const limit = typeof error.limit === 'number' ? `${error.limit} bytes` : 'the size this service accepts';
      return new ProblemError('Http.ClientError', `The request body exceeds ${limit}.`, { status: 413, cause: error });
    }
    case 'charset.unsupported': {
      const charset = token(error.charset);
      return new ProblemError(
        'Http.ClientError',
        `${charset ? `The charset "${charset}" is not supported; send` : 'Send'} the body as UTF-8.`,
        { status: 415, cause: error },
      );
    }
    case 'encoding.unsupported': {
      const encoding = token(error.encoding);
      return new ProblemError('Http.ClientError', `The content encoding${encoding ? ` "${encoding}"` : ''} is not supported.`, {
        status: 415,
        cause: error,
      });
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ProblemError('Http.ClientError', 'The Content-Type header is not a media type this service accepts.', {
        status,
        cause: error,
      });
    default: {
      const problem = toProblemError(error);
      return problem instanceof ProblemError
        ? problem
        : new ProblemError('Http.ClientError', undefined, { status, cause: error });
    }
  }
}
