import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { refuseUpgrade } from '@idt/core';
import { nodeRequestInfo, toFetchRequest, writeFetchResponse } from '@idt/core/node';
import { type ApiProxyOptions, createApiProxy } from '../src/proxy/api.js';
import { createHubProxy, type HubProxy, type HubProxyOptions } from '../src/proxy/hub.js';
import type { BffSessions, CurrentSession, HeaderSource } from '../src/sessions/current.js';
import type { BffSession } from '../src/sessions/store.js';

export const SESSION_COOKIE = 'idt_bff';
export const CLEARING_COOKIES = [
  `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict`,
  `${SESSION_COOKIE}-csrf=; Max-Age=0; Path=/; Secure; SameSite=Strict`,
];

/** A test double of the session layer: one fixed session whose forced refresh mints a fresh token. */
export interface FakeSessions extends BffSessions {
  /** The session, or `null` once it ended. */
  session: BffSession | null;
  /** Forced refreshes so far. */
  refreshes: number;
  /** Calls of `current` so far. */
  calls: number;
  /** The next forced refresh is refused (the session ends). */
  failRefresh: boolean;
  /** `current` answers `Bff.UpstreamUnavailable` (the provider is unreachable for a due refresh). */
  providerDown: boolean;
  /** `Set-Cookie` values every successful `current` returns (a re-sealed cookie). */
  setCookie: string[];
  /** The `Cookie` header naming the session. */
  readonly cookie: string;
  /** Headers `current` was called with. */
  readonly seen: HeaderSource[];
}

/**
 * A {@link FakeSessions} holding `accessToken`; `mint` is called for each
 * forced refresh and its token replaces the session's.
 */
export function fakeSessions(accessToken: string, mint: () => Promise<string>): FakeSessions {
  const id = randomBytes(16).toString('base64url');
  const now = Date.now();
  const fake: FakeSessions = {
    session: {
      id,
      user: { sub: 'user-1', name: 'Ada', email: 'ada@example.com', orgId: null, orgName: null, roles: [] },
      sid: 'sid-1',
      accessToken,
      accessTokenExpiresAt: now + 900_000,
      refreshToken: 'refresh-1',
      idToken: null,
      csrfToken: randomBytes(16).toString('base64url'),
      createdAt: now,
      expiresAt: now + 86_400_000,
    },
    refreshes: 0,
    calls: 0,
    failRefresh: false,
    providerDown: false,
    setCookie: [],
    cookie: `${SESSION_COOKIE}=${id}`,
    seen: [],
    async current(headers, options) {
      fake.calls++;
      fake.seen.push(headers);
      const presented = cookieValue(headers, SESSION_COOKIE);
      if (presented === undefined || fake.session === null || presented !== fake.session.id) {
        return { session: null, code: 'Bff.SessionMissing', setCookie: presented === undefined ? [] : CLEARING_COOKIES };
      }
      if (fake.providerDown) return { session: null, code: 'Bff.UpstreamUnavailable', setCookie: [] };
      if (options?.forceRefresh) {
        fake.refreshes++;
        if (fake.failRefresh) {
          fake.session = null;
          return { session: null, code: 'Bff.SessionRefreshFailed', setCookie: CLEARING_COOKIES };
        }
        fake.session = { ...fake.session, accessToken: await mint(), accessTokenExpiresAt: Date.now() + 900_000 };
      }
      return { session: fake.session, setCookie: [...fake.setCookie] } satisfies CurrentSession;
    },
    csrfMatches(session, presented) {
      return typeof presented === 'string' && presented.length > 0 && presented === session.csrfToken;
    },
    clearCookies: () => CLEARING_COOKIES,
  };
  return fake;
}

function cookieValue(headers: HeaderSource, name: string): string | undefined {
  const raw = headers instanceof Headers ? headers.get('cookie') : headers.cookie;
  const header = Array.isArray(raw) ? raw.join('; ') : raw;
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

/** A server on a loopback port. */
export interface Listening {
  readonly server: Server;
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export async function listen(server: Server): Promise<Listening> {
  // Upgraded sockets are no longer the HTTP server's to close: track every socket so that close() never hangs.
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** A BFF host: `/api/*` through the API proxy and upgrades through the hub proxy, on node:http. */
export interface TestBff extends Listening {
  readonly hub: HubProxy;
}

export async function startBff(
  options: Omit<ApiProxyOptions, 'sessions'> & { sessions: BffSessions; hub?: Partial<HubProxyOptions> },
): Promise<TestBff> {
  const { hub: hubOptions, ...apiOptions } = options;
  const api = createApiProxy(apiOptions);
  const hub = createHubProxy({ apiBaseUrl: options.apiBaseUrl, sessions: options.sessions, ...hubOptions });
  const server = createServer(async (req, res) => {
    const response = await api(toFetchRequest(req), nodeRequestInfo(req, res));
    await writeFetchResponse(res, response);
  });
  server.on('upgrade', (req, socket, head) => {
    if (!hub.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
  });
  const listening = await listen(server);
  return {
    ...listening,
    hub,
    async close() {
      await hub.close();
      await listening.close();
    },
  };
}

/** A request as an upstream server received it. */
export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** An upstream that records every request and answers with `respond` (by default: the request as JSON). */
export interface EchoServer extends Listening {
  readonly received: Received[];
  respond: (received: Received, res: ServerResponse) => void | Promise<void>;
}

export async function startEcho(): Promise<EchoServer> {
  const received: Received[] = [];
  const echo = {
    received,
    respond(request: Received, res: ServerResponse) {
      res.writeHead(200, {
        'content-type': 'application/json',
        'set-cookie': 'upstream=1; Path=/',
        connection: 'keep-alive, x-hop',
        'x-hop': 'dropped',
        'keep-alive': 'timeout=99',
        'x-upstream': 'kept',
      });
      res.end(JSON.stringify(request));
    },
  } as EchoServer;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      received.push(entry);
      Promise.resolve(echo.respond(entry, res)).catch(() => res.destroy());
    });
  });
  Object.assign(echo, await listen(server));
  return echo;
}

/** A raw HTTP request with the path sent exactly as given (fetch would normalize dot segments). */
export function rawRequest(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path, method: options.method ?? 'GET', headers: options.headers ?? {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A port nothing listens on. */
export async function closedPort(): Promise<number> {
  const listening = await listen(createServer());
  await listening.close();
  return listening.port;
}
