import { defineRoute, json, noContent, type Principal, type Route } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { accountAuditContextOf } from '../../audit/account-actions.js';
import type { SessionService } from '../../sessions/service.js';

/** A session as `GET /v1/identity/sessions` lists it. */
export const SessionResponse = z.object({
  id: z.uuid(),
  createdAt: z.iso.datetime(),
  lastActivityAt: z.iso.datetime(),
  expiresAt: z.iso.datetime(),
  current: z.boolean().meta({ description: 'Whether this request is authenticated by this session.' }),
});

const SessionParams = z.object({ sessionId: z.uuid({ error: 'A session id is a GUID.' }) });

function userOf(principal: Principal | null): string {
  if (!principal?.userId) throw new ProblemError('Auth.Forbidden', 'Sessions belong to users; sign in as one.');
  return principal.userId;
}

/**
 * `GET /v1/identity/sessions`, `DELETE /v1/identity/sessions/{sessionId}`
 * (SPEC 4.4) and `POST /v1/identity/auth/logout`.
 */
export function createSessionRoutes(sessions: SessionService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/sessions',
      operationId: 'listSessions',
      summary: 'Your active sign-in sessions, newest first',
      description: 'The session authenticating this request (cookie, or the `sid` of a bearer token) is marked `current`.',
      tags: ['Sessions'],
      tenant: 'optional',
      responses: { 200: { description: 'Your active sessions', schema: z.array(SessionResponse) } },
      handler: async ({ principal }) => {
        const list = await sessions.list(userOf(principal));
        return json(
          list.map((session) => ({ ...session, current: session.id === principal?.sessionId })),
          { headers: { 'cache-control': 'no-store' } },
        );
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/sessions/{sessionId}',
      operationId: 'revokeSession',
      summary: 'Revoke one of your sessions',
      description:
        'Ends the session and every token minted under its `sid`: they fail on their next request. Another user’s session answers 404.',
      tags: ['Sessions'],
      tenant: 'optional',
      request: { params: SessionParams },
      problemCodes: ['Sessions.NotFound'],
      responses: {
        204: { description: 'The session was revoked' },
        404: { description: 'You have no such session (`Sessions.NotFound`)' },
      },
      handler: async (ctx) => {
        const { principal, params } = ctx;
        if (!(await sessions.revoke(userOf(principal), params.sessionId, 'revoked', accountAuditContextOf(ctx)))) {
          throw new ProblemError('Sessions.NotFound');
        }
        return noContent(principal?.sessionId === params.sessionId ? { 'set-cookie': sessions.clearSessionCookieHeader() } : {});
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/logout',
      operationId: 'logout',
      summary: 'Sign out: end the current session and clear the session cookie',
      description:
        'Works with the session cookie (send `Origin`) or a bearer token carrying a `sid`; the session and its tokens are revoked. Without a current session it only clears the cookie.',
      tags: ['Sessions'],
      tenant: 'optional',
      responses: {
        204: { description: 'Signed out', headers: { 'Set-Cookie': 'Clears the session cookie' } },
      },
      handler: async ({ principal }) => {
        if (principal?.userId && principal.sessionId) await sessions.revoke(principal.userId, principal.sessionId, 'logout');
        return noContent({ 'set-cookie': sessions.clearSessionCookieHeader() });
      },
    }),
  ];
}
