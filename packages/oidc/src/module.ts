import {
  createLogIngestHandler,
  type EnvironmentVariable,
  envReader,
  type IdtModule,
  type LogIngestOptions,
  type LogSink,
  logSinkFromEnv,
} from '@idt/core';
import {
  CLIENT_LOOKUP_CAPABILITY,
  type ClientLookup,
  createTokenMac,
  type IdentityServices,
  SESSION_COOKIE_NAME,
} from '@idt/identity';
import { OidcAuditActions } from './audit-actions.js';
import type { StoredClient } from './clients/store.js';
import { SIGN_IN_FEDERATION_CAPABILITY, type SignInFederationSlot } from './federation.js';
import { createLandingRoutes, demoAuthorizationUrl, findDemoClient } from './http/routes/landing.js';
import { createSignInLogRoutes, SIGN_IN_LOG_SERVICE } from './http/routes/logs.js';
import { createProviderDocsRoutes } from './http/routes/provider-docs.js';
import { createIdentityDirectory } from './identity-directory.js';
import { createKnexClientStore } from './knex/client-store.js';
import { oidcMigrations } from './knex/migrations.js';
import type { KnexOidc } from './knex/module.js';
import type { BackchannelLimits } from './logout/backchannel.js';
import { OidcCodes } from './problems.js';

/** Settings of the OpenID provider module. */
export interface OidcModuleSettings {
  /** `IDT_ACCESS_TOKEN_MINUTES`: access-token lifetime (default 15, SPEC 5.3). */
  readonly accessTokenMinutes: number;
  /** `IDT_REFRESH_TOKEN_REUSE_LEEWAY_SECONDS`: replay tolerance of a redeemed refresh token (default 30, SPEC 3.6). */
  readonly refreshReuseLeewaySeconds: number;
  /** `IDT_REFRESH_TOKEN_LIFETIME_SECONDS`: refresh-token lifetime fallback (default 604,800 = 7 days). */
  readonly refreshTokenLifetimeSeconds: number;
  /** `IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS`: deliver back-channel logout to loopback and private hosts (local demos and tests only). */
  readonly backchannelAllowPrivateHosts: boolean;
}

/** Options of {@link oidc}; each wins over its environment variable. */
export interface OidcModuleOptions extends Partial<OidcModuleSettings> {
  /** Time budget and retries of back-channel logout delivery. */
  readonly backchannelLimits?: BackchannelLimits;
  /**
   * The sign-in pages' browser log ingest, `POST /logs` (SPEC 4.10): where
   * events go (by default `logSinkFromEnv`: OTLP when
   * `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else standard output) and the
   * per-IP window (60 a minute). `false` leaves the route out.
   */
  readonly logs?: { readonly sink?: LogSink; readonly rateLimit?: LogIngestOptions['rateLimit'] } | false;
}

/** The services of the OpenID provider module (`idt.services.oidc`). */
export type OidcServices = KnexOidc;

/** The environment variables of the OpenID provider module. */
export const oidcVariables: readonly EnvironmentVariable[] = [
  { name: 'IDT_ACCESS_TOKEN_MINUTES', description: 'Access-token lifetime in minutes (1-1440).', default: '15' },
  { name: 'IDT_REFRESH_TOKEN_REUSE_LEEWAY_SECONDS', description: 'Replay tolerance of a redeemed refresh token.', default: '30' },
  { name: 'IDT_REFRESH_TOKEN_LIFETIME_SECONDS', description: 'Refresh-token lifetime fallback.', default: '604800' },
  {
    name: 'IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS',
    description: 'Deliver back-channel logout to loopback and private addresses (local demos and tests only).',
    default: 'false',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    description:
      'OTLP/HTTP collector base URL: browser log events of POST /logs go to <url>/v1/logs as OTLP JSON; unset, they are JSON lines on standard output.',
  },
];

/**
 * The OpenID Connect / OAuth 2.0 provider: discovery, JWKS, `/connect/*`
 * (authorize, token, end-session, revocation, introspection, PAR), the
 * sign-in pages and their assets, organization-scoped clients and their API,
 * userinfo, consents, front- and back-channel logout. Requires the identity
 * module; served through both entry points of `createIdt`.
 *
 * @example
 * const idt = await createIdt({ database: 'sqlite:./data/idt.sqlite', modules: [identity(), oidc({ accessTokenMinutes: 5 })] });
 */
export function oidc(options: OidcModuleOptions = {}): IdtModule<'oidc', OidcServices, OidcModuleSettings> {
  const { backchannelLimits, logs, ...overrides } = options;
  return {
    id: 'oidc',
    requires: ['identity'],
    migrations: oidcMigrations,
    problemCodes: Object.keys(OidcCodes),
    settings: {
      variables: oidcVariables,
      resolve(env) {
        const read = envReader(env);
        const settings: OidcModuleSettings = {
          accessTokenMinutes:
            overrides.accessTokenMinutes ?? read.integer('IDT_ACCESS_TOKEN_MINUTES', { default: 15, min: 1, max: 1440 }),
          refreshReuseLeewaySeconds:
            overrides.refreshReuseLeewaySeconds ??
            read.integer('IDT_REFRESH_TOKEN_REUSE_LEEWAY_SECONDS', { default: 30, max: 3600 }),
          refreshTokenLifetimeSeconds:
            overrides.refreshTokenLifetimeSeconds ??
            read.integer('IDT_REFRESH_TOKEN_LIFETIME_SECONDS', { default: 604_800, min: 60, max: 31_536_000 }),
          backchannelAllowPrivateHosts:
            overrides.backchannelAllowPrivateHosts ?? read.boolean('IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS', false),
        };
        read.done();
        return settings;
      },
    },
    provides: {
      // The identity module's credential resolver asks about clients (status, organization) through this port.
      [CLIENT_LOOKUP_CAPABILITY]: (ctx): ClientLookup => {
        const store = createKnexClientStore(ctx.db, ctx.invalidator);
        return {
          async findClient(clientId) {
            const client = await store.find(clientId);
            return client
              ? { clientId: client.clientId, organizationId: client.organizationId, status: client.status }
              : undefined;
          },
        };
      },
    },
    async setup(ctx) {
      const { createKnexOidc } = await import('./knex/module.js');
      ctx.audit.register(Object.values(OidcAuditActions));
      // Set once the module exists: the account page's sign-in link reads the clients through it.
      let demoClients: (() => Promise<readonly StoredClient[]>) | undefined;
      const identity = ctx.module<IdentityServices>('identity');
      const { sessions } = identity.credentials;
      const settings = ctx.settings;
      const federation = ctx.capability<SignInFederationSlot>(SIGN_IN_FEDERATION_CAPABILITY);
      const module = await createKnexOidc({
        db: ctx.db,
        settings: {
          issuer: ctx.config.publicBaseUrl,
          authUrl: ctx.config.authUrl,
          pathPrefix: ctx.config.pathPrefix,
          trustProxy: ctx.config.trustProxy,
          accessTokenTtlSeconds: settings.accessTokenMinutes * 60,
          refreshReuseLeewaySeconds: settings.refreshReuseLeewaySeconds,
          refreshTokenFallbackSeconds: settings.refreshTokenLifetimeSeconds,
          backchannelAllowPrivateHosts: settings.backchannelAllowPrivateHosts,
          ...(backchannelLimits ? { backchannelLimits } : {}),
          sessionCookieName: SESSION_COOKIE_NAME,
        },
        keys: ctx.keys,
        secret: ctx.secret,
        tokens: createTokenMac(ctx.secret),
        invalidator: ctx.invalidator,
        counter: ctx.counter,
        outbox: ctx.events,
        audit: ctx.audit,
        verifier: ctx.verifier,
        resolver: identity.resolver,
        directory: createIdentityDirectory(identity, { clock: ctx.clock }), // D: passkeys (the clock)
        organizations: { find: (organizationId) => identity.signIn.organization(organizationId) },
        endIdentitySession: async (userId, sessionId) => void (await sessions.revoke(userId, sessionId, 'logout')),
        ...(ctx.rateLimiter ? { rateLimiter: ctx.rateLimiter } : {}),
        account: {
          listSessions: (userId) => sessions.list(userId),
          revokeSession: (userId, sessionId, request) => sessions.revoke(userId, sessionId, 'revoked', request),
          requestEmailChange: (userId, newEmail, request) =>
            identity.credentials.emailChange.request(userId, { newEmail }, request),
        },
        accountSignInUrl: async () => {
          if (ctx.config.environment !== 'Development' || !demoClients) return undefined;
          const demo = findDemoClient(await demoClients());
          return demo && demoAuthorizationUrl(ctx.config.publicBaseUrl, demo.client, demo.redirectUri);
        },
        ...(federation ? { federation } : {}),
        clock: ctx.clock,
        logger: ctx.logger,
      });
      demoClients = () => module.clients.listStored();
      await module.start();
      const ownSink = logs === false || logs?.sink ? undefined : logSinkFromEnv(ctx.env, { logger: ctx.logger });
      const logRoutes =
        logs === false
          ? []
          : createSignInLogRoutes(
              createLogIngestHandler({
                service: SIGN_IN_LOG_SERVICE,
                clock: ctx.clock,
                trustForwardedProto: ctx.config.trustProxy,
                sink: logs?.sink ?? (ownSink as LogSink),
                ...(logs?.rateLimit !== undefined ? { rateLimit: logs.rateLimit } : {}),
                logger: ctx.logger,
              }),
            );
      const landingRoutes = createLandingRoutes({
        environment: ctx.config.environment,
        issuer: ctx.config.publicBaseUrl,
        pathPrefix: ctx.config.pathPrefix,
        listClients: () => module.clients.listStored(),
      });
      const docsRoutes = createProviderDocsRoutes({
        issuer: ctx.config.publicBaseUrl,
        scopes: await scopeDescriptions(module),
      });
      return {
        services: module,
        routes: [...module.routes, ...logRoutes, ...landingRoutes, ...docsRoutes],
        surfaces: module.surfaces,
        events: module.events,
        handlers: module.handlers,
        jobs: module.jobs,
        onSigningKeysRotated: () => module.reloadKeys(),
        close: async () => void (await ownSink?.close()),
      };
    },
  };
}

/** The scope catalog for the API viewer's "Authorize", read once at start; the login scopes when it cannot be read yet. */
async function scopeDescriptions(module: KnexOidc): Promise<Record<string, string>> {
  const scopes: Record<string, string> = {
    openid: 'Sign in (required)',
    profile: 'Name and organization',
    email: 'E-mail address',
    offline_access: 'A refresh token',
  };
  try {
    for (const row of await module.clients.scopes()) scopes[row.scope] ??= row.description;
  } catch {
    // Before migrations (the CLI builds the composition to migrate it): the login scopes are enough.
  }
  return scopes;
}
