import { defineRoute, json, type Route } from '@idt/core';
import { z } from 'zod';
import type { HubAuthentication } from './bearer.js';
import type { ConnectionTokens } from './connection-tokens.js';
import { HUB_PATH } from './protocol.js';

const NegotiateQuery = z.object({
  negotiateVersion: z.coerce.number().int().min(0).max(1).optional(),
  access_token: z.string().optional(),
});

const NegotiateResponse = z.object({
  connectionId: z.string(),
  connectionToken: z.string().optional(),
  negotiateVersion: z.number(),
  availableTransports: z.array(z.object({ transport: z.literal('WebSockets'), transferFormats: z.array(z.literal('Text')) })),
});

/**
 * `POST /hubs/realtime/negotiate` (SignalR negotiate): authenticates the
 * caller and hands out a single-use connection token for its WebSocket.
 */
export function createNegotiateRoute(options: {
  readonly authenticate: HubAuthentication;
  readonly tokens: ConnectionTokens;
}): Route {
  const { authenticate, tokens } = options;
  return defineRoute({
    method: 'POST',
    path: `${HUB_PATH}/negotiate`,
    operationId: 'negotiateRealtime',
    summary: 'Starts a realtime hub connection (SignalR negotiate)',
    description:
      'Authenticates the caller (bearer header or `access_token` query) and hands out a single-use connection token valid for 15 seconds. ' +
      'Only the WebSockets transport with the JSON hub protocol is offered. Connect with `GET /hubs/realtime?id=<connectionToken>` as a WebSocket.',
    tags: ['Realtime'],
    auth: 'anonymous',
    request: { query: NegotiateQuery },
    responses: {
      200: { description: 'The negotiate response of SignalR (version 1, or 0 when asked)', schema: NegotiateResponse },
      401: { description: 'No valid access token' },
    },
    async handler(ctx) {
      const { principal } = await authenticate(ctx.headers.get('authorization'), ctx.url);
      const issued = tokens.issue(principal.subject);
      const availableTransports = [{ transport: 'WebSockets' as const, transferFormats: ['Text' as const] }];
      const body =
        (ctx.query.negotiateVersion ?? 0) >= 1
          ? { connectionId: issued.connectionId, connectionToken: issued.token, negotiateVersion: 1, availableTransports }
          : // Version 0 has no separate token: the client connects with the connection id, so it must be the secret.
            { connectionId: issued.token, negotiateVersion: 0, availableTransports };
      return json(body, { headers: { 'cache-control': 'no-store' } });
    },
  });
}
