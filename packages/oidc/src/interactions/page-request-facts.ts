import { type AuditRequestFacts, clientIpOf } from '@idt/core';
import { traceIdFromTraceparent } from '@idt/problem';
import type { PageRequest } from './page-request.js';

/**
 * The request facts of a page request outside the sign-in pipeline (the
 * account pages, the password reset page), for the audit record of the
 * change it makes: the client address (the first `x-forwarded-for` entry
 * behind a trusted proxy, else the peer's), the user agent and the trace id
 * of a valid `traceparent`; `null` for each part the request does not give.
 * The same reading as the sign-in pages' (`signInRequestFacts`).
 *
 * @example
 * await directory.changePassword(userId, sessionId, current, next, pageRequestFacts(request, trustProxy));
 */
export function pageRequestFacts(request: PageRequest, trustProxy: boolean): AuditRequestFacts {
  const ip = clientIpOf(request.headers.get('x-forwarded-for'), request.remoteAddress, trustProxy);
  return {
    ip: ip && ip !== 'unknown' ? ip : null,
    userAgent: request.headers.get('user-agent') ?? null,
    traceId: traceIdFromTraceparent(request.headers.get('traceparent')) ?? null,
  };
}
