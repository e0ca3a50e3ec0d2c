import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { asDatabaseUnavailable, type JwtClaims, type Logger, type Principal } from '@idt/core';
import type { WindowCounter } from '@idt/core/knex';
import { type ProblemEnvironment, ProblemError, renderProblem } from '@idt/problem';
import type { WebSocket, WebSocketServer } from 'ws';
import type { HubAuthentication } from './bearer.js';
import type { ConnectionTokens } from './connection-tokens.js';
import type { Connection, ConnectionRegistry } from './connections.js';
import type { SocketData } from './dispatcher.js';
import type { RealtimeHubLimits } from './types.js';

/** The WebSocket side of the hub: the upgrade of `GET /hubs/realtime` and the server behind it. */
export interface HubUpgrade {
  /** Authenticates, checks the connection token, and hands the socket to the WebSocket server (or answers a problem). */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
  /** Closes the WebSocket server, once loaded (a server still loading is awaited). */
  close(): Promise<void>;
}

/** Options of {@link createHubUpgrade}. */
export interface HubUpgradeOptions {
  readonly limits: Pick<RealtimeHubLimits, 'maximumReceiveMessageBytes' | 'connectionTokenTtlMs'>;
  readonly logger: Logger;
  /** For problem documents (exception details only in Development). */
  readonly environment: ProblemEnvironment;
  readonly authenticate: HubAuthentication;
  readonly tokens: ConnectionTokens;
  /** Makes connection tokens single-use across instances. */
  readonly counter: WindowCounter;
  readonly registry: ConnectionRegistry;
  /** Handles what a connection's client sends. */
  dispatch(connection: Connection, data: SocketData, isBinary: boolean): void;
  /** Whether the hub is shutting down: no connection is accepted any more. */
  isClosed(): boolean;
  now(): number;
}

/**
 * Creates the upgrade of `GET /hubs/realtime`: a WebSocket with the caller's
 * access token and, after negotiate, its single-use connection token. A
 * refused upgrade is answered with a problem document over plain HTTP.
 */
export function createHubUpgrade(options: HubUpgradeOptions): HubUpgrade {
  const { limits, logger, registry, now } = options;
  // The WebSocket server, loaded with the first upgrade: a deployment nobody connects to never loads `ws` (~1.3 MiB of heap).
  // A load that failed is forgotten, so the next upgrade tries again.
  let wss: Promise<WebSocketServer> | undefined;
  const webSocketServer = () =>
    (wss ??= import('ws').then(
      ({ WebSocketServer }) =>
        new WebSocketServer({
          noServer: true,
          // Messages up to twice the limit are read and refused with a close message; beyond that ws drops the socket (1009).
          maxPayload: limits.maximumReceiveMessageBytes * 2,
          perMessageDeflate: false,
          clientTracking: false,
        }),
      (error: unknown) => {
        wss = undefined;
        throw error;
      },
    ));

  function refuse(socket: Duplex, error: unknown) {
    const rendered = renderProblem(asDatabaseUnavailable(error), {
      environment: options.environment,
      traceId: randomUUID().replace(/-/g, ''),
    });
    if (rendered.status >= 500) logger.error('realtime upgrade failed', { error });
    const body = rendered.body ? JSON.stringify(rendered.body) : '';
    const headers = Object.entries({ ...rendered.headers, 'cache-control': 'no-store', connection: 'close' })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    if (socket.writable) {
      socket.end(
        `HTTP/1.1 ${rendered.status} ${rendered.body?.title ?? 'Error'}\r\n${headers}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    } else {
      socket.destroy();
    }
  }

  function accept(ws: WebSocket, id: string, principal: Principal, claims: JwtClaims) {
    const at = now();
    const connection: Connection = {
      id,
      ws,
      principal,
      userKey: principal.userId ?? principal.subject,
      expiresAt: claims.exp * 1000,
      openedAt: at,
      groups: new Set(),
      handshaken: false,
      closing: false,
      lastReceivedAt: at,
      lastSentAt: at,
      pending: '',
    };
    registry.add(connection);
    ws.on('error', (error) => logger.debug('realtime socket error', { connectionId: id, error }));
    ws.on('close', () => registry.forget(connection));
    ws.on('message', (data, isBinary) => options.dispatch(connection, data as SocketData, isBinary));
  }

  return {
    async handle(req, socket, head) {
      socket.on('error', () => undefined);
      try {
        if (options.isClosed()) {
          throw new ProblemError('Realtime.Unavailable', 'The realtime hub is shutting down; connect again shortly.');
        }
        if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
          throw new ProblemError('Realtime.WebSocketRequired', 'The realtime hub speaks WebSockets only.');
        }
        const url = new URL(req.url ?? '/', 'http://hub.invalid');
        const { principal, claims } = await options.authenticate(req.headers.authorization, url);
        const id = url.searchParams.get('id');
        let connectionId: string;
        if (id !== null) {
          const verified = options.tokens.verify(id, principal.subject);
          if ('error' in verified) {
            throw new ProblemError('Realtime.ConnectionNotFound', 'No such connection: negotiate again.');
          }
          const use = await options.counter.hit(
            `realtime-connection:${verified.connectionId}`,
            1,
            limits.connectionTokenTtlMs * 2,
          );
          if (!use.allowed) {
            throw new ProblemError('Realtime.ConnectionInUse', 'This connection token was already used: negotiate again.');
          }
          connectionId = verified.connectionId;
        } else {
          // The client skipped negotiation (skipNegotiation with the WebSockets transport).
          connectionId = randomBytes(16).toString('base64url');
        }
        const server = await webSocketServer();
        if (options.isClosed() || socket.destroyed) {
          socket.destroy();
          return;
        }
        server.handleUpgrade(req, socket, head, (ws) => accept(ws, connectionId, principal, claims));
      } catch (error) {
        refuse(socket, error);
      }
    },
    async close() {
      // A server still loading is awaited; one that never loaded has nothing to close.
      const server = await wss?.catch(() => undefined);
      if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
