import {
  PROBLEM_CONTENT_TYPE,
  ProblemError,
  type ProblemFieldErrors,
  problemRegistry,
  renderProblem,
  resolveTraceId,
} from '@idt/problem';
import { type Clock, systemClock } from '../clock.js';
import { type Logger, silentLogger } from '../logger.js';
import '../problems.js';
import {
  type IngestedLogEvent,
  isCorrelationId,
  LOG_BATCH_LIMITS,
  LOG_BATCH_REASONS,
  type LogBatch,
  parseLogBatch,
} from './event.js';
import { createStdoutLogSink, type LogSink } from './sinks.js';
import { createFixedWindowLimiter } from './window.js';

/** Options of {@link createLogIngestHandler}. */
export interface LogIngestOptions {
  /** The `service` stamped on every event, e.g. `idt-signin` or `idt-bff`. */
  readonly service: string;
  /** Receipt times and rate-limit windows; the wall clock by default. */
  readonly clock?: Clock;
  /** The per-IP fixed window; default 60 requests per minute. `false` turns it off. */
  readonly rateLimit?: { readonly permitLimit: number; readonly windowMs: number } | false;
  /** Most client addresses tracked by the rate limit; default 10,000 (then new addresses share one window). */
  readonly maxTrackedClients?: number;
  /**
   * Honour `x-forwarded-proto` when working out the origin the request was
   * addressed to. Set it only behind a proxy that sets the header (the
   * deployment's `trustProxy`).
   */
  readonly trustForwardedProto?: boolean;
  /**
   * The origin pages post from, when the request URL the host builds is not
   * the public one (an app server behind a proxy that rewrites the host).
   * By default the origin of `request.url`.
   */
  readonly origin?: string;
  /** Where accepted events go; JSON lines on standard output by default (see `logSinkFromEnv`). */
  readonly sink?: LogSink;
  /** Largest body in bytes; default 65,536 (SPEC 8.2). */
  readonly maxBytes?: number;
  /** Where sink failures are reported (once per episode). */
  readonly logger?: Logger;
  /**
   * The registered `Forbidden` code of the 403 answered when
   * `context.authorize` refuses (the CSRF check): `Auth.Forbidden` by
   * default; the BFF passes `Bff.CsrfInvalid`, its code for a missing or
   * wrong CSRF token everywhere else.
   */
  readonly csrfCode?: string;
}

/** What the host knows about a request besides the `Request` itself. */
export interface LogIngestContext {
  /**
   * The rate-limit key: the peer address of the connection (or, behind a
   * trusted proxy, the address it reports), never a header the page controls.
   * Unknown peers should share one key such as `'unknown'`.
   */
  readonly clientIp: string;
  /** The request id the host echoes; the `x-request-id` header by default. It is the fallback correlation id. */
  readonly requestId?: string;
  /** The trace id refusals carry (the host's own); by default the request's `traceparent` trace id, else a new one. */
  readonly traceId?: string;
  /**
   * Decides whether the page may log, after the batch validated: the BFF
   * compares its session's CSRF token with the `x-csrf-token` header or, for
   * `sendBeacon`, `batch.csrfToken`. Absent: no check (the sign-in host).
   * `false` (or a throw) answers 403.
   */
  readonly authorize?: (batch: LogBatch, request: Request) => Promise<boolean> | boolean;
  /** The signed-in user, stamped on every event. */
  readonly userId?: string | null;
  /** The organization the user works in, stamped on every event. */
  readonly tenantId?: string | null;
}

/** A Fetch-standard handler of browser log batches. */
export type LogIngestHandler = (request: Request, context: LogIngestContext) => Promise<Response>;

const NO_STORE = { 'cache-control': 'no-store' } as const;

/**
 * The `reason` of each refusal besides a malformed batch (whose reasons are
 * {@link LOG_BATCH_REASONS}), as SPEC-NOTES' "Rejections carry `{reason}`"
 * has them: stable strings a page or a test may compare.
 */
export const LOG_INGEST_REASONS = Object.freeze({
  method: 'method not allowed',
  origin: 'origin not allowed',
  rateLimited: 'too many requests',
  tooLarge: 'body is too large',
  csrf: 'csrf token missing or invalid',
});

/**
 * A refusal of the log ingest: an RFC 9457 problem document (SPEC 7.1) of a
 * registered code, plus SPEC-NOTES' `reason` and, for a malformed event,
 * its `index`.
 */
export interface LogIngestProblem {
  readonly type: 'about:blank';
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: string;
  readonly traceId: string;
  /** On `Validation.Failed` only: the reason keyed by the member at fault (`events[1].level`). */
  readonly errors?: ProblemFieldErrors;
  /** Why the request was refused (one of {@link LOG_INGEST_REASONS} or {@link LOG_BATCH_REASONS}). */
  readonly reason: string;
  /** The position of the offending event, when one is at fault. */
  readonly index?: number;
}

/**
 * The one rendering of every refusal, whichever host mounts the handler:
 * `application/problem+json`, `Cache-Control: no-store`, the problem's own
 * headers (`Allow`, `Retry-After`), then `reason` (and `index`).
 */
function refusal(problem: ProblemError, reason: string, traceId: string, index?: number): Response {
  const rendered = renderProblem(problem, { environment: 'Production', traceId });
  const body: LogIngestProblem = {
    ...(rendered.body as Omit<LogIngestProblem, 'reason'>),
    reason,
    ...(index === undefined ? {} : { index }),
  };
  return new Response(JSON.stringify(body), {
    status: rendered.status,
    headers: {
      ...rendered.headers,
      'content-type': PROBLEM_CONTENT_TYPE,
      ...NO_STORE,
      'x-content-type-options': 'nosniff',
    },
  });
}

/** The trace id a refusal carries: the host's, else the request's `traceparent` trace id, else a new one. */
function traceIdOf(request: Request, context: LogIngestContext): string {
  return context.traceId ?? resolveTraceId(request.headers.get('traceparent'));
}

/** The origin a request was addressed to, honouring a trusted proxy's `x-forwarded-proto`. */
function addressedOrigin(request: Request, trustForwardedProto: boolean): string {
  const url = new URL(request.url);
  if (trustForwardedProto) {
    const proto = request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
    if (proto === 'http' || proto === 'https') url.protocol = `${proto}:`;
  }
  return url.origin;
}

function normalizedOrigin(value: string | null): string | undefined {
  if (!value || value === 'null') return undefined;
  try {
    const origin = new URL(value).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** Reads at most `maxBytes` of a body; `undefined` when it is longer (reading stops there). */
async function readLimited(request: Request, maxBytes: number): Promise<Uint8Array | undefined> {
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(UTF8.decode(bytes));
  } catch {
    return PARSE_FAILED;
  }
}

const PARSE_FAILED = Symbol('parse failed');

/**
 * The browser log ingest endpoint of SPEC 4.10, Fetch-standard, for any
 * frontend host (`POST /logs` on the sign-in host, `POST /bff/logs` in the
 * BFF). Guards, in order:
 *
 * 1. 405 (`Allow: POST`) for another method;
 * 2. 403 when `Origin` is absent or differs from the origin the request was
 *    addressed to (a trusted proxy's `x-forwarded-proto` honoured);
 * 3. 429 (`Retry-After`) over the per-IP fixed window (60 a minute), keyed by
 *    `context.clientIp`; every request that gets this far counts;
 * 4. 413 over 65,536 bytes, by `Content-Length` or by what was read: the
 *    batch is refused, never truncated;
 * 5. 400 when the body is not JSON or the batch is malformed: the whole
 *    batch is refused;
 * 6. 403 when `context.authorize` refuses (the CSRF check of the BFF);
 * 7. 204: events are rebuilt field by field, re-redacted, stamped with `ts`
 *    (receipt), `clientTs`, `service`, `clientIp`, `userId`, `tenantId` and
 *    `correlationId` (the event's own, else the request id) and handed to the
 *    sink, which is not waited for; its failures never change the answer.
 *
 * Every refusal is an `application/problem+json` document of a registered
 * code that also carries SPEC-NOTES' `reason` (and `index`, the offending
 * event's position, for a malformed event), with `Cache-Control: no-store`:
 *
 * | Status | Code | `reason` |
 * |---|---|---|
 * | 405 | `Http.MethodNotAllowed` (`Allow: POST`) | `method not allowed` |
 * | 403 | `Logs.OriginNotAllowed` | `origin not allowed` |
 * | 429 | `RateLimit.Exceeded` (`Retry-After`) | `too many requests` |
 * | 413 | `Http.ClientError` | `body is too large` |
 * | 400 | `Http.ClientError` | `body is not valid JSON` |
 * | 400 | `Validation.Failed` (`errors` keyed by member) | one of {@link LOG_BATCH_REASONS} |
 * | 403 | `options.csrfCode` (`Auth.Forbidden`) | `csrf token missing or invalid` |
 *
 * Any content type is read as JSON: `sendBeacon` sends strings as `text/plain`.
 *
 * @example
 * const ingest = createLogIngestHandler({ service: 'idt-signin', sink: logSinkFromEnv(process.env) });
 * const response = await ingest(request, { clientIp: peerAddress });
 */
export function createLogIngestHandler(options: LogIngestOptions): LogIngestHandler {
  const clock = options.clock ?? systemClock;
  const sink = options.sink ?? createStdoutLogSink({ ...(options.logger ? { logger: options.logger } : {}) });
  const logger = options.logger ?? silentLogger;
  const maxBytes = options.maxBytes ?? LOG_BATCH_LIMITS.maxBytes;
  const trustForwardedProto = options.trustForwardedProto ?? false;
  const fixedOrigin = options.origin === undefined ? undefined : normalizedOrigin(options.origin);
  if (options.origin !== undefined && fixedOrigin === undefined)
    throw new RangeError(`origin is not a URL origin: ${options.origin}`);
  const rateLimit = options.rateLimit === undefined ? { permitLimit: 60, windowMs: 60_000 } : options.rateLimit;
  const limiter = rateLimit
    ? createFixedWindowLimiter({ ...rateLimit, clock, maxKeys: options.maxTrackedClients ?? 10_000 })
    : undefined;
  const csrfCode = options.csrfCode ?? 'Auth.Forbidden';
  if (problemRegistry.get(csrfCode)?.kind !== 'Forbidden') {
    throw new RangeError(`csrfCode must be a registered Forbidden code: ${csrfCode}`);
  }
  let sinkFailing = false;

  const hand = (events: IngestedLogEvent[]) => {
    const failed = (error: unknown) => {
      if (!sinkFailing) logger.warn('browser log sink failed; events dropped', { error, service: options.service });
      sinkFailing = true;
    };
    try {
      const pending = sink.write(events);
      if (pending && typeof pending.then === 'function') pending.then(() => (sinkFailing = false), failed);
      else sinkFailing = false;
    } catch (error) {
      failed(error);
    }
  };

  const tooLarge = () =>
    new ProblemError('Http.ClientError', `The request body exceeds ${maxBytes} bytes; send smaller batches.`, {
      status: 413,
    });

  return async (request, context) => {
    const R = LOG_INGEST_REASONS;
    if (request.method !== 'POST') {
      const problem = new ProblemError('Http.MethodNotAllowed', 'Use POST to send browser log events.', {
        headers: { allow: 'POST' },
      });
      return refusal(problem, R.method, traceIdOf(request, context));
    }

    const expected = fixedOrigin ?? addressedOrigin(request, trustForwardedProto);
    if (normalizedOrigin(request.headers.get('origin')) !== expected) {
      return refusal(new ProblemError('Logs.OriginNotAllowed'), R.origin, traceIdOf(request, context));
    }

    if (limiter) {
      const decision = limiter.hit(context.clientIp || 'unknown');
      if (!decision.allowed) {
        const seconds = decision.retryAfterSeconds;
        const problem = new ProblemError('RateLimit.Exceeded', `Too many requests; retry in ${seconds} seconds.`, {
          headers: { 'retry-after': String(seconds) },
        });
        return refusal(problem, R.rateLimited, traceIdOf(request, context));
      }
    }

    const declared = request.headers.get('content-length');
    if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) {
      return refusal(tooLarge(), R.tooLarge, traceIdOf(request, context));
    }
    const bytes = await readLimited(request, maxBytes);
    if (bytes === undefined) return refusal(tooLarge(), R.tooLarge, traceIdOf(request, context));

    const body = parseJson(bytes);
    if (body === PARSE_FAILED) {
      const problem = new ProblemError('Http.ClientError', 'The request body is not valid JSON.');
      return refusal(problem, LOG_BATCH_REASONS.notJson, traceIdOf(request, context));
    }
    const parsed = parseLogBatch(body);
    if (!parsed.ok) {
      const problem = new ProblemError('Validation.Failed', 'The log batch is malformed; none of its events was recorded.', {
        errors: { [parsed.member]: [parsed.reason] },
      });
      return refusal(problem, parsed.reason, traceIdOf(request, context), parsed.index);
    }

    if (context.authorize) {
      let allowed = false;
      try {
        allowed = (await context.authorize(parsed.batch, request)) === true;
      } catch (error) {
        logger.warn('browser log authorization failed', { error, service: options.service });
      }
      if (!allowed) return refusal(new ProblemError(csrfCode), R.csrf, traceIdOf(request, context));
    }

    const ts = clock.now().toISOString();
    const header = request.headers.get('x-request-id');
    const requestId = context.requestId ?? (isCorrelationId(header) ? header : null);
    const events = parsed.batch.events.map(
      (event): IngestedLogEvent => ({
        ts,
        clientTs: event.ts,
        level: event.level,
        event: event.event,
        attrs: event.attrs,
        service: options.service,
        clientIp: context.clientIp,
        userId: context.userId ?? null,
        tenantId: context.tenantId ?? null,
        correlationId: event.correlationId ?? requestId,
        ...(event.error ? { error: event.error } : {}),
      }),
    );
    hand(events);
    return new Response(null, { status: 204, headers: NO_STORE });
  };
}
