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
  createAuthenticator,
  createHealthRoutes,
  createHttpApp,
  createJwtVerifier,
  createLogger,
  createSetupGate,
  type HttpApp,
  type IdtConfig,
  type JwtVerifier,
  type Logger,
  type Mailer,
  type Route,
  resolveKeyEncryptionSecret,
} from '@idt/core';
import {
  type CacheInvalidator,
  coreMigrations,
  createCacheInvalidator,
  createDatabase,
  createEventBus,
  createKnexSigningKeyStore,
  createRateLimiter,
  createWindowCounter,
  type EventBus,
  type MigrationSet,
  publicJwks,
  type SigningKeyStore,
} from '@idt/core/knex';
import { createMailerFromConfig } from '@idt/core/mail';
import { createNodeHandler } from '@idt/core/node';
import { createArgon2Hasher, createTokenMac, type PasswordHasher, type SetupService } from '@idt/identity';
import { createKnexIdentity, identityMigrations, type KnexIdentity } from '@idt/identity/knex';
import { createKnexInquiries, inquiriesMigrations, type KnexInquiries } from '@idt/inquiries/knex';
import type { AccountDirectory } from '@idt/oidc';
import { createKnexOidc, type KnexOidc, oidcMigrations } from '@idt/oidc/knex';
import { createBlobStoreFromSettings, createScannerFromSettings } from '@idt/storage';
import { createKnexStorage, type KnexStorage, storageMigrations } from '@idt/storage/knex';
import type { Knex } from 'knex';

/** Every migration set the reference server needs, in any order (the runner sorts them). */
export const migrationSets: readonly MigrationSet[] = [
  coreMigrations,
  identityMigrations,
  oidcMigrations,
  inquiriesMigrations,
  storageMigrations,
];

/** How long one request, upload body included, may take before node:http gives up on it. */
export const UPLOAD_REQUEST_TIMEOUT_MS = 3_600_000;

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
  /** Outgoing mail; built from `config.mail` when absent. */
  readonly mailer?: Mailer;
}

/** The name of the sign-in session cookie. */
export const SESSION_COOKIE_NAME = 'idt_session';

/** A wired server, ready to listen. */
export interface IdtServer {
  readonly config: IdtConfig;
  readonly db: Knex;
  readonly app: HttpApp;
  readonly logger: Logger;
  readonly services: {
    readonly setup: SetupService;
    readonly events: EventBus;
    readonly identity: KnexIdentity;
    readonly oidc: KnexOidc;
    readonly inquiries: KnexInquiries;
    readonly storage: KnexStorage;
    readonly keys: SigningKeyStore;
    readonly verifier: JwtVerifier;
    readonly invalidator: CacheInvalidator;
    readonly mailer: Mailer;
  };
  /** The node:http request handler. */
  readonly handler: ReturnType<typeof createNodeHandler>;
  /** Starts background work (event dispatch, pruning jobs); `listen` calls it. Idempotent. */
  start(): void;
  /**
   * Rotates the signing keys: new ES256 and RS256 keys sign from now on; the
   * old ones keep verifying until their retention ends. Other instances follow
   * within a minute.
   */
  rotateSigningKeys(): Promise<void>;
  /** Starts listening (and background work); port 0 picks a free port. Resolves with the bound URL. */
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
  const secret = resolveKeyEncryptionSecret(config);
  const mailer = options.mailer ?? createMailerFromConfig(config, logger);

  const counter = createWindowCounter({ db });
  const keys = createKnexSigningKeyStore({ db, secret });
  await keys.ensureActiveKeys();
  const verifier = createJwtVerifier({
    keys: async () => publicJwks(await keys.listKeys()).keys,
    issuer: config.publicBaseUrl,
    audience: config.publicBaseUrl,
  });
  const invalidator = createCacheInvalidator({ db, logger });
  await invalidator.start();
  const events = createEventBus({ db, logger });

  const identity = createKnexIdentity({
    db,
    settings: {
      environment: config.environment,
      publicBaseUrl: config.publicBaseUrl,
      authUrl: config.authUrl,
      sessionCookieName: SESSION_COOKIE_NAME,
      emailChangeMaxRequests: config.emailChange.maxRequests,
      emailChangeWindowSeconds: config.emailChange.windowSeconds,
    },
    secret,
    mailer,
    outbox: events,
    invalidator,
    counter,
    hasher,
    logger,
    // The OpenID provider is wired below; the resolver asks it about clients lazily.
    clients: { findClient: (clientId) => oidcModule.clientLookup.findClient(clientId) },
  });
  const setup = identity.setup;
  const { sessions, passwordless } = identity.credentials;

  const directory: AccountDirectory = {
    verifyPassword: (email, password) => identity.signIn.authenticate(email, password),
    accountClaims: (userId, organizationId) => identity.signIn.claims(userId, organizationId),
    activeOrganizations: (userId) => identity.signIn.activeOrganizations(userId),
    membershipState: (userId, organizationId) => identity.signIn.membershipState(userId, organizationId),
    enroll: (userId, organizationId) => identity.accounts.memberships.enroll(userId, organizationId),
    async startSession(userId, context) {
      const started = await sessions.start(userId, context);
      return { sessionId: started.session.id, userId, cookieValue: started.cookieValue, expiresAt: started.session.expiresAt };
    },
    async findSession(cookieValue) {
      const session = await sessions.findLiveByCookie(cookieValue);
      return session && { sessionId: session.id, userId: session.userId };
    },
    requestMagicLink: (email, returnTo) => passwordless.requestMagicLink({ email, returnTo }),
    requestCode: (email) => passwordless.requestCode({ email }),
    async verifyCode(email, code, context) {
      try {
        const verified = await passwordless.verifyCode({ email, code }, context);
        return {
          sessionId: verified.session.id,
          userId: verified.userId,
          cookieValue: verified.cookieValue,
          expiresAt: verified.session.expiresAt,
        };
      } catch (error) {
        if ((error as { code?: string }).code === 'Passwordless.InvalidCode') return undefined;
        throw error;
      }
    },
  };

  // Rate limiting is off in Development (SPEC 8.1); expired counters are pruned in the background.
  const rateLimiter = config.environment === 'Development' ? undefined : createRateLimiter({ db, settings: config.rateLimits });
  const oidcModule: KnexOidc = await createKnexOidc({
    db,
    settings: {
      issuer: config.publicBaseUrl,
      authUrl: config.authUrl,
      pathPrefix: config.pathPrefix,
      trustProxy: config.trustProxy,
      accessTokenTtlSeconds: config.oidc.accessTokenMinutes * 60,
      refreshReuseLeewaySeconds: config.oidc.refreshReuseLeewaySeconds,
      refreshTokenFallbackSeconds: config.oidc.refreshTokenLifetimeSeconds,
      backchannelAllowPrivateHosts: config.oidc.backchannelAllowPrivateHosts,
      sessionCookieName: SESSION_COOKIE_NAME,
    },
    keys,
    secret,
    tokens: createTokenMac(secret),
    invalidator,
    counter,
    outbox: events,
    verifier,
    resolver: identity.resolver,
    directory,
    organizations: { find: (organizationId) => identity.signIn.organization(organizationId) },
    endIdentitySession: async (userId, sessionId) => void (await sessions.revoke(userId, sessionId, 'logout')),
    ...(rateLimiter ? { rateLimiter } : {}),
    logger,
  });
  await oidcModule.start();
  const inquiries = createKnexInquiries({ db, outbox: events, logger });
  const storage = createKnexStorage({
    db,
    blobStore: createBlobStoreFromSettings(config.storage),
    scanner: createScannerFromSettings(config.storage),
    maxUploadBytes: config.storage.maxUploadBytes,
    logger,
  });
  const modules = [identity, oidcModule, inquiries, storage];
  for (const event of modules.flatMap((feature) => feature.events)) events.register(event);
  for (const handler of modules.flatMap((feature) => feature.handlers)) events.subscribe(handler);

  const routes: Route[] = [];
  routes.push(
    ...createHealthRoutes([{ name: 'database', check: async () => void (await db.raw('select 1')) }]),
    ...identity.routes,
    ...oidcModule.routes,
    ...inquiries.routes,
    ...storage.routes,
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

  const jobs = [
    ...identity.jobs,
    ...oidcModule.jobs,
    ...inquiries.jobs,
    ...storage.jobs,
    { name: 'prune signing keys', intervalMs: 3_600_000, run: () => keys.prune() },
    { name: 'prune dispatched events', intervalMs: 3_600_000, run: () => events.prune(7 * 86_400_000) },
    ...(rateLimiter
      ? [{ name: 'prune rate-limit counters', intervalMs: RATE_LIMIT_PRUNE_INTERVAL_MS, run: () => rateLimiter.prune() }]
      : []),
  ];
  const timers: NodeJS.Timeout[] = [];
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

  const origins = [...new Set([new URL(config.authUrl).origin, new URL(config.publicBaseUrl).origin])];
  const authenticator = createAuthenticator({
    verifier,
    resolver: identity.resolver,
    sessionCookie: { name: SESSION_COOKIE_NAME, allowedOrigins: origins },
  });

  const app = createHttpApp({
    environment: config.environment,
    publicBaseUrl: config.publicBaseUrl,
    pathPrefix: config.pathPrefix,
    trustProxy: config.trustProxy,
    routes,
    gates: [createSetupGate({ isSetupRequired: () => setup.isSetupRequired() })],
    rateLimiter,
    authenticator,
    logger,
  });
  const handler = createNodeHandler(app, { trustProxy: config.trustProxy, before: [oidcModule.nodeHandler] });

  let server: Server | undefined;
  return {
    config,
    db,
    app,
    logger,
    services: { setup, events, identity, oidc: oidcModule, inquiries, storage, keys, verifier, invalidator, mailer },
    handler,
    start,
    async rotateSigningKeys() {
      await keys.rotate('ES256');
      await keys.rotate('RS256');
      await oidcModule.reloadKeys();
      verifier.reset();
    },
    listen(port = config.port, host = config.host) {
      return new Promise((resolve, reject) => {
        // requestTimeout bounds a whole request, body included: Node's default (300 s) would cut off a
        // 100 MiB upload on a link slower than ~350 KB/s, so uploads get an hour. headersTimeout stays 60 s.
        const created = createServer(
          { keepAliveTimeout: 65_000, requestTimeout: UPLOAD_REQUEST_TIMEOUT_MS },
          (req, res) => void handler(req, res),
        );
        created.once('error', reject);
        created.listen(port, host, () => {
          created.off('error', reject);
          server = created;
          start();
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
      for (const timer of timers.splice(0)) clearInterval(timer);
      await events.stop();
      await invalidator.close();
      if (ownsDb) await db.destroy();
    },
  };
}
