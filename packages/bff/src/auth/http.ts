import { asDatabaseUnavailable, resolveRequestId } from '@idt/core';
import { PROBLEM_CONTENT_TYPE, ProblemError, type ProblemErrorOptions, renderProblem, resolveTraceId } from '@idt/problem';
import '../problems.js';

/** Headers of a response plus any `Set-Cookie` values (appended, never folded). */
export function responseHeaders(init: Record<string, string>, setCookie: readonly string[] = []): Headers {
  const headers = new Headers(init);
  for (const cookie of setCookie) headers.append('set-cookie', cookie);
  return headers;
}

/** Options of {@link problemResponse}: the problem's own (headers, field errors, a 4xx status for `Http.ClientError`) and the response's. */
export interface ProblemResponseOptions extends ProblemErrorOptions {
  /** A user-safe sentence; the code's description by default. */
  readonly detail?: string;
  /** `Set-Cookie` values to append. */
  readonly setCookie?: readonly string[];
  /** The `x-request-id` to echo; the request's own when sane, else a new one. */
  readonly requestId?: string;
}

/**
 * The BFF's own answer as an RFC 9457 problem document (SPEC 7.1) for a
 * registered code, with `Cache-Control: no-store`, the request id and any
 * `Set-Cookie` values; the `traceId` follows the request's `traceparent`
 * when it has one. The routes under `/bff` and the `/api` proxy both answer
 * with it.
 */
export function problemResponse(request: Request, code: string, options: ProblemResponseOptions = {}): Response {
  const { detail, setCookie, requestId, ...errorOptions } = options;
  const response = renderedProblem(request, new ProblemError(code, detail, errorOptions), setCookie);
  response.headers.set('x-request-id', requestId ?? resolveRequestId(request.headers.get('x-request-id')));
  return response;
}

/** Any thrown value as a problem document: problem errors keep their code, a lost database answers 503, anything else 500. */
export function errorResponse(request: Request, error: unknown): Response {
  return renderedProblem(request, asDatabaseUnavailable(error));
}

function renderedProblem(request: Request, error: unknown, setCookie: readonly string[] = []): Response {
  const rendered = renderProblem(error, {
    environment: 'Production',
    traceId: resolveTraceId(request.headers.get('traceparent')),
  });
  if (rendered.body === null) return new Response(null, { status: 499 });
  const headers = responseHeaders(
    { ...rendered.headers, 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': 'no-store' },
    setCookie,
  );
  return new Response(JSON.stringify(rendered.body), { status: rendered.status, headers });
}

/** 405 `Http.MethodNotAllowed` with `Allow`. */
export function methodNotAllowed(request: Request, allow: string): Response {
  return problemResponse(request, 'Http.MethodNotAllowed', {
    detail: `Use ${allow} on this address.`,
    headers: { allow },
  });
}

/** A JSON body that no cache keeps. */
export function noStoreJson(body: unknown, status = 200, setCookie: readonly string[] = []): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: responseHeaders({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }, setCookie),
  });
}
