import { defineRoute, type LogIngestHandler, type Route } from '@idt/core';

/** The `service` stamped on the sign-in pages' browser log events. */
export const SIGN_IN_LOG_SERVICE = 'idt-signin';

/**
 * `POST /logs` on the sign-in host (SPEC 4.10): the browser log ingest of
 * the sign-in pages, without a CSRF check. The handler applies every guard
 * itself (method, Origin, its own per-IP window, size, shape) and answers
 * each refusal with the same problem document, `reason` included, as the
 * BFF's `POST /bff/logs`: so the route takes every other method too (to
 * answer them its own 405), skips the API rate-limit policies and stays out
 * of the API document. The rate-limit key is the client IP the pipeline
 * resolved: the peer address, or the first forwarded address behind a
 * trusted proxy (`IDT_TRUST_PROXY`).
 */
export function createSignInLogRoutes(ingest: LogIngestHandler): Route[] {
  return [
    defineRoute({
      method: 'POST',
      otherMethods: true,
      path: '/logs',
      operationId: 'ingestSignInLogs',
      summary: 'Browser log events of the sign-in pages',
      auth: 'anonymous',
      ratePolicy: false,
      hidden: true,
      request: { bodyKind: 'raw', rawContentType: 'application/json' },
      responses: {
        204: { description: 'The batch was accepted' },
        400: { description: 'The batch is malformed: a problem document with `reason` (and `index`)' },
        403: { description: 'The Origin is not the sign-in host' },
        405: { description: 'Another method than POST' },
        413: { description: 'The body is over 65,536 bytes' },
        429: { description: 'Over the per-IP limit' },
      },
      problemCodes: ['Logs.OriginNotAllowed'],
      handler: (ctx) => ingest(ctx.request, { clientIp: ctx.clientIp, requestId: ctx.requestId, traceId: ctx.traceId }),
    }),
  ];
}
