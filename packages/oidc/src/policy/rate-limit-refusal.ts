import type { RateLimitDecision } from '@idt/core';
import { type ProblemDocument, ProblemError, renderProblem, resolveTraceId } from '@idt/problem';

/** The OAuth error code of a refused provider request (SPEC 7.5). */
export const RATE_LIMIT_OAUTH_ERROR = 'rate_limit_exceeded';

/**
 * The body of a provider endpoint's 429: the problem document of SPEC 7.1
 * (`RateLimit.Exceeded`) that OAuth clients can also read as an error
 * response (`error`, `error_description`).
 */
export interface RateLimitRefusalBody extends ProblemDocument {
  readonly error: typeof RATE_LIMIT_OAUTH_ERROR;
  readonly error_description: string;
}

/** A rendered 429 of the provider endpoints. */
export interface RateLimitRefusal {
  readonly status: 429;
  /** `Content-Type: application/problem+json`, `Retry-After`, `Cache-Control: no-store` and `Pragma: no-cache`. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: RateLimitRefusalBody;
}

/**
 * Renders the refusal of a provider request by the Auth policy through the
 * problem renderer the API uses: `RateLimit.Exceeded` with `Retry-After`,
 * plus `error: "rate_limit_exceeded"` and `error_description` for OAuth
 * clients. The trace id is the request's `traceparent`'s, else a new one.
 *
 * @example
 * const refusal = rateLimitRefusal(decision, req.headers.traceparent);
 * res.writeHead(refusal.status, refusal.headers).end(JSON.stringify(refusal.body));
 */
export function rateLimitRefusal(
  decision: Pick<RateLimitDecision, 'retryAfterSeconds'>,
  traceparent: string | null | undefined,
): RateLimitRefusal {
  const retryAfter = String(decision.retryAfterSeconds);
  const rendered = renderProblem(
    new ProblemError('RateLimit.Exceeded', `Too many requests; retry in ${retryAfter} seconds.`, {
      headers: { 'retry-after': retryAfter },
    }),
    // Only a 5xx differs by environment.
    { environment: 'Production', traceId: resolveTraceId(traceparent) },
  );
  const problem = rendered.body as ProblemDocument;
  return {
    status: 429,
    // A token endpoint's answer, so with both of RFC 6749 5.1's caching headers.
    headers: { ...rendered.headers, 'cache-control': 'no-store', pragma: 'no-cache' },
    body: { ...problem, error: RATE_LIMIT_OAUTH_ERROR, error_description: problem.detail },
  };
}
