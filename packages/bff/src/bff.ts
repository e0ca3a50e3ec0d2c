import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  type Clock,
  createLogIngestHandler,
  type Env,
  type Logger,
  type LogSink,
  logSinkFromEnv,
  resolveRequestId,
  silentLogger,
  systemClock,
} from '@idt/core';
import { clientSignal, toFetchRequest, writeFetchResponse } from '@idt/core/node';
import { errorResponse, problemResponse } from './auth/http.js';
import { connectProvider } from './auth/provider.js';
import { createAuthRoutes } from './auth/routes.js';
import { type BffConfig, type BffOptions, bffConfigFromEnv, isBffConfig, resolveBffConfig } from './config.js';
import { createBffCookies } from './cookies/jar.js';
import { type ApiProxyRequestInfo, createApiProxy } from './proxy/api.js';
import { createHubProxy, type HubProxyOptions } from './proxy/hub.js';
import type { BffSessions } from './sessions/current.js';
import { createMemoryBffSessionStore } from './sessions/memory.js';
import { createBffSessions } from './sessions/sessions.js';
import type { BffSessionStore } from './sessions/store.js';

/** What a store factory gets: the resolved configuration (its cookie key ring seals tokens at rest) and the clock. */
export interface BffStoreContext {
  readonly config: BffConfig;
  readonly clock: Clock;
}

/** Options of {@link createBff}. */
export interface CreateBffOptions {
  /** The configuration, resolved or as options; read from {@link env} when absent. */
  readonly config?: BffConfig | BffOptions;
  /** Environment variables to read the configuration from (see `bffConfigFromEnv`); `process.env` when neither is given. */
  readonly env?: Env;
  /**
   * Where sessions live: a store, or a function making one from the
   * configuration (the knex store needs its key ring). The default is a
   * memory store, which loses sessions on restart and cannot be shared by
   * several instances: production deployments pass the knex store.
   *
   * @example
   * store: ({ config }) => createKnexBffSessionStore({ db, secrets: config.cookie.keyring })
   */
  readonly store?: BffSessionStore | ((context: BffStoreContext) => BffSessionStore);
  /** The clock session lifetimes, token expiry and cookie seals are measured by. */
  readonly clock?: Clock;
  /** What the BFF calls the provider and the API with (the global `fetch` by default). */
  readonly fetch?: typeof fetch;
  readonly logger?: Logger;
  /**
   * The BFF runs behind a reverse proxy it trusts: `x-forwarded-proto` and
   * `x-forwarded-host` make the request URL, and the incoming
   * `X-Forwarded-For` is passed on to the API.
   */
  readonly trustProxy?: boolean;
  /** Page origins the realtime proxy accepts besides the BFF's own. */
  readonly allowedOrigins?: HubProxyOptions['allowedOrigins'];
  /** How often expired sessions are deleted from the store, in milliseconds (one hour; 0 never). */
  readonly pruneIntervalMs?: number;
  /**
   * Where `POST /bff/logs` sends the pages' log events: by default OTLP/HTTP
   * JSON to `OTEL_EXPORTER_OTLP_ENDPOINT` when the environment sets it, else
   * JSON lines on standard output.
   */
  readonly logSink?: LogSink;
}

/** A running BFF: mount {@link fetch} (Fetch hosts) or {@link handler} (node:http, Express) for `/bff/*` and `/api/*`. */
export interface Bff {
  readonly config: BffConfig;
  /** The session layer, for a host's own routes (e.g. server-rendered pages that call the API). */
  readonly sessions: BffSessions;
  readonly store: BffSessionStore;
  /**
   * Answers `/bff/*` and `/api/*`; anything else is a 404 problem. `info`
   * carries the peer address (appended to `X-Forwarded-For` upstream) and
   * the browser's disconnect signal, when the host knows them.
   */
  fetch(request: Request, info?: ApiProxyRequestInfo): Promise<Response>;
  /** The same as a node:http handler. */
  handler(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /**
   * Takes a WebSocket upgrade of `/api/hubs/realtime` (the realtime hub,
   * bridged with the session's token); `false` for any other path.
   *
   * @example
   * server.on('upgrade', (req, socket, head) => {
   *   if (!bff.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
   * });
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Closes realtime connections and waits for background work (token revocations at logout). The store is the host's to close. */
  close(): Promise<void>;
}

const API_PREFIX = '/api';
const LOGS_PATH = '/bff/logs';

/**
 * Creates a backend-for-frontend (SPEC 5.4): discovers the provider (its
 * advertised issuer must equal the configured one), then serves
 *
 * - `GET /bff/login`, `GET /bff/callback`, `GET /bff/user`, `POST /bff/logout`,
 *   `GET /bff/frontchannel-logout`, `POST /bff/backchannel-logout`;
 * - `POST /bff/logs`: the pages' browser log events (CSRF-checked with a session);
 * - `/api/*`: the API proxy, which attaches the session's access token.
 *
 * @throws ConfigError when the configuration is invalid or the provider advertises another issuer.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { createBff } from '@idt/bff';
 * import { bffMigrations, createKnexBffSessionStore } from '@idt/bff/knex';
 *
 * await runMigrations(db, [bffMigrations]);
 * const bff = await createBff({
 *   env: process.env,
 *   store: ({ config }) => createKnexBffSessionStore({ db, secrets: config.cookie.keyring }),
 * });
 * createServer((req, res) => {
 *   if (req.url?.startsWith('/bff/') || req.url?.startsWith('/api/')) return void bff.handler(req, res);
 *   serveDashboard(req, res);
 * }).listen(3000);
 */
export async function createBff(options: CreateBffOptions = {}): Promise<Bff> {
  const config = options.config
    ? isBffConfig(options.config)
      ? options.config
      : resolveBffConfig(options.config)
    : bffConfigFromEnv(options.env ?? process.env);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  let store: BffSessionStore;
  if (typeof options.store === 'function') store = options.store({ config, clock });
  else if (options.store) store = options.store;
  else {
    store = createMemoryBffSessionStore();
    logger.warn('bff.memory_session_store', {
      detail: 'Sessions are kept in memory: they end on restart and are not shared between instances; pass a knex store',
    });
  }

  const provider = await connectProvider(config, options.fetch ? { fetch: options.fetch } : {});
  const cookies = createBffCookies(config, clock);
  const sessions = createBffSessions({
    store,
    cookies,
    refresher: provider,
    sessionTtlSeconds: config.sessionTtlSeconds,
    clock,
    logger,
  });
  const pending = new Set<Promise<unknown>>();
  const track = (task: Promise<unknown>) => {
    pending.add(task);
    void task.finally(() => pending.delete(task));
  };
  const pruneIntervalMs = options.pruneIntervalMs ?? 3_600_000;
  const pruner =
    pruneIntervalMs > 0
      ? setInterval(() => {
          track(
            store.prune(clock.now().getTime()).catch((error: unknown) => {
              logger.warn('bff.prune_failed', { error });
            }),
          );
        }, pruneIntervalMs).unref()
      : undefined;
  const routes = createAuthRoutes({ config, provider, sessions, store, cookies, clock, logger, track });
  const trustProxy = options.trustProxy ?? false;
  const api = createApiProxy({
    apiBaseUrl: config.apiBaseUrl,
    sessions,
    trustProxy,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const hub = createHubProxy({
    apiBaseUrl: config.apiBaseUrl,
    sessions,
    trustProxy,
    ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
  });

  const logSink = options.logSink ?? logSinkFromEnv(options.env ?? process.env, { logger });
  const ingest = createLogIngestHandler({
    service: 'idt-bff',
    clock,
    trustForwardedProto: trustProxy,
    sink: logSink,
    logger,
    csrfCode: 'Bff.CsrfInvalid',
  });

  /**
   * `POST /bff/logs` (SPEC 4.10): anonymous pages may log; with a session the
   * batch must carry its CSRF token (header, or `csrfToken` in a beacon's
   * body), and events are stamped with its user and organization. Every
   * answer, each refusal included (405 and the CSRF 403 too), is the shared
   * ingest's: the same problem documents, `reason` included, as the sign-in
   * host's `POST /logs`.
   */
  async function logs(request: Request, info?: ApiProxyRequestInfo): Promise<Response> {
    const requestId = resolveRequestId(request.headers.get('x-request-id'));
    // Read as stored: a log beacon needs the session's user and CSRF token, never a token refresh.
    const current = request.method === 'POST' ? await sessions.peek(request.headers) : undefined;
    const session = current?.session ?? null;
    const response = await ingest(request, {
      clientIp: info?.remoteAddress ?? 'unknown',
      requestId,
      userId: session?.user.sub ?? null,
      tenantId: session?.user.orgId ?? null,
      ...(session
        ? { authorize: (batch, req) => sessions.csrfMatches(session, req.headers.get('x-csrf-token') ?? batch.csrfToken) }
        : {}),
    });
    response.headers.set('x-request-id', requestId);
    return response;
  }

  async function handle(request: Request, info?: ApiProxyRequestInfo): Promise<Response> {
    try {
      const { pathname } = new URL(request.url);
      if (pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`)) return await api(request, info);
      if (pathname === LOGS_PATH) return await logs(request, info);
      const route = routes[pathname];
      if (route) return await route(request);
      return problemResponse(request, 'Http.NotFound');
    } catch (error) {
      logger.error('bff.request_failed', { error });
      return errorResponse(request, error);
    }
  }

  return {
    config,
    sessions,
    store,
    fetch: handle,
    async handler(req, res) {
      try {
        const info = { remoteAddress: req.socket.remoteAddress ?? 'unknown', signal: clientSignal(res) };
        await writeFetchResponse(res, await handle(toFetchRequest(req, trustProxy), info));
      } catch (error) {
        logger.error('bff.response_failed', { error });
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('Internal Server Error');
        } else {
          res.destroy(error as Error);
        }
      }
    },
    upgrade: (req, socket, head) => hub.upgrade(req, socket, head),
    async close() {
      if (pruner) clearInterval(pruner);
      await hub.close();
      await Promise.allSettled([...pending, logSink.close?.()]);
    },
  };
}
