import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { resolveRequestId } from '@idt/core';
import { requestUrl } from '@idt/core/node';
import { ProblemError, reasonPhrase, renderProblem, resolveTraceId } from '@idt/problem';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import type { BffSessions, CurrentSession } from '../sessions/current.js';
import { BFF_HUB_PATH, forwardedFor, parseApiBase, UPSTREAM_HUB_PATH } from './shared.js';

/** Options of {@link createHubProxy}. */
export interface HubProxyOptions {
  /** The API's base URL (`BFF_API_BASE_URL`); the hub is `${apiBaseUrl}/hubs/realtime`, as ws:// or wss://. */
  readonly apiBaseUrl: string;
  readonly sessions: BffSessions;
  /**
   * Page origins allowed besides the BFF's own (the origin the upgrade was
   * addressed to): a list, or a check per request. A missing or other Origin
   * is refused with 403.
   */
  readonly allowedOrigins?: readonly string[] | ((origin: string, request: IncomingMessage) => boolean);
  /** Honour `x-forwarded-proto`/`x-forwarded-host` for the BFF's own origin and keep the incoming `X-Forwarded-For`. */
  readonly trustProxy?: boolean;
  /** How long the hub has to accept the upstream WebSocket (default 10 s; 504 after). */
  readonly upstreamHandshakeTimeoutMs?: number;
  /** Largest message either side may send (default 1 MiB; the hub itself takes 32 KiB from clients). */
  readonly maxPayloadBytes?: number;
  /**
   * How often an open connection checks that its BFF session still exists
   * (default 60 s; 0 never): a signed-out session's connection is closed
   * with 1008, even while its access token is still valid upstream.
   */
  readonly sessionCheckIntervalMs?: number;
  /** Told about unexpected failures (the session layer throwing): the upgrade is refused with 500. */
  readonly onError?: (error: unknown) => void;
}

/** The realtime proxy of a BFF: the browser's WebSocket to `/api/hubs/realtime`, bridged to the hub with the session's token. */
export interface HubProxy {
  /**
   * Takes an upgrade of `/api/hubs/realtime` (answering it, or refusing it
   * with a plain HTTP status); `false` for any other path, for the host to answer.
   *
   * @example
   * server.on('upgrade', (req, socket, head) => {
   *   if (!hub.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
   * });
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Open bridged connections. */
  connectionCount(): number;
  /** Closes every bridged connection (1001 both ways) and refuses new upgrades with 503. */
  close(): Promise<void>;
}

/** A side that queued this much unsent data stops reading the other side until it drains. */
const HIGH_WATER_BYTES = 1024 * 1024;
const LOW_WATER_BYTES = 256 * 1024;
/** A Sec-WebSocket-Key: 16 random bytes in base64. */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;
/** How long {@link HubProxy.close} waits for a peer to answer the close frame. */
const CLOSE_GRACE_MS = 1000;
/** The most of an upstream refusal relayed to the browser. */
const MAX_RELAYED_REFUSAL_BYTES = 8 * 1024;

interface Bridge {
  readonly client: WebSocket;
  readonly upstream: WebSocket;
  timer?: NodeJS.Timeout;
}

/** An upstream socket that opened before the browser's was accepted: what it did meanwhile. */
interface OpenedUpstream {
  readonly kind: 'open';
  readonly ws: WebSocket;
  readonly early: Array<[RawData, boolean]>;
  earlyClose?: { code: number; reason: Buffer };
  readonly detach: () => void;
}

type UpstreamAttempt =
  | OpenedUpstream
  | { readonly kind: 'refused'; readonly status: number; readonly contentType?: string; readonly body: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'unavailable' };

/**
 * Creates the realtime proxy of a BFF. An upgrade of
 * `GET /api/hubs/realtime?id=<connectionToken>` (the connection token comes
 * from `POST /api/hubs/realtime/negotiate` through the API proxy) is:
 *
 * 1. refused with 403 unless `Origin` is the BFF's own origin (or allowed),
 * 2. refused with 401 without a session (the session cookie is read with
 *    `sessions.current`, which refreshes a token about to expire), 503 when
 *    that refresh could not reach the provider,
 * 3. bridged to `${apiBaseUrl}/hubs/realtime?id=…` opened with
 *    `Authorization: Bearer <access token>` — never the browser's Cookie. An
 *    upstream 401 forces one refresh and one retry; other refusals are
 *    relayed with their status (404/409 mean: negotiate again), an
 *    unreachable hub answers 503, a slow one 504.
 *
 * Messages pass both ways unchanged (text stays text, binary stays binary,
 * the SignalR 0x1E record separators untouched); a side that cannot keep up
 * pauses reading on the other. Each side's close closes the other with the
 * same code when it is a valid one to send (1005 as a bare close, an
 * abnormal 1006 as 1001).
 *
 * @example
 * const hub = createHubProxy({ apiBaseUrl: 'http://idt:8080', sessions });
 * server.on('upgrade', (req, socket, head) => {
 *   if (!hub.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
 * });
 */
export function createHubProxy(options: HubProxyOptions): HubProxy {
  const base = parseApiBase(options.apiBaseUrl);
  const wsOrigin = base.origin.replace(/^http/, 'ws');
  const { sessions } = options;
  const trustProxy = options.trustProxy ?? false;
  const handshakeTimeout = options.upstreamHandshakeTimeoutMs ?? 10_000;
  const maxPayload = options.maxPayloadBytes ?? 1024 * 1024;
  const checkEvery = options.sessionCheckIntervalMs ?? 60_000;
  const allowed = options.allowedOrigins;
  const allowedSet = new Set(Array.isArray(allowed) ? allowed.map(normalizeOrigin).filter(Boolean) : []);

  const wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload,
    // Accept what the hub accepted.
    handleProtocols: (_protocols, req) => chosenProtocol.get(req) ?? false,
  });
  const chosenProtocol = new WeakMap<IncomingMessage, string>();
  const acceptCookies = new WeakMap<IncomingMessage, readonly string[]>();
  wss.on('headers', (headers, req) => {
    for (const cookie of acceptCookies.get(req) ?? []) headers.push(`Set-Cookie: ${cookie}`);
  });
  const bridges = new Set<Bridge>();
  let closed = false;

  function originAllowed(origin: string | undefined, req: IncomingMessage): boolean {
    if (!origin) return false;
    const normalized = normalizeOrigin(origin);
    if (!normalized) return false;
    if (normalized === normalizeOrigin(requestUrl(req, trustProxy))) return true;
    if (typeof allowed === 'function') return allowed(normalized, req);
    return allowedSet.has(normalized);
  }

  function openUpstream(url: URL, token: string, req: IncomingMessage): Promise<UpstreamAttempt> {
    const target = new URL(`${wsOrigin}${base.path}${UPSTREAM_HUB_PATH}`);
    for (const [name, value] of url.searchParams) if (name !== 'access_token') target.searchParams.append(name, value);
    const protocols = (headerValue(req.headers['sec-websocket-protocol']) ?? '')
      .split(',')
      .map((protocol) => protocol.trim())
      .filter(Boolean);
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      'x-request-id': resolveRequestId(headerValue(req.headers['x-request-id']) ?? null),
    };
    const forwarded = forwardedFor(req.headers['x-forwarded-for'], req.socket.remoteAddress, trustProxy);
    if (forwarded) headers['x-forwarded-for'] = forwarded;
    const userAgent = headerValue(req.headers['user-agent']);
    if (userAgent) headers['user-agent'] = userAgent;

    return new Promise((resolve) => {
      let settled = false;
      const settle = (attempt: UpstreamAttempt) => {
        if (settled) return;
        settled = true;
        resolve(attempt);
      };
      const ws = new WebSocket(target, protocols, {
        headers,
        perMessageDeflate: false,
        handshakeTimeout,
        maxPayload,
        followRedirects: false,
      });
      ws.on('error', (error) => {
        settle(/timed out/i.test(error.message) ? { kind: 'timeout' } : { kind: 'unavailable' });
      });
      ws.once('unexpected-response', (request, response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = () => {
          const contentType = headerValue(response.headers['content-type']);
          settle({
            kind: 'refused',
            status: response.statusCode ?? 502,
            ...(contentType ? { contentType } : {}),
            body: Buffer.concat(chunks).toString('utf8'),
          });
          request.destroy();
        };
        response.on('data', (chunk: Buffer) => {
          if (size + chunk.length <= MAX_RELAYED_REFUSAL_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        response.once('end', finish);
        response.once('error', finish);
        response.once('close', finish);
      });
      ws.once('open', () => {
        // Keep what the hub sends before the browser's socket is accepted.
        const opened: OpenedUpstream = {
          kind: 'open',
          ws,
          early: [],
          detach: () => {
            ws.off('message', onEarlyMessage);
            ws.off('close', onEarlyClose);
          },
        };
        const onEarlyMessage = (data: RawData, isBinary: boolean) => opened.early.push([data, isBinary]);
        const onEarlyClose = (code: number, reason: Buffer) => {
          opened.earlyClose = { code, reason };
        };
        ws.on('message', onEarlyMessage);
        ws.on('close', onEarlyClose);
        settle(opened);
      });
    });
  }

  function refuse(
    socket: Duplex,
    req: IncomingMessage,
    status: number,
    content: { code: string; detail?: string } | { contentType?: string; body: string },
    setCookie: readonly string[] = [],
  ) {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    let body: string;
    let contentType: string | undefined;
    if ('code' in content) {
      const traceId = resolveTraceId(headerValue(req.headers.traceparent));
      const rendered = renderProblem(new ProblemError(content.code, content.detail), { environment: 'Production', traceId });
      if (rendered.body) {
        rendered.body.status = status;
        rendered.body.title = reasonPhrase(status);
      }
      body = rendered.body ? JSON.stringify(rendered.body) : '';
      contentType = rendered.headers['content-type'];
    } else {
      body = content.body;
      contentType = content.contentType;
    }
    const lines = [
      `HTTP/1.1 ${status} ${reasonPhrase(status)}`,
      'Connection: close',
      'Cache-Control: no-store',
      ...(contentType && body ? [`Content-Type: ${contentType}`] : []),
      `Content-Length: ${Buffer.byteLength(body)}`,
      ...setCookie.map((cookie) => `Set-Cookie: ${cookie}`),
    ];
    socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  }

  /** 401 for a missing or ended session (cookies cleared), 503 when the provider could not refresh a due token (session kept). */
  function noSession(socket: Duplex, req: IncomingMessage, current: Extract<CurrentSession, { session: null }>) {
    if (current.code === 'Bff.UpstreamUnavailable') {
      return refuse(socket, req, 503, { code: current.code }, current.setCookie);
    }
    const setCookie =
      current.code === 'Bff.SessionRefreshFailed' && current.setCookie.length === 0 ? sessions.clearCookies() : current.setCookie;
    refuse(socket, req, 401, { code: current.code }, setCookie);
  }

  async function handle(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    if (closed) return refuse(socket, req, 503, { code: 'Bff.UpstreamUnavailable', detail: 'The BFF is shutting down.' });
    if (
      req.method !== 'GET' ||
      headerValue(req.headers.upgrade)?.toLowerCase() !== 'websocket' ||
      !WEBSOCKET_KEY.test(headerValue(req.headers['sec-websocket-key']) ?? '') ||
      !['8', '13'].includes(headerValue(req.headers['sec-websocket-version']) ?? '')
    ) {
      // Checked before the hub is dialled: ws would refuse these itself, after the upstream socket was opened.
      return refuse(socket, req, 400, { code: 'Http.ClientError', detail: 'The realtime hub speaks WebSockets only.' });
    }
    if (!originAllowed(headerValue(req.headers.origin), req)) {
      return refuse(socket, req, 403, { code: 'Bff.OriginNotAllowed' });
    }
    let current = await sessions.current(req.headers);
    if (current.session === null) return noSession(socket, req, current);
    let setCookie = current.setCookie;

    let attempt = await openUpstream(url, current.session.accessToken, req);
    if (attempt.kind === 'refused' && attempt.status === 401) {
      current = await sessions.current(req.headers, { forceRefresh: true });
      if (current.session === null) return noSession(socket, req, current);
      setCookie = [...setCookie, ...current.setCookie];
      attempt = await openUpstream(url, current.session.accessToken, req);
    }
    switch (attempt.kind) {
      case 'refused':
        // A client error (404/409: negotiate again) is the browser's to see; anything else is the hub failing.
        return attempt.status >= 400 && attempt.status < 500
          ? refuse(socket, req, attempt.status, attempt, setCookie)
          : refuse(socket, req, 502, { code: 'Bff.UpstreamUnavailable' }, setCookie);
      case 'timeout':
        return refuse(socket, req, 504, { code: 'Bff.UpstreamTimeout' }, setCookie);
      case 'unavailable':
        return refuse(socket, req, 503, { code: 'Bff.UpstreamUnavailable' }, setCookie);
    }
    const upstream = attempt;
    if (closed || socket.destroyed || !socket.writable) {
      upstream.detach();
      upstream.ws.terminate();
      socket.destroy();
      return;
    }
    if (upstream.ws.protocol) chosenProtocol.set(req, upstream.ws.protocol);
    if (setCookie.length > 0) acceptCookies.set(req, setCookie);
    let bridged = false;
    socket.once('close', () => {
      if (bridged) return;
      upstream.detach();
      upstream.ws.terminate();
    });
    wss.handleUpgrade(req, socket, head, (client) => {
      bridged = true;
      bridge(client, upstream, req.headers);
    });
  }

  function bridge(client: WebSocket, opened: OpenedUpstream, headers: IncomingHttpHeaders) {
    const upstream = opened.ws;
    opened.detach();
    const entry: Bridge = { client, upstream };
    bridges.add(entry);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    const forget = () => {
      if (!bridges.delete(entry)) return;
      if (entry.timer) clearInterval(entry.timer);
    };
    client.on('close', (code, reason) => {
      forget();
      closeWith(upstream, code, reason);
    });
    upstream.on('close', (code, reason) => {
      forget();
      closeWith(client, code, reason);
    });
    pipe(client, upstream);
    pipe(upstream, client);
    for (const [data, isBinary] of opened.early) forward(upstream, client, data, isBinary);
    if (opened.earlyClose) {
      forget();
      closeWith(client, opened.earlyClose.code, opened.earlyClose.reason);
      return;
    }
    if (checkEvery > 0) {
      entry.timer = setInterval(() => {
        sessions.current(headers).then(
          (current) => {
            // A provider that cannot refresh right now ends nothing: only a gone session closes the connection.
            if (current.session === null && current.code !== 'Bff.UpstreamUnavailable' && bridges.has(entry)) {
              forget();
              client.close(1008, 'The session ended.');
              upstream.close(1000);
            }
          },
          () => undefined, // the store is unreachable: keep the connection, check again later
        );
      }, checkEvery);
      entry.timer.unref();
    }
  }

  return {
    upgrade(req, socket, head) {
      const url = new URL(req.url ?? '/', 'http://bff.invalid');
      if (url.pathname !== BFF_HUB_PATH) return false;
      socket.on('error', () => undefined);
      handle(req, socket, head, url).catch((error: unknown) => {
        options.onError?.(error);
        refuse(socket, req, 500, { code: 'Server.Error' });
      });
      return true;
    },
    connectionCount: () => bridges.size,
    async close() {
      closed = true;
      const closing = [...bridges].map(
        (entry) =>
          new Promise<void>((resolve) => {
            if (entry.client.readyState === WebSocket.CLOSED) return resolve();
            // A peer that does not answer the close frame is cut off after a second.
            const cutOff = setTimeout(() => {
              entry.client.terminate();
              entry.upstream.terminate();
            }, CLOSE_GRACE_MS);
            entry.client.once('close', () => {
              clearTimeout(cutOff);
              resolve();
            });
            closeWith(entry.client, 1001, Buffer.from('The BFF is shutting down.'));
            closeWith(entry.upstream, 1001, Buffer.alloc(0));
          }),
      );
      await Promise.all(closing);
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** Forwards every message of `from` to `to`, pausing `from` while `to` has too much queued. */
function pipe(from: WebSocket, to: WebSocket) {
  from.on('message', (data: RawData, isBinary: boolean) => forward(from, to, data, isBinary));
}

function forward(from: WebSocket, to: WebSocket, data: RawData, isBinary: boolean) {
  if (to.readyState !== WebSocket.OPEN) return;
  to.send(data, { binary: isBinary, compress: false }, () => {
    if (from.isPaused && to.bufferedAmount <= LOW_WATER_BYTES) from.resume();
  });
  if (!from.isPaused && to.bufferedAmount > HIGH_WATER_BYTES) from.pause();
}

/** Closes `ws` the way its peer closed: the same code when it may be sent, else a bare close (1005) or 1001 (1006). */
function closeWith(ws: WebSocket, code: number, reason: Buffer) {
  if (ws.readyState === WebSocket.CLOSING || ws.readyState === WebSocket.CLOSED) return;
  if (ws.isPaused) ws.resume();
  if (ws.readyState === WebSocket.CONNECTING) {
    ws.terminate();
    return;
  }
  if (isSendableCloseCode(code)) ws.close(code, reason);
  else if (code === 1005) ws.close();
  else ws.close(1001, 'The other side closed abnormally.');
}

/** Close codes an endpoint may send (RFC 6455 7.4; what `ws` accepts). */
function isSendableCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
}

function normalizeOrigin(origin: string): string {
  try {
    const parsed = new URL(origin);
    return parsed.origin === 'null' ? '' : parsed.origin;
  } catch {
    return '';
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
