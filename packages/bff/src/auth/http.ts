import { asDatabaseUnavailable } from '@idt/core';
import { PROBLEM_CONTENT_TYPE, ProblemError, renderProblem, resolveTraceId } from '@idt/problem';
import '../problems.js';

/** Headers of a response plus any `Set-Cookie` values (appended, never folded). */
export function responseHeaders(init: Record<string, string>, setCookie: readonly string[] = []): Headers {
  const headers = new Headers(init);
  for (const cookie of setCookie) headers.append('set-cookie', cookie);
  return headers;
}

/** Options of {@link problemResponse}. */
export interface ProblemResponseOptions {
  /** A user-safe sentence; the code's description by default. */
  readonly detail?: string;
  readonly headers?: Record<string, string>;
  readonly setCookie?: readonly string[];
}

/**
 * An RFC 9457 problem document (SPEC 7.1) for a registered code, with
 * `Cache-Control: no-store`; the `traceId` follows the request's
 * `traceparent` when it has one.
 */
export function problemResponse(request: Request, code: string, options: ProblemResponseOptions = {}): Response {
  return renderedProblem(request, new ProblemError(code, options.detail, { headers: options.headers ?? {} }), options.setCookie);
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
