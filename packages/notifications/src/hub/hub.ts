import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  asDatabaseUnavailable,
  type Clock,
  defineEventHandler,
  defineRoute,
  type JwtClaims,
  JwtError,
  type JwtVerifier,
  json,
  type Logger,
  type ModuleContext,
  type Principal,
  type RequestHead,
} from '@idt/core';
import { ALL_KEYS, type CacheInvalidator, type WindowCounter } from '@idt/core/knex';
import {
  MembershipRemovedEvent,
  MembershipSuspendedEvent,
  OidcSessionEndedEvent,
  UserDeactivatedEvent,
  UserSessionEvictedEvent,
  UserSessionRevokedEvent,
} from '@idt/identity';
import { ProblemError, renderProblem, UnauthorizedError } from '@idt/problem';
import type { WebSocket, WebSocketServer } from 'ws';
import { z } from 'zod';
import { createConnectionTokens } from './connection-tokens.js';
import './problems.js';
import { closeMessage, completion, handshakeError, invocation, PING, parseClientMessage, splitRecords } from './protocol.js';
import type { RealtimeEnvelope, RealtimeHub, RealtimeHubLimits, RealtimeNotification } from './types.js';

/** Where the hub listens, without the deployment prefix. */
export const HUB_PATH = '/hubs/realtime';

/** The client method every server-to-client call invokes. */
export const RECEIVE_NOTIFICATION = 'ReceiveNotification';

/** SignalR's server defaults. */
export const DEFAULT_HUB_LIMITS: RealtimeHubLimits = {
  keepAliveIntervalMs: 15_000,
  clientTimeoutMs: 30_000,
  handshakeTimeoutMs: 15_000,
  maximumReceiveMessageBytes: 32 * 1024,
  connectionTokenTtlMs: 15_000,
};

/** The broadcast namespace on the cache invalidation channel (Postgres NOTIFY carries at most 8000 bytes). */
const CHANNEL = 'notifications.realtime';
const MAX_BROADCAST_BYTES = 7_500;
/** How long a hub remembers broadcasts it handled, notifications it created and sessions whose end it told. */
const REMEMBER_MS = 60_000;
/** A client that does not read is dropped once this much is queued for it. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const BEARER = /^Bearer +(\S+) *$/i;

/** Options of {@link createRealtimeHub}. */
export interface RealtimeHubOptions {
  /** Derives the key that signs connection tokens. */
  readonly secret: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Verifies access tokens (for `exp`). */
  readonly verifier: JwtVerifier;
  /** Resolves the caller of a bearer token the way the API does (revocation, membership, permissions). */
  authenticate(request: RequestHead): Promise<Principal | null>;
  /** Makes connection tokens single-use across instances. */
  readonly counter: WindowCounter;
  /** Carries hub messages to every instance (and this one). */
  readonly channel: CacheInvalidator;
  /** For problem documents (exception details only in Development). */
  readonly environment: string;
  /** Reads a notification another instance announced, when it was not created here. */
  loadNotification?(id: string): Promise<RealtimeNotification | undefined>;
  readonly limits?: Partial<RealtimeHubLimits>;
}

interface Connection {
  readonly id: string;
  readonly ws: WebSocket;
  readonly principal: Principal;
  /** The user id, or the subject of a service account. */
  readonly userKey: string;
  readonly expiresAt: number;
  readonly openedAt: number;
  readonly groups: Set<string>;
  handshaken: boolean;
  closing: boolean;
  lastReceivedAt: number;
  lastSentAt: number;
  pending: string;
}

type Broadcast =
  | { m: string; op: 'n'; id: string; u: string; o: string | null }
  | { m: string; op: 'u'; u: string; o?: string; e: RealtimeEnvelope }
  | { m: string; op: 't'; o: string; e: RealtimeEnvelope }
  | { m: string; op: 'end'; s: string; t: 'SessionEnded' | 'SessionEvicted'; at: string }
  | { m: string; op: 'close'; u: string; o?: string; r: string; rc?: boolean };

type BroadcastBody = Broadcast extends infer B ? (B extends Broadcast ? Omit<B, 'm'> : never) : never;

/**
 * Creates the realtime hub: negotiate, the WebSocket upgrade, the SignalR
 * JSON hub protocol (handshake, invocations with completions, pings, close),
 * groups, and the fan-out of notifications and session ends to every instance.
 *
 * @example
 * const hub = createRealtimeHub({ secret, clock, logger, verifier, authenticate, counter, channel: invalidator, environment });
 * return { routes: hub.routes, upgrades: [hub.upgrade], handlers: hub.handlers, jobs: hub.jobs };
 */
export function createRealtimeHub(options: RealtimeHubOptions): RealtimeHub {
  const limits: RealtimeHubLimits = { ...DEFAULT_HUB_LIMITS, ...options.limits };
  const { clock, logger, verifier, counter, channel } = options;
  const tokens = createConnectionTokens({ secret: options.secret, clock, ttlMs: limits.connectionTokenTtlMs });
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
  const connections = new Map<string, Connection>();
  const groups = new Map<string, Set<Connection>>();
  const sessions = new Map<string, Set<Connection>>();
  // Notifications created here, so this instance need not read them back; and broadcasts already handled.
  const recent = new Map<string, { envelope: RealtimeEnvelope; until: number }>();
  const seen = new Map<string, number>();
  // Sessions whose end was broadcast (by any instance) in the last minute: an eviction or revocation reaches
  // the hub twice (the identity event, then the provider's OidcSessionEndedEvent), and is told once.
  const ended = new Map<string, number>();
  const ending = new Map<string, Promise<void>>();
  let closed = false;

  const now = () => clock.now().getTime();
  const rememberEnded = (sessionId: string) => void ended.set(sessionId, now() + REMEMBER_MS);

  function addTo<K>(map: Map<K, Set<Connection>>, key: K, connection: Connection) {
    let set = map.get(key);
    if (!set) {
      set = new Set();
      map.set(key, set);
    }
    set.add(connection);
  }
  function removeFrom<K>(map: Map<K, Set<Connection>>, key: K, connection: Connection) {
    const set = map.get(key);
    if (!set) return;
    set.delete(connection);
    if (set.size === 0) map.delete(key);
  }

  function send(connection: Connection, text: string) {
    if (connection.ws.readyState !== connection.ws.OPEN) return;
    if (connection.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      logger.warn('realtime client does not read its messages; dropping it', { connectionId: connection.id });
      connection.ws.terminate();
      return;
    }
    connection.ws.send(text);
    connection.lastSentAt = now();
  }

  function forget(connection: Connection) {
    if (connections.get(connection.id) !== connection) return;
    connections.delete(connection.id);
    for (const group of connection.groups) removeFrom(groups, group, connection);
    connection.groups.clear();
    if (connection.principal.sessionId) removeFrom(sessions, connection.principal.sessionId, connection);
  }

  /** Sends the close message and closes the socket; the connection stops receiving at once. */
  function closeConnection(connection: Connection, error: string | undefined, allowReconnect: boolean, code = 1000) {
    if (connection.closing) return;
    connection.closing = true;
    forget(connection);
    if (connection.ws.readyState === connection.ws.OPEN) {
      if (connection.handshaken) connection.ws.send(closeMessage(error, allowReconnect));
      connection.ws.close(code);
    } else {
      connection.ws.terminate();
    }
  }

  function deliver(targets: Iterable<Connection>, envelope: RealtimeEnvelope, filter?: (connection: Connection) => boolean) {
    let text: string | undefined;
    for (const connection of targets) {
      if (!connection.handshaken || connection.closing || (filter && !filter(connection))) continue;
      text ??= invocation(RECEIVE_NOTIFICATION, [envelope]);
      send(connection, text);
    }
  }

  function inOrganization(organizationId: string | null | undefined) {
    return (connection: Connection) =>
      organizationId === null || organizationId === undefined || connection.principal.organizationId === organizationId;
  }

  async function handleBroadcast(message: Broadcast) {
    switch (message.op) {
      case 'n': {
        const targets = groups.get(`user:${message.u}`);
        if (!targets?.size) return;
        let envelope = recent.get(message.id)?.envelope;
        if (!envelope) {
          const notification = await options.loadNotification?.(message.id);
          if (!notification) return;
          envelope = notificationEnvelope(notification, clock);
        }
        deliver(targets, envelope, inOrganization(message.o));
        return;
      }
      case 'u': {
        const targets = groups.get(`user:${message.u}`);
        if (targets) deliver(targets, message.e, inOrganization(message.o));
        return;
      }
      case 't': {
        const targets = groups.get(`tenant:${message.o}`);
        if (targets) deliver(targets, message.e);
        return;
      }
      case 'end': {
        rememberEnded(message.s);
        const targets = [...(sessions.get(message.s) ?? [])];
        if (!targets.length) return;
        const envelope: RealtimeEnvelope = {
          type: message.t,
          module: 'Identity',
          payload: { sid: message.s },
          timestamp: message.at,
        };
        deliver(targets, envelope);
        for (const connection of targets) closeConnection(connection, 'Session ended', false, 1008);
        return;
      }
      case 'close': {
        const targets = [...(groups.get(`user:${message.u}`) ?? [])].filter(
          (connection) => message.o === undefined || connection.principal.organizationId === message.o,
        );
        for (const connection of targets) closeConnection(connection, message.r, message.rc === true, message.rc ? 1000 : 1008);
        return;
      }
    }
  }

  const unsubscribe = channel.subscribe(CHANNEL, (key) => {
    if (key === ALL_KEYS) return; // a reconnect of the listener: nothing to replay
    let message: Broadcast;
    try {
      message = JSON.parse(key) as Broadcast;
    } catch {
      return; // cut short in another process's SQLite table: this hub serves its own process there
    }
    if (typeof message?.m !== 'string' || seen.has(message.m)) return;
    seen.set(message.m, now() + REMEMBER_MS);
    handleBroadcast(message).catch((error: unknown) => logger.warn('realtime delivery failed', { error, op: message.op }));
  });

  async function broadcast(body: BroadcastBody): Promise<void> {
    const key = JSON.stringify({ m: randomBytes(9).toString('base64url'), ...body });
    if (Buffer.byteLength(key) > MAX_BROADCAST_BYTES) {
      throw new RangeError(`A realtime envelope may take at most ${MAX_BROADCAST_BYTES} bytes as JSON`);
    }
    await channel.invalidate(CHANNEL, key);
  }

  // --- Authentication -------------------------------------------------------------------------------------------

  /** The bearer of a request: the Authorization header, else the `access_token` query (browsers' WebSockets). */
  function bearerOf(authorization: string | null | undefined, url: URL): string | null {
    if (authorization) {
      const match = BEARER.exec(authorization);
      if (!match) throw new UnauthorizedError('Send the access token as Authorization: Bearer <token> or access_token=<token>.');
      return match[1] as string;
    }
    const query = url.searchParams.get('access_token');
    return query === null || query === '' ? null : query;
  }

  async function authenticateBearer(token: string | null, url: URL): Promise<{ principal: Principal; claims: JwtClaims }> {
    if (token === null)
      throw new UnauthorizedError('The realtime hub needs an access token (Authorization: Bearer, or access_token=).');
    let claims: JwtClaims;
    try {
      claims = await verifier.verify(token);
    } catch (error) {
      if (error instanceof JwtError) throw new UnauthorizedError(`The access token is invalid: ${error.message}.`);
      throw error;
    }
    // The API tolerates clock skew; a connection whose token already expired would be closed at once.
    if (claims.exp * 1000 <= now()) throw new UnauthorizedError('The access token has expired.');
    const authorization = `Bearer ${token}`;
    const principal = await options.authenticate({
      method: 'GET',
      url: url.href,
      headers: { get: (name) => (name.toLowerCase() === 'authorization' ? authorization : null) },
    });
    if (!principal) throw new UnauthorizedError();
    return { principal, claims };
  }

  // --- Negotiate ------------------------------------------------------------------------------------------------

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

  const negotiate = defineRoute({
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
      const token = bearerOf(ctx.headers.get('authorization'), ctx.url);
      const { principal } = await authenticateBearer(token, ctx.url);
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

  // --- Upgrade --------------------------------------------------------------------------------------------------

  function refuse(socket: Duplex, error: unknown) {
    const rendered = renderProblem(asDatabaseUnavailable(error), {
      environment: options.environment as never,
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

  async function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', () => undefined);
    try {
      if (closed) throw new ProblemError('Realtime.Unavailable', 'The realtime hub is shutting down; connect again shortly.');
      if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
        throw new ProblemError('Realtime.WebSocketRequired', 'The realtime hub speaks WebSockets only.');
      }
      const url = new URL(req.url ?? '/', 'http://hub.invalid');
      const authorization = req.headers.authorization;
      const { principal, claims } = await authenticateBearer(bearerOf(authorization, url), url);
      const id = url.searchParams.get('id');
      let connectionId: string;
      if (id !== null) {
        const verified = tokens.verify(id, principal.subject);
        if ('error' in verified) {
          throw new ProblemError('Realtime.ConnectionNotFound', 'No such connection: negotiate again.');
        }
        const use = await counter.hit(`realtime-connection:${verified.connectionId}`, 1, limits.connectionTokenTtlMs * 2);
        if (!use.allowed)
          throw new ProblemError('Realtime.ConnectionInUse', 'This connection token was already used: negotiate again.');
        connectionId = verified.connectionId;
      } else {
        // The client skipped negotiation (skipNegotiation with the WebSockets transport).
        connectionId = randomBytes(16).toString('base64url');
      }
      const server = await webSocketServer();
      if (closed || socket.destroyed) {
        socket.destroy();
        return;
      }
      server.handleUpgrade(req, socket, head, (ws) => accept(ws, connectionId, principal, claims));
    } catch (error) {
      refuse(socket, error);
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
    connections.set(id, connection);
    ws.on('error', (error) => logger.debug('realtime socket error', { connectionId: id, error }));
    ws.on('close', () => forget(connection));
    ws.on('message', (data, isBinary) => onMessage(connection, data as Buffer | Buffer[] | ArrayBuffer, isBinary));
  }

  function join(connection: Connection, group: string) {
    if (connection.groups.has(group)) return;
    connection.groups.add(group);
    addTo(groups, group, connection);
  }

  function ownGroups(connection: Connection): string[] {
    const own = [`user:${connection.userKey}`];
    if (connection.principal.organizationId) own.push(`tenant:${connection.principal.organizationId}`);
    return own;
  }

  function onMessage(connection: Connection, data: Buffer | Buffer[] | ArrayBuffer, isBinary: boolean) {
    if (connection.closing) return;
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    connection.lastReceivedAt = now();
    if (
      bytes.length > limits.maximumReceiveMessageBytes ||
      connection.pending.length + bytes.length > limits.maximumReceiveMessageBytes
    ) {
      closeConnection(
        connection,
        `The message exceeds the maximum size of ${limits.maximumReceiveMessageBytes} bytes.`,
        false,
        1009,
      );
      return;
    }
    if (isBinary) {
      closeConnection(connection, 'The json protocol takes text messages only.', false, 1003);
      return;
    }
    const { records, rest } = splitRecords(connection.pending + bytes.toString('utf8'));
    connection.pending = rest;
    for (const record of records) {
      if (connection.closing) return;
      if (!connection.handshaken) {
        const error = handshakeError(record);
        if (error !== null) {
          connection.ws.send(`${JSON.stringify({ error })}\u001e`);
          closeConnection(connection, undefined, false, 1002);
          return;
        }
        connection.handshaken = true;
        for (const group of ownGroups(connection)) join(connection, group);
        if (connection.principal.sessionId) addTo(sessions, connection.principal.sessionId, connection);
        send(connection, '{}\u001e');
        continue;
      }
      handleRecord(connection, record);
    }
  }

  function handleRecord(connection: Connection, record: string) {
    const parsed = parseClientMessage(record);
    if ('error' in parsed) {
      closeConnection(connection, `Protocol error: ${parsed.error}`, false, 1002);
      return;
    }
    const { message } = parsed;
    switch (message.type) {
      case 1: {
        const error = invoke(connection, message.target, message.arguments);
        if (message.invocationId !== undefined) send(connection, completion(message.invocationId, error));
        return;
      }
      case 4:
        send(connection, completion(message.invocationId as string, 'Streaming invocations are not supported by this hub.'));
        return;
      case 7:
        closeConnection(connection, undefined, false);
        return;
      default:
        return; // pings, cancellations and stray completions only keep the connection alive
    }
  }

  /** Runs a client-to-server method; returns the error text for the completion, if any. */
  function invoke(connection: Connection, target: string, args: readonly unknown[]): string | undefined {
    if (target !== 'JoinGroup' && target !== 'LeaveGroup') return `Unknown hub method '${target}'.`;
    const group = args[0];
    if (args.length !== 1 || typeof group !== 'string') return `${target} takes one argument: the group name.`;
    if (!ownGroups(connection).includes(group)) {
      return 'Access denied: only your own user:{sub} and tenant:{orgId} groups may be joined.';
    }
    if (target === 'JoinGroup') join(connection, group);
    else if (connection.groups.delete(group)) removeFrom(groups, group, connection);
    return undefined;
  }

  function tick() {
    const at = now();
    for (const connection of [...connections.values()]) {
      if (connection.closing) continue;
      if (!connection.handshaken) {
        if (at - connection.openedAt >= limits.handshakeTimeoutMs) closeConnection(connection, undefined, false, 1002);
        continue;
      }
      if (at >= connection.expiresAt) {
        closeConnection(connection, 'The access token expired; reconnect with a fresh one.', true);
      } else if (at - connection.lastReceivedAt >= limits.clientTimeoutMs) {
        closeConnection(connection, 'Client timeout: nothing was received for 30 seconds.', true);
      } else if (at - connection.lastSentAt >= limits.keepAliveIntervalMs) {
        send(connection, PING);
      }
    }
    for (const [id, entry] of recent) if (entry.until <= at) recent.delete(id);
    for (const [id, until] of seen) if (until <= at) seen.delete(id);
    for (const [id, until] of ended) if (until <= at) ended.delete(id);
  }

  const endSessionHandler = (
    name: string,
    event: typeof OidcSessionEndedEvent | typeof UserSessionRevokedEvent | typeof UserSessionEvictedEvent,
  ) =>
    defineEventHandler({
      name,
      module: 'notifications',
      event: event as typeof UserSessionEvictedEvent,
      description:
        'Tells the realtime connections of the ended session (SessionEnded or SessionEvicted), then closes them without reconnect.',
      async handle({ payload }) {
        const reason = (payload as { reason?: string }).reason;
        const evicted = event === UserSessionEvictedEvent || reason === 'evicted';
        await hub.endSession(payload.sessionId, evicted ? 'SessionEvicted' : 'SessionEnded');
      },
    });

  const hub: RealtimeHub = {
    routes: [negotiate],
    upgrade: {
      name: 'realtime hub',
      matches: (path) => path === HUB_PATH,
      handle: handleUpgrade,
    },
    handlers: [
      endSessionHandler('notifications.realtime-end-oidc-session', OidcSessionEndedEvent),
      endSessionHandler('notifications.realtime-end-revoked-session', UserSessionRevokedEvent),
      endSessionHandler('notifications.realtime-end-evicted-session', UserSessionEvictedEvent),
      defineEventHandler({
        name: 'notifications.realtime-close-deactivated-user',
        module: 'notifications',
        event: UserDeactivatedEvent,
        description: 'Closes every realtime connection of a deactivated user, without reconnect.',
        handle: ({ payload }) => hub.closeUser(payload.userId, { reason: 'Your account was deactivated.' }),
      }),
      defineEventHandler({
        name: 'notifications.realtime-close-removed-member',
        module: 'notifications',
        event: MembershipRemovedEvent,
        description: 'Closes the realtime connections a removed member opened for that organization, without reconnect.',
        handle: ({ payload }) =>
          hub.closeUser(payload.userId, {
            organizationId: payload.organizationId,
            reason: 'Your membership of this organization ended.',
          }),
      }),
      defineEventHandler({
        name: 'notifications.realtime-close-suspended-member',
        module: 'notifications',
        event: MembershipSuspendedEvent,
        description: 'Closes the realtime connections a suspended member opened for that organization, without reconnect.',
        handle: ({ payload }) =>
          hub.closeUser(payload.userId, {
            organizationId: payload.organizationId,
            reason: 'Your membership of this organization was suspended.',
          }),
      }),
    ],
    jobs: [{ name: 'realtime hub keep-alive', intervalMs: 1000, run: async () => tick() }],
    async notificationCreated(notification) {
      const envelope = notificationEnvelope(notification, clock);
      recent.set(notification.id, { envelope, until: now() + REMEMBER_MS });
      await broadcast({ op: 'n', id: notification.id, u: notification.userId, o: notification.organizationId });
    },
    sendToUser: (userId, envelope, sendOptions) =>
      broadcast({ op: 'u', u: userId, e: envelope, ...(sendOptions?.organizationId ? { o: sendOptions.organizationId } : {}) }),
    sendToOrganization: (organizationId, envelope) => broadcast({ op: 't', o: organizationId, e: envelope }),
    endSession(sessionId, type) {
      if ((ended.get(sessionId) ?? 0) > now()) return Promise.resolve();
      // The two events of one end are often handled together: the second waits for the first's broadcast.
      const inFlight = ending.get(sessionId);
      if (inFlight) return inFlight;
      const sent = broadcast({ op: 'end', s: sessionId, t: type, at: clock.now().toISOString() })
        // Marked once sent (a failed broadcast rejects both callers, and the event bus retries them).
        .then(() => rememberEnded(sessionId))
        .finally(() => ending.delete(sessionId));
      ending.set(sessionId, sent);
      return sent;
    },
    closeUser: (userId, closeOptions) =>
      broadcast({
        op: 'close',
        u: userId,
        r: closeOptions.reason,
        ...(closeOptions.organizationId ? { o: closeOptions.organizationId } : {}),
        ...(closeOptions.allowReconnect ? { rc: true } : {}),
      }),
    connectionCount: () => connections.size,
    tick,
    async close() {
      if (closed) return;
      closed = true;
      unsubscribe();
      for (const connection of [...connections.values()]) closeConnection(connection, 'The server is shutting down.', true, 1001);
      // A server still loading is awaited; one that never loaded has nothing to close.
      const server = await wss?.catch(() => undefined);
      if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return hub;
}

/** The `NotificationCreated` envelope of a notification. */
export function notificationEnvelope(notification: RealtimeNotification, clock: Clock): RealtimeEnvelope {
  return {
    type: 'NotificationCreated',
    module: 'Notifications',
    payload: {
      id: notification.id,
      title: notification.title,
      message: notification.message,
      type: notification.type,
      actionUrl: notification.actionUrl,
      createdAt: notification.createdAt,
    },
    timestamp: clock.now().toISOString(),
  };
}

/**
 * The hub of a module set up by `createIdt`: signed with the server secret,
 * authenticating like the API, fanned out over the cache invalidation channel.
 *
 * @example
 * const hub = realtimeHubOf(ctx, (id) => notifications.find(id));
 */
export function realtimeHubOf(
  ctx: Pick<ModuleContext, 'secret' | 'clock' | 'logger' | 'verifier' | 'counter' | 'invalidator' | 'config' | 'authenticate'>,
  loadNotification?: (id: string) => Promise<RealtimeNotification | undefined>,
  limits?: Partial<RealtimeHubLimits>,
): RealtimeHub {
  return createRealtimeHub({
    secret: ctx.secret,
    clock: ctx.clock,
    logger: ctx.logger,
    verifier: ctx.verifier,
    counter: ctx.counter,
    channel: ctx.invalidator,
    environment: ctx.config.environment,
    authenticate: (request) => ctx.authenticate(request),
    ...(loadNotification ? { loadNotification } : {}),
    ...(limits ? { limits } : {}),
  });
}
