import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Knex } from 'knex';
import { resolveAuditSettings } from './audit/context.js';
import { AuditEventRecorded } from './audit/events.js';
import { createKnexAuditStore } from './audit/knex-store.js';
import { type AuditTrail, createAuditTrail } from './audit/trail.js';
import { createAuthenticator } from './auth/authenticator.js';
import { createJwtVerifier } from './auth/jwt.js';
import type { Authenticator, Principal } from './auth/principal.js';
import { createCacheInvalidator } from './cache/invalidator.js';
import { type Clock, systemClock } from './clock.js';
import { ConfigError, type IdtConfig, type IdtConfigOverrides, loadConfig } from './config/config.js';
import { coreMigrations } from './db/core-migrations.js';
import { createDatabase, sqliteFilename } from './db/database.js';
import {
  assertMigrated,
  emptyDatabaseStatus,
  type MigrationSet,
  orderMigrationSets,
  PendingMigrationsError,
  runMigrations,
} from './db/migrations.js';
import { createAsyncApiRoutes } from './events/asyncapi.js';
import { createEventBus, type EventBus } from './events/bus.js';
import { createApiDocsRoutes } from './http/api-docs.js';
import { createHttpApp, type HttpApp, type RequestGate, type RequestInfo } from './http/app.js';
import { createHealthRoutes } from './http/health.js';
import type { RequestHead } from './http/light.js';
import { runNodeHandler } from './http/node-bridge.js';
import { createIdtNodeHandler, type IdtNodeHandler } from './http/node-entry.js';
import { strictTransportSecurityFor } from './http/responses.js';
import type { Route } from './http/route.js';
import { resolveKeyEncryptionSecret } from './keys/secret.js';
import { createKnexSigningKeyStore, publicJwks, type SigningKeyStore } from './keys/store.js';
import { createLogger, type Logger } from './logger.js';
import type { Mailer } from './mail/mailer.js';
import {
  type AnyIdtModule,
  type Env,
  type ModuleBaseContext,
  type ModuleInstance,
  type ModuleJob,
  type ModuleSurface,
  type ModuleUpgrade,
  orderModules,
  type ServicesMap,
} from './module.js';
import { createRateLimiter } from './rate-limit/rate-limiter.js';
import { createWindowCounter } from './rate-limit/window-counter.js';

/** How often expired rate-limit counters are deleted. */
const RATE_LIMIT_PRUNE_INTERVAL_MS = 10 * 60_000;

/** How long one request, upload body included, may take before `listen`'s server gives up on it. */
export const UPLOAD_REQUEST_TIMEOUT_MS = 3_600_000;

/** Options of {@link createIdt}. */
export interface CreateIdtOptions<Modules extends readonly AnyIdtModule[]> {
  /** The modules to compose, e.g. `[identity(), oidc()]`; order does not matter. */
  readonly modules: Modules;
  /**
   * The database: a URL (`sqlite:./data/idt.sqlite`, `postgres://…`) or an
   * open knex instance (which `close()` leaves open). Defaults to the
   * configuration's `IDT_DATABASE_URL`.
   */
  readonly database?: string | Knex;
  /**
   * The public base URL, mount path included: `https://id.example.com` or
   * `http://localhost:3000/idt` for a host that mounts idt under `/idt`. It is
   * the OpenID issuer. Defaults to `IDT_ISSUER` + `IDT_PATH_PREFIX`.
   */
  readonly baseUrl?: string;
  /** A resolved configuration; read from {@link env} (with {@link config} overrides) when absent. */
  readonly resolvedConfig?: IdtConfig;
  /** Settings over the environment's (see `docs/configuration.md`). */
  readonly config?: IdtConfigOverrides;
  /** Where settings are read from; `process.env` by default. */
  readonly env?: Env;
  /** The clock every policy reads (expiry, leeway, lockout, rate windows); the system clock by default. */
  readonly clock?: Clock;
  /** Outgoing mail; `.eml` files under the data directory, or SMTP per `IDT_SMTP_URL`, by default. */
  readonly mailer?: Mailer;
  readonly logger?: Logger;
  /**
   * `GET /openapi/v1.json` and, when `@scalar/api-reference` is installed,
   * `GET /scalar`; the AsyncAPI document in Development. On by default.
   */
  readonly docs?: boolean | { readonly title?: string; readonly description?: string };
  /**
   * What to do about pending migrations: `'check'` (default outside Testing)
   * refuses to start with a {@link PendingMigrationsError} naming `'run'` and
   * `npx idt migrate`, and opens nothing it would have to create (a SQLite
   * file that does not exist); `'run'` applies them; `'skip'` (default in
   * Testing) does nothing.
   */
  readonly migrations?: 'check' | 'run' | 'skip';
}

/** A composed idt deployment: mount {@link fetch} or {@link handler} in any host. */
export interface Idt<Modules extends readonly AnyIdtModule[] = readonly AnyIdtModule[]> {
  readonly config: IdtConfig;
  readonly db: Knex;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly mailer: Mailer;
  /** The modules in set-up order. */
  readonly modules: readonly AnyIdtModule[];
  /** Every migration set of the composition (core's and each module's). */
  readonly migrationSets: readonly MigrationSet[];
  /** The typed services of each module, keyed by module id. */
  readonly services: ServicesMap<Modules>;
  /** The shared infrastructure: event bus, audit trail, signing keys, token verifier. */
  readonly infrastructure: Pick<ModuleBaseContext, 'events' | 'audit' | 'keys' | 'verifier' | 'invalidator' | 'counter'>;
  /** The Fetch-standard API (routes only; {@link fetch} also serves the module surfaces). */
  readonly app: HttpApp;
  /**
   * Every surface as a Fetch handler: API, discovery, JWKS, `/connect/*`, the
   * sign-in pages and their assets, the setup gate, docs. For Hono, Bun,
   * Deno and Next.js route handlers.
   */
  fetch(request: Request, info?: RequestInfo): Promise<Response>;
  /**
   * Every surface as a node:http `(req, res)` handler, also under an Express
   * sub-mount (`app.use('/idt', idt.handler)`) and with bodies a framework
   * already parsed.
   */
  readonly handler: IdtNodeHandler;
  /**
   * Routes a node:http `upgrade` event (the realtime hub's WebSockets) to the
   * module that takes its path. Returns `false` when none does: the caller
   * answers then, e.g. with {@link refuseUpgrade}. `listen` wires it itself.
   *
   * @example
   * server.on('upgrade', (req, socket, head) => {
   *   if (!idt.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
   * });
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Starts background work (event delivery, jobs). Idempotent; `listen` calls it. */
  start(): void;
  /** Runs every job once now (or the one named), e.g. after advancing a manual clock in a test. */
  runJobs(name?: string): Promise<void>;
  /** Applies pending migrations of the composition. */
  migrate(): Promise<void>;
  /** New ES256 and RS256 signing keys sign from now on; the old ones keep verifying until their retention ends. */
  rotateSigningKeys(): Promise<void>;
  /** Listens on node:http (and starts background work); port 0 picks a free port. Resolves with the bound URL. */
  listen(port?: number, host?: string): Promise<{ url: string; server: Server }>;
  /** Stops listening and background work; closes the database when it opened it. */
  close(): Promise<void>;
}

/**
 * Composes idt modules into one deployment with a Fetch handler and a node
 * handler.
 *
 * @throws ConfigError listing every invalid setting of the core and of each module.
 * @throws PendingMigrationsError when migrations are pending and `migrations` is `'check'`: its
 *   message is one line naming both fixes (`migrations: 'run'`, `npx idt migrate --config …`).
 *
 * @example
 * import { createIdt } from '@idt/core';
 * import { identity } from '@idt/identity';
 * import { oidc } from '@idt/oidc';
 *
 * const idt = await createIdt({ database: 'sqlite:./data/idt.sqlite', modules: [identity(), oidc()], migrations: 'run' });
 * await idt.listen(8080);
 */
export async function createIdt<const Modules extends readonly AnyIdtModule[]>(
  options: CreateIdtOptions<Modules>,
): Promise<Idt<Modules>> {
  const env = options.env ?? process.env;
  const baseOverrides = options.baseUrl ? splitBaseUrl(options.baseUrl) : {};
  const config =
    options.resolvedConfig ??
    loadConfig(
      env,
      {
        ...baseOverrides,
        ...(typeof options.database === 'string' ? { databaseUrl: options.database } : {}),
        ...options.config,
      },
      { hasMailer: options.mailer !== undefined },
    );
  const modules = orderModules(options.modules);

  // Every module's settings, problems of all modules reported at once.
  const problems: string[] = [];
  const settings = new Map<string, unknown>();
  for (const module of modules) {
    if (!module.settings) continue;
    try {
      settings.set(module.id, module.settings.resolve(env, config));
    } catch (error) {
      if (error instanceof ConfigError) problems.push(...error.problems);
      else throw error;
    }
  }
  let auditSettings: ReturnType<typeof resolveAuditSettings> = { retentionDays: 365 };
  try {
    auditSettings = resolveAuditSettings(env);
  } catch (error) {
    if (error instanceof ConfigError) problems.push(...error.problems);
    else throw error;
  }
  if (problems.length) throw new ConfigError(problems);

  const migrationSets = migrationSetsOf(modules);
  // A knex instance is a function, not an object: anything but a URL (or nothing) is the host's own pool.
  const hostDb = typeof options.database === 'string' || options.database === undefined ? undefined : options.database;
  const ownsDb = hostDb === undefined;
  const migrationPolicy = options.migrations ?? (config.environment === 'Testing' ? 'skip' : 'check');
  // A SQLite file that does not exist has every migration pending: refuse before opening it, which
  // would create it (and its directory), so that a start that fails leaves nothing behind.
  const sqliteFile = ownsDb ? sqliteFilename(config.databaseUrl) : undefined;
  if (migrationPolicy === 'check' && sqliteFile !== undefined && !existsSync(sqliteFile)) {
    throw new PendingMigrationsError(emptyDatabaseStatus(migrationSets));
  }
  const db = hostDb ?? createDatabase(config.databaseUrl);
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) {
      await close().catch(() => undefined);
    }
  };
  if (ownsDb) closers.push(() => db.destroy());

  try {
    if (migrationPolicy === 'run') await runMigrations(db, migrationSets);
    else if (migrationPolicy === 'check') await assertMigrated(db, migrationSets);

    const clock = options.clock ?? systemClock;
    const logger = options.logger ?? createLogger({ level: config.logLevel, fields: { service: 'idt' } });
    const secret = resolveKeyEncryptionSecret(config);
    const mailer = options.mailer ?? (await defaultMailer(config, logger));
    const counter = createWindowCounter({ db, clock });
    const keys: SigningKeyStore = createKnexSigningKeyStore({ db, secret });
    await keys.ensureActiveKeys();
    const verifier = createJwtVerifier({
      keys: async () => publicJwks(await keys.listKeys()).keys,
      issuer: config.publicBaseUrl,
      audience: config.publicBaseUrl,
      clock,
    });
    const invalidator = createCacheInvalidator({ db, logger, clock });
    await invalidator.start();
    closers.push(() => invalidator.close());
    const events: EventBus = createEventBus({ db, logger, clock });
    closers.push(() => events.stop());
    // Unregistered actions throw outside Production (a typo is caught by the tests), and are recorded with a warning in it.
    const audit: AuditTrail = createAuditTrail({
      store: createKnexAuditStore(db),
      clock,
      logger,
      outbox: events,
      strict: config.environment !== 'Production',
      retentionDays: auditSettings.retentionDays,
    });
    events.register(AuditEventRecorded);
    // Rate limiting is off in Development (SPEC 8.1).
    const rateLimiter =
      config.environment === 'Development' ? undefined : createRateLimiter({ db, settings: config.rateLimits, clock });
    const base: ModuleBaseContext = {
      db,
      config,
      env,
      clock,
      logger,
      mailer,
      secret,
      events,
      audit,
      invalidator,
      counter,
      keys,
      verifier,
      ...(rateLimiter ? { rateLimiter } : {}),
    };

    const capabilities = new Map<string, unknown>();
    for (const module of modules) {
      for (const [name, build] of Object.entries(module.provides ?? {})) capabilities.set(name, build(base));
    }

    // Built once every module is set up; modules reach it at request time through ctx.authenticate.
    let authenticator: Authenticator | undefined;
    const authenticate = async (request: RequestHead): Promise<Principal | null> =>
      authenticator ? ((await authenticator.authenticate(request, { clientIp: 'unknown' }))?.principal ?? null) : null;
    const instances: Array<{ module: AnyIdtModule; instance: ModuleInstance }> = [];
    const services: Record<string, unknown> = {};
    for (const module of modules) {
      const instance = await module.setup({
        ...base,
        settings: settings.get(module.id),
        module<T>(id: string): T {
          if (!(id in services)) throw new Error(`Module "${module.id}" asked for "${id}", which is not set up before it`);
          return services[id] as T;
        },
        has: (id) => modules.some((candidate) => candidate.id === id),
        capability: <T>(name: string) => capabilities.get(name) as T | undefined,
        authenticate,
      });
      instances.push({ module, instance });
      services[module.id] = instance.services;
      if (instance.close) closers.push(() => (instance.close as () => Promise<void>)());
    }

    for (const { instance } of instances) for (const event of instance.events ?? []) events.register(event);
    for (const { instance } of instances) for (const handler of instance.handlers ?? []) events.subscribe(handler);

    const routes: Route[] = [
      ...createHealthRoutes([{ name: 'database', check: async () => void (await db.raw('select 1')) }]),
      ...instances.flatMap(({ instance }) => instance.routes ?? []),
    ];
    if (options.docs !== false) {
      const docs = typeof options.docs === 'object' ? options.docs : {};
      routes.push(
        ...createApiDocsRoutes({
          routes: () => routes,
          serverUrl: config.publicBaseUrl,
          pathPrefix: config.pathPrefix,
          title: docs.title ?? 'idt API',
          description: docs.description ?? 'The identity and tenant API of idt.',
        }),
      );
      if (config.environment === 'Development') {
        routes.push(
          ...createAsyncApiRoutes({
            catalog: () => events.catalog(),
            serverUrl: config.publicBaseUrl,
            pathPrefix: config.pathPrefix,
          }),
        );
      }
    }

    const authentication = instances.find(({ instance }) => instance.authentication)?.instance.authentication;
    const origins = [...new Set([new URL(config.authUrl).origin, new URL(config.publicBaseUrl).origin])];
    authenticator = authentication
      ? createAuthenticator({
          verifier,
          resolver: authentication.resolver,
          ...(authentication.sessionCookieName
            ? { sessionCookie: { name: authentication.sessionCookieName, allowedOrigins: origins } }
            : {}),
        })
      : undefined;
    const gates: RequestGate[] = instances.flatMap(({ instance }) => instance.gates ?? []);
    const app = createHttpApp({
      environment: config.environment,
      publicBaseUrl: config.publicBaseUrl,
      pathPrefix: config.pathPrefix,
      trustProxy: config.trustProxy,
      routes,
      gates,
      ...(rateLimiter ? { rateLimiter } : {}),
      ...(authenticator ? { authenticator } : {}),
      logger,
      knownPath: (path) => instances.some(({ instance }) => instance.surfaces?.some((surface) => surface.matches(path))),
    });

    const surfaces: ModuleSurface[] = instances.flatMap(({ instance }) => instance.surfaces ?? []);
    const upgrades: ModuleUpgrade[] = instances.flatMap(({ instance }) => instance.upgrades ?? []);
    const prefix = config.pathPrefix;
    const prefixSlash = `${prefix}/`;
    const pathOf = (pathname: string): string | undefined => {
      if (prefix && pathname !== prefix && !pathname.startsWith(prefixSlash)) return undefined;
      return pathname.slice(prefix.length) || '/';
    };
    const NONE: readonly never[] = Object.freeze([]);
    // Every request asks: a loop that allocates only when a surface matches.
    const matching = <T>(
      pathname: string,
      candidates: readonly ModuleSurface[],
      pick: (surface: ModuleSurface) => T | undefined,
    ): readonly T[] => {
      if (!candidates.length) return NONE;
      const path = pathOf(pathname);
      if (path === undefined) return NONE;
      let found: T[] | undefined;
      for (const surface of candidates) {
        const picked = surface.matches(path) ? pick(surface) : undefined;
        if (picked === undefined) continue;
        if (found) found.push(picked);
        else found = [picked];
      }
      return found ?? NONE;
    };
    const surfaceFor = (pathname: string): readonly ModuleSurface[] => matching(pathname, surfaces, (surface) => surface);
    const nodeSurfaces = surfaces.filter((surface) => surface.node);
    const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
      if (!upgrades.length) return false;
      const target = req.url ?? '/';
      const query = target.indexOf('?');
      const path = pathOf(query < 0 ? target : target.slice(0, query));
      const taker = path === undefined ? undefined : upgrades.find((candidate) => candidate.matches(path));
      if (!taker) return false;
      Promise.resolve()
        .then(() => taker.handle(req, socket, head))
        .catch((error: unknown) => {
          logger.error('upgrade handler failed', { upgrade: taker.name, error });
          socket.destroy();
        });
      return true;
    };

    const hsts = strictTransportSecurityFor(config.publicBaseUrl);
    async function serve(request: Request, info: RequestInfo = {}): Promise<Response> {
      const matched = surfaces.length ? surfaceFor(new URL(request.url).pathname) : NONE;
      for (const surface of matched) {
        const answered = surface.fetch
          ? await surface.fetch(request, info)
          : surface.node
            ? await runNodeHandler(surface.node, request, info)
            : undefined;
        if (answered) return hsts ? withHeader(answered, 'strict-transport-security', hsts) : answered;
      }
      return app.fetch(request, info);
    }

    // Before any cache is consulted: another process's changes (the CLI, another instance) take effect on
    // this very request. One `PRAGMA data_version` on SQLite; nothing on Postgres, where NOTIFY arrives by itself.
    async function fetchHandler(request: Request, info?: RequestInfo): Promise<Response> {
      await invalidator.freshen();
      return serve(request, info);
    }

    const nodeHandler = createIdtNodeHandler({
      app,
      trustProxy: config.trustProxy,
      surfaces: (pathname) => matching(pathname, nodeSurfaces, (surface) => surface.node),
      fetch: serve,
      logger,
    });
    const handler: IdtNodeHandler = async (req, res, next) => {
      const freshening = invalidator.freshen();
      if (freshening) await freshening;
      return nodeHandler(req, res, next);
    };

    const jobs: ModuleJob[] = [
      ...instances.flatMap(({ instance }) => instance.jobs ?? []),
      { name: 'prune signing keys', intervalMs: 3_600_000, run: () => keys.prune() },
      { name: 'prune dispatched events', intervalMs: 3_600_000, run: () => events.prune(7 * 86_400_000) },
      { name: 'prune audit events', intervalMs: 3_600_000, run: () => audit.prune() },
      ...(rateLimiter
        ? [{ name: 'prune rate-limit counters', intervalMs: RATE_LIMIT_PRUNE_INTERVAL_MS, run: () => rateLimiter.prune() }]
        : []),
    ];
    const timers: NodeJS.Timeout[] = [];
    closers.push(async () => {
      for (const timer of timers.splice(0)) clearInterval(timer);
    });
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      events.start();
      for (const job of jobs) {
        const timer = setInterval(() => {
          job.run().catch((error: unknown) => logger.warn(`background job failed: ${job.name}`, { error }));
        }, job.intervalMs);
        timer.unref();
        timers.push(timer);
      }
    };

    let server: Server | undefined;
    const idt: Idt<Modules> = {
      config,
      db,
      logger,
      clock,
      mailer,
      modules,
      migrationSets,
      services: services as ServicesMap<Modules>,
      infrastructure: { events, audit, keys, verifier, invalidator, counter },
      app,
      fetch: fetchHandler,
      handler,
      upgrade,
      start,
      async runJobs(name) {
        for (const job of jobs) if (name === undefined || job.name === name) await job.run();
      },
      migrate: () => runMigrations(db, migrationSets).then(() => undefined),
      async rotateSigningKeys() {
        await keys.rotate('ES256');
        await keys.rotate('RS256');
        for (const { instance } of instances) await instance.onSigningKeysRotated?.();
        verifier.reset();
      },
      listen(port = config.port, host = config.host) {
        return new Promise((resolve, reject) => {
          // requestTimeout bounds a whole request, body included: Node's default (300 s) would cut off a
          // 100 MiB upload on a link slower than ~350 KB/s, so uploads get an hour. headersTimeout stays 60 s.
          const created = createServer(
            { keepAliveTimeout: 65_000, requestTimeout: UPLOAD_REQUEST_TIMEOUT_MS },
            (req: IncomingMessage, res: ServerResponse) => void handler(req, res),
          );
          created.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
            if (!upgrade(req, socket, head)) refuseUpgrade(socket, 404);
          });
          created.once('error', reject);
          created.listen(port, host, () => {
            created.off('error', reject);
            server = created;
            start();
            const address = created.address() as AddressInfo;
            const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
            resolve({ url: `http://${shownHost}:${address.port}${prefix}`, server: created });
          });
        });
      },
      async close() {
        if (server) {
          const closing = server;
          server = undefined;
          await new Promise<void>((resolve) => {
            closing.close(() => resolve());
            closing.closeAllConnections();
          });
        }
        await closeAll();
      },
    };
    return idt;
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * The migration sets of a composition in the order they run: core's, then
 * each module's (`idt migrate` applies exactly these).
 *
 * @example
 * await runMigrations(db, migrationSetsOf([identity(), oidc()]));
 */
export function migrationSetsOf(modules: readonly AnyIdtModule[]): MigrationSet[] {
  return orderMigrationSets([coreMigrations, ...modules.flatMap((module) => (module.migrations ? [module.migrations] : []))]);
}

/**
 * The configuration a `baseUrl` stands for: `https://host/a/b` → issuer
 * `https://host`, path prefix `/a/b`.
 *
 * @throws ConfigError when it is not an absolute URL.
 */
export function splitBaseUrl(baseUrl: string): IdtConfigOverrides {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ConfigError([`baseUrl: "${baseUrl}" is not an absolute URL`]);
  }
  return { issuer: url.origin, pathPrefix: url.pathname.replace(/\/+$/, '') };
}

async function defaultMailer(config: IdtConfig, logger: Logger): Promise<Mailer> {
  // nodemailer is an optional peer dependency: loaded only when no mailer is passed.
  // The mailers load it on their first message; whether it is installed is known now.
  try {
    createRequire(import.meta.url).resolve('nodemailer');
  } catch (error) {
    if ((error as { code?: string }).code !== 'MODULE_NOT_FOUND') throw error;
    throw new ConfigError([
      'mailer: outgoing mail (SMTP, or .eml files in development) needs the nodemailer package: npm install nodemailer, or pass your own `mailer` to createIdt',
    ]);
  }
  return (await import('./mail.js')).createMailerFromConfig(config, logger);
}

/**
 * Declares a host's composition in an `idt.config.ts` / `idt.config.mjs`
 * module (its default export), which the `idt` CLI loads to migrate, seed and
 * register clients for exactly these modules, and which the host passes to
 * {@link createIdt}.
 *
 * @example
 * // idt.config.mjs
 * import { defineIdtConfig } from '@idt/core';
 * import { identity } from '@idt/identity';
 * import { oidc } from '@idt/oidc';
 * export default defineIdtConfig({ modules: [identity(), oidc()] });
 *
 * // server.mjs
 * import config from './idt.config.mjs';
 * const idt = await createIdt(config);
 */
export function defineIdtConfig<const Modules extends readonly AnyIdtModule[]>(
  options: CreateIdtOptions<Modules>,
): CreateIdtOptions<Modules> {
  return options;
}

/**
 * Answers an upgrade request nobody takes with a bare HTTP status and closes
 * the socket (for hosts wiring node:http's `upgrade` event themselves).
 *
 * @example
 * server.on('upgrade', (req, socket, head) => {
 *   if (!idt.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
 * });
 */
export function refuseUpgrade(socket: Duplex, status: number): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const reason = status === 404 ? 'Not Found' : status === 401 ? 'Unauthorized' : 'Bad Request';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** `response` with a header added unless present (a copy when its headers are immutable, as after `Response.redirect`). */
function withHeader(response: Response, name: string, value: string): Response {
  if (response.headers.has(name)) return response;
  try {
    response.headers.set(name, value);
    return response;
  } catch {
    const headers = new Headers(response.headers);
    headers.set(name, value);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}
