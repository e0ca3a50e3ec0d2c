/**
 * The idt reference server: every package wired into one node:http server.
 * Embedders can copy this wiring or call {@link createIdtServer} directly.
 *
 * @packageDocumentation
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createApiDocsRoutes,
  createAsyncApiRoutes,
  createHealthRoutes,
  createHttpApp,
  createLogger,
  createSetupGate,
  type HttpApp,
  type IdtConfig,
  type Logger,
  type Route,
} from '@idt/core';
import {
  coreMigrations,
  createDatabase,
  createEventBus,
  createRateLimiter,
  type EventBus,
  type MigrationSet,
} from '@idt/core/knex';
import { createNodeHandler } from '@idt/core/node';
import { createArgon2Hasher, createSetupRoutes, createSetupService, type PasswordHasher, type SetupService } from '@idt/identity';
import { createKnexSetupStore, identityMigrations } from '@idt/identity/knex';
import type { Knex } from 'knex';

/** Every migration set the reference server needs, in any order (the runner sorts them). */
export const migrationSets: readonly MigrationSet[] = [coreMigrations, identityMigrations];

/** How often the server deletes expired rate-limit counters. */
const RATE_LIMIT_PRUNE_INTERVAL_MS = 10 * 60_000;

/** Options of {@link createIdtServer}. */
export interface IdtServerOptions {
  readonly config: IdtConfig;
  /** An open database; created from `config.databaseUrl` (and closed with the server) when absent. */
  readonly db?: Knex;
  readonly logger?: Logger;
  /** Password hashing; argon2id with OWASP parameters by default. */
  readonly hasher?: PasswordHasher;
}

/** A wired server, ready to listen. */
export interface IdtServer {
  readonly config: IdtConfig;
  readonly db: Knex;
  readonly app: HttpApp;
  readonly logger: Logger;
  readonly services: { readonly setup: SetupService; readonly events: EventBus };
  /** The node:http request handler. */
  readonly handler: ReturnType<typeof createNodeHandler>;
  /** Starts listening; port 0 picks a free port. Resolves with the bound URL. */
  listen(port?: number, host?: string): Promise<{ url: string; server: Server }>;
  /** Stops listening and closes the database when the server opened it. */
  close(): Promise<void>;
}

/**
 * Wires the reference server.
 *
 * @example
 * const config = loadConfig(process.env);
 * const server = await createIdtServer({ config });
 * const { url } = await server.listen(config.port, config.host);
 */
export async function createIdtServer(options: IdtServerOptions): Promise<IdtServer> {
  const { config } = options;
  const ownsDb = options.db === undefined;
  const db = options.db ?? createDatabase(config.databaseUrl);
  const logger = options.logger ?? createLogger({ level: config.logLevel, fields: { service: 'idt' } });
  const hasher = options.hasher ?? createArgon2Hasher();

  const setup = createSetupService({ store: createKnexSetupStore(db), hasher });
  const events = createEventBus({ db, logger });

  const routes: Route[] = [];
  routes.push(
    ...createHealthRoutes([{ name: 'database', check: async () => void (await db.raw('select 1')) }]),
    ...createSetupRoutes(setup),
  );
  routes.push(
    ...createApiDocsRoutes({
      routes: () => routes,
      serverUrl: config.publicBaseUrl,
      pathPrefix: config.pathPrefix,
      title: 'idt API',
      description: 'The identity and tenant API of idt.',
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

  // Rate limiting is off in Development (SPEC 8.1); expired counters are pruned in the background.
  const rateLimiter = config.environment === 'Development' ? undefined : createRateLimiter({ db, settings: config.rateLimits });
  const pruneTimer = rateLimiter
    ? setInterval(() => {
        rateLimiter.prune().catch((error: unknown) => logger.warn('pruning rate-limit counters failed', { error }));
      }, RATE_LIMIT_PRUNE_INTERVAL_MS)
    : undefined;
  pruneTimer?.unref();

  const app = createHttpApp({
    environment: config.environment,
    publicBaseUrl: config.publicBaseUrl,
    pathPrefix: config.pathPrefix,
    trustProxy: config.trustProxy,
    routes,
    gates: [createSetupGate({ isSetupRequired: () => setup.isSetupRequired() })],
    rateLimiter,
    logger,
  });
  const handler = createNodeHandler(app, { trustProxy: config.trustProxy });

  let server: Server | undefined;
  return {
    config,
    db,
    app,
    logger,
    services: { setup, events },
    handler,
    listen(port = config.port, host = config.host) {
      return new Promise((resolve, reject) => {
        const created = createServer({ keepAliveTimeout: 65_000 }, (req, res) => void handler(req, res));
        created.once('error', reject);
        created.listen(port, host, () => {
          created.off('error', reject);
          server = created;
          events.start();
          const address = created.address() as AddressInfo;
          const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          resolve({ url: `http://${shownHost}:${address.port}${config.pathPrefix}`, server: created });
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
      clearInterval(pruneTimer);
      await events.stop();
      if (ownsDb) await db.destroy();
    },
  };
}
