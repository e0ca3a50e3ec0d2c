import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type AuditTrail,
  type Clock,
  type CredentialResolver,
  createThrottle,
  type EventOutbox,
  type JwtVerifier,
  type Logger,
  type ModuleInstance,
  type ModuleSurface,
  type NodeSurfaceHandler,
  type Principal,
  type RequestRateLimiter,
  type Route,
  silentLogger,
  systemClock,
  verifyBearerToken,
} from '@idt/core';
import type { CacheInvalidator, SigningKeyStore, WindowCounter } from '@idt/core/knex';
import { CacheNamespaces, type ClientLookup, type TokenMac } from '@idt/identity';
import type Provider from 'oidc-provider';
import { createStoredClientCache } from './clients/cache.js';
import { type ClientService, createClientService } from './clients/service.js';
import type { ClientStore, OrganizationDirectory, StoredClient } from './clients/store.js';
import { OidcSessionEndedEvent } from './events.js';
import type { SignInFederationSlot } from './federation.js';
import { createAuthorizeContextRoutes } from './http/routes/authorize-context.js';
import { createOrganizationClientRoutes, createPlatformClientRoutes, type PlatformCheck } from './http/routes/clients.js';
import { createConsentRoutes } from './http/routes/consents.js';
import { createScopeRoutes } from './http/routes/scopes.js';
import { createUserinfoRoutes } from './http/routes/userinfo.js';
import { ACCOUNT_BASE, type AccountServices, createAccountPages } from './interactions/account.js';
import type { AccountDirectory } from './interactions/directory.js';
import { ASSETS_BASE, createInteractionHandler } from './interactions/handler.js';
import { createLogoutPages } from './interactions/logout-pages.js';
import { pageSurface } from './interactions/page-request.js';
import { createProviderErrorRenderer, setProviderAssetsPath } from './interactions/pages.js';
import { createPasswordResetPage, PASSWORD_RESET_PATH } from './interactions/password-reset-page.js';
import type { ConsentStore, GrantContextStore } from './interactions/stores.js';
import { createVerifyEmailPage, VERIFY_EMAIL_PAGE } from './interactions/verify-email-page.js';
import { type BackchannelLimits, createBackchannelNotifier } from './logout/backchannel.js';
import { createSessionEnd } from './logout/session-end.js';
import { createAccessTokenIntrospection } from './policy/access-token-introspection.js';
import type { ClientLockoutPolicy } from './policy/client-lockout.js';
import { createFamilyRevocation, familyWatermarksForgettableBefore } from './policy/family-revocation.js';
import { grantStillApplies, organizationHintError } from './policy/organization.js';
import { createClientOrganizations } from './policy/rate-partition.js';
import { refreshTokenLifetime as refreshTokenLifetimeOf } from './policy/refresh-lifetime.js';
import { createSuccessorDerivation } from './policy/refresh-rotation.js';
import { createSignInLockout } from './policy/sign-in-lockout.js';
import { createOidcProvider, type GrantContext, type ProviderHooks } from './provider/create-provider.js';
import { createCurrentProvider } from './provider/current-provider.js';
import { createProviderEdge, isPagePath, isProviderPath } from './provider/edge.js';
import { loadOidcProvider } from './provider/load.js';
import { installProviderMiddleware } from './provider/middleware.js';
import type { ProviderAdapterClass, ProviderStateStore } from './provider/store.js';

/** Settings of the OpenID provider module (mapped from `IdtConfig` by the host). */
export interface OidcSettings {
  /** The issuer: the public base URL, prefix included. */
  readonly issuer: string;
  /** Where the sign-in pages live (defaults to the issuer). */
  readonly authUrl: string;
  /** The deployment path prefix (`''` or `/idt`). */
  readonly pathPrefix: string;
  readonly trustProxy: boolean;
  /** Access-token lifetime in seconds (SPEC 5.3: 15 minutes by default). */
  readonly accessTokenTtlSeconds: number;
  /** Reuse leeway of redeemed refresh tokens in seconds (SPEC 3.6: 30). */
  readonly refreshReuseLeewaySeconds: number;
  /** Refresh-token lifetime fallback in seconds (SPEC 5.3: 7 days). */
  readonly refreshTokenFallbackSeconds: number;
  /** Deliver back-channel logout to loopback and private hosts (local demos and tests only). */
  readonly backchannelAllowPrivateHosts: boolean;
  readonly backchannelLimits?: BackchannelLimits;
  /** The sign-in session cookie shared with the identity module. */
  readonly sessionCookieName: string;
}

/** What the OpenID provider needs from its host, besides its stores (see {@link OidcStores}). */
export interface OidcOptions {
  readonly settings: OidcSettings;
  readonly keys: SigningKeyStore;
  /** The server secret (cookie keys are derived from it). */
  readonly secret: string;
  readonly tokens: TokenMac;
  readonly invalidator: CacheInvalidator;
  readonly counter: WindowCounter;
  readonly outbox: EventOutbox;
  /**
   * The audit trail (`ctx.audit`): client changes record in their
   * transactions, logouts in theirs, sign-ins and refused sign-ins in small
   * ones of their own. Without it nothing is recorded.
   */
  readonly audit?: Pick<AuditTrail, 'record'>;
  readonly verifier: JwtVerifier;
  readonly resolver: CredentialResolver;
  readonly directory: AccountDirectory;
  readonly organizations: OrganizationDirectory;
  /** Ends an identity session (the sessions service of `@idt/identity`). */
  readonly endIdentitySession: (userId: string, sessionId: string) => Promise<void>;
  /** Rate limiting of the provider endpoints (the `auth` policy); absent in Development. */
  readonly rateLimiter?: RequestRateLimiter;
  /** The identity services of the account page (`/connect/account`); without them there is no account page. */
  readonly account?: AccountServices;
  /** Where a signed-out visitor of the account page can sign in (Development: the demo application). */
  readonly accountSignInUrl?: () => Promise<string | undefined>;
  /** Sign-in at other identity providers: the slot a federation module fills (`federation.ts`). */
  readonly federation?: SignInFederationSlot;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The persistence the OpenID provider stands on (`createKnexOidc` hands over the knex stores). */
export interface OidcStores {
  readonly clients: ClientStore;
  readonly consents: ConsentStore;
  /** Grant contexts, and the one already read for a grant (token lifetimes are computed synchronously). */
  readonly grantContexts: GrantContextStore & { cached(grantId: string): GrantContext | undefined };
  /** The invalid-client lockout (SPEC 8.2). */
  readonly lockout: ClientLockoutPolicy;
  readonly providerState: ProviderStateStore;
  /**
   * oidc-provider's storage adapter; `currentRequest` answers the request
   * the provider is serving (`Provider.ctx`), or `undefined` outside one.
   */
  adapter(currentRequest: () => object | undefined): ProviderAdapterClass;
  /** Deletes the adapter's expired payloads; answers how many. */
  prunePayloads(now: Date): Promise<number>;
}

/** The OpenID provider, composed. */
export interface OidcComposition {
  /** The current oidc-provider instance (replaced when signing keys rotate). */
  provider(): Provider;
  readonly clients: ClientService;
  /** Client lookups for the identity module's credential resolver. */
  readonly clientLookup: ClientLookup;
  /** Node handler for `/connect/*`, `/.well-known/*` and the sign-in pages; returns `true` when it answered. */
  readonly nodeHandler: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;
  /**
   * The same as module surfaces: the sign-in and account pages (Fetch
   * handlers, served through both entry points without the node bridge),
   * then oidc-provider's endpoints (node:http).
   */
  readonly surfaces: readonly ModuleSurface[];
  readonly routes: readonly Route[];
  readonly events: NonNullable<ModuleInstance['events']>;
  readonly handlers: NonNullable<ModuleInstance['handlers']>;
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly intervalMs: number; run(): Promise<unknown> }>;
  /** Rebuilds the provider with the current signing keys (after a rotation). */
  reloadKeys(): Promise<void>;
  /** Ends provider sessions (and their grants) of an identity session or of a user, and queues back-channel logout. */
  endSessions(filter: { sessionId?: string; userId?: string }, reason: string): Promise<number>;
  /** The invalid-client lockout (SPEC 8.2), read-only: whether a client is locked, and its bounded memory. */
  readonly lockout: Pick<ClientLockoutPolicy, 'isLocked' | 'unknownClientsTracked'>;
  /** Loads lockouts from the database; call once at start. */
  start(): Promise<void>;
}

/**
 * Composes the OpenID provider over its stores: oidc-provider with idt's
 * policy and patches, the clients service and its routes, the sign-in and
 * account pages, userinfo, logout with front- and back-channel notification,
 * the invalid-client lockout, and the node edge in front of them.
 */
export async function composeOidc(options: OidcOptions, stores: OidcStores): Promise<OidcComposition> {
  const { settings } = options;
  const oidc = await loadOidcProvider();
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const apiResource = settings.issuer;
  const assets = `${settings.pathPrefix}${ASSETS_BASE}`;
  setProviderAssetsPath(assets);

  const clientStore = stores.clients;
  const clients = createClientService({
    store: clientStore,
    organizations: options.organizations,
    issuer: settings.issuer,
    apiBaseUrl: settings.issuer,
    clock,
  });
  const { consents, grantContexts, providerState } = stores;
  const findStoredClient = createStoredClientCache(clientStore, options.invalidator);
  const storeLockout = stores.lockout;
  // Successful client authentications record `lastUsedAt`, at most once a minute per client.
  const clientUse = createThrottle(60_000, clock);
  const lockout = {
    ...storeLockout,
    recordSuccess(clientId: string) {
      if (clientUse.take(clientId)) {
        clientStore
          .touch(clientId, clock.now())
          .catch((error: unknown) => logger.warn('recording client use failed', { error, clientId }));
      }
      return storeLockout.recordSuccess(clientId);
    },
  };
  // oidc-provider's AsyncLocalStorage: the request it is serving, if any.
  const Adapter = stores.adapter(() => oidc.Provider.ctx);
  const successorOf = createSuccessorDerivation(options.secret);
  const backchannel = createBackchannelNotifier({
    issuer: settings.issuer,
    allowPrivateHosts: settings.backchannelAllowPrivateHosts,
    ...(settings.backchannelLimits ? { limits: settings.backchannelLimits } : {}),
    clock,
    logger,
    signingKey: async () => {
      const key = (await options.keys.listKeys()).find((candidate) => candidate.status === 'active' && candidate.alg === 'RS256');
      if (!key) throw new Error('No active RS256 signing key');
      return key.privateJwk;
    },
  });

  const refreshTokenLifetime = (client: StoredClient | undefined) =>
    refreshTokenLifetimeOf(client, settings.refreshTokenFallbackSeconds);

  // The Auth rate-limit partition is the client's organization: remembered, evicted on change.
  const clientOrganizations = createClientOrganizations({ find: (clientId) => clientStore.find(clientId), clock });
  options.invalidator.subscribe(CacheNamespaces.clients, (key) => clientOrganizations.evict(key));

  const sessionEnd = createSessionEnd({
    providerState,
    audited: options.audit !== undefined,
    endIdentitySession: options.endIdentitySession,
    findClient: findStoredClient,
    backchannel,
    clock,
    logger,
  });
  const familyRevocation = createFamilyRevocation({ refuseAccessTokens: sessionEnd.refuseAccessTokens, clock });

  const logoutPages = createLogoutPages({ assets, issuer: settings.issuer });

  const hooks: ProviderHooks = {
    accountClaims: (userId, organizationId) => options.directory.accountClaims(userId, organizationId),
    grantContext: (grantId) => grantContexts.get(grantId),
    cachedGrantContext: (grantId) => grantContexts.cached(grantId),
    refreshTokenLifetime: (client) => refreshTokenLifetime(client),
    async grantStillApplies(ctx, context) {
      const clientId = ctx.oidc.client?.clientId;
      const accountId = ctx.oidc.session?.accountId;
      const client = context && clientId && accountId ? await findStoredClient(clientId) : undefined;
      if (!context || !client || !accountId) return false;
      const hint = ctx.oidc.params?.organization as string | undefined;
      return grantStillApplies(client, accountId, hint, context.organizationId, options.directory);
    },
    async validateOrganizationParameter(_ctx, value, clientId) {
      const client = value === undefined ? undefined : await findStoredClient(clientId);
      const error = client ? organizationHintError(client, value) : undefined;
      if (error) throw new oidc.errors.InvalidRequest(error);
    },
  };

  const providerErrorPage = createProviderErrorRenderer({ assets, logger });
  // Introspection judges idt's access tokens with the API's own bearer check.
  const introspectAccessToken = createAccessTokenIntrospection({
    check: (token) => verifyBearerToken(options.verifier, options.resolver, token),
    clock,
  });

  let stopClientInstances: (() => void) | undefined;
  const current = await createCurrentProvider({
    keys: options.keys,
    build(keys) {
      const provider = createOidcProvider({
        oidc,
        issuer: settings.issuer,
        apiResource,
        authUrl: `${settings.authUrl}`,
        keys,
        secret: options.secret,
        adapter: Adapter,
        hooks,
        findClient: findStoredClient,
        accessTokenTtlSeconds: settings.accessTokenTtlSeconds,
        trustProxy: settings.trustProxy,
        logoutSource: logoutPages.logoutSource,
        postLogoutSuccessSource: logoutPages.postLogoutSuccessSource,
        isLocked: (clientId) => lockout.isLocked(clientId),
        onClientChange: (listener) => {
          // A rebuilt provider (new signing keys) replaces the previous one's subscription.
          stopClientInstances?.();
          stopClientInstances = options.invalidator.subscribe(CacheNamespaces.clients, listener);
        },
        refreshReuseLeewaySeconds: settings.refreshReuseLeewaySeconds,
        successorOf,
        familyRevocation,
        renderError: providerErrorPage,
        clock,
      });
      installProviderMiddleware(provider, {
        lockout,
        settle: (request) => Adapter.settle(request),
        assets,
        logoutPages,
        introspectAccessToken,
        logger,
        onLogout: sessionEnd.onLogout,
      });
      provider.on('server_error', (_ctx: unknown, error: unknown) => logger.error('OpenID provider error', { error }));
      return provider;
    },
  });

  const interactions = createInteractionHandler({
    provider: current.provider,
    directory: options.directory,
    clients: { findStored: findStoredClient, scopes: () => clients.scopes() },
    consents,
    grantContexts,
    apiResource,
    pathPrefix: settings.pathPrefix,
    sessionCookie: { name: settings.sessionCookieName },
    trustProxy: settings.trustProxy,
    tokens: options.tokens,
    refreshTokenLifetime: (client) => refreshTokenLifetime(client),
    signInLockout: createSignInLockout({ counter: options.counter }),
    ...(options.federation ? { federation: options.federation } : {}),
    // The sign-in path has no transaction to join: each record gets a small one (see `sign-in-audit.ts`).
    ...(options.audit ? { audit: (entry) => providerState.transaction((tx) => tx.audit?.([entry]) ?? Promise.resolve()) } : {}),
    clock,
    logger,
  });

  const accountPages = options.account
    ? createAccountPages({
        directory: options.directory,
        consents,
        account: options.account,
        revokeClientGrants: sessionEnd.revokeClientGrants,
        findClient: findStoredClient,
        sessionCookieName: settings.sessionCookieName,
        tokens: options.tokens,
        pathPrefix: settings.pathPrefix,
        trustProxy: settings.trustProxy,
        ...(options.accountSignInUrl ? { signInUrl: options.accountSignInUrl } : {}),
        logger,
      })
    : undefined;

  const accountBase = `${settings.pathPrefix}${ACCOUNT_BASE}`;
  // A: passwords (the reset page the mailed links open, outside any sign-in)
  const passwordResetPath = `${settings.pathPrefix}${PASSWORD_RESET_PATH}`;
  const passwordResetPage = createPasswordResetPage({
    directory: options.directory,
    pathPrefix: settings.pathPrefix,
    trustProxy: settings.trustProxy,
    logger,
  });
  // B: verified e-mail (the confirm page the mailed links open, outside any sign-in)
  const verifyEmailPath = `${settings.pathPrefix}${VERIFY_EMAIL_PAGE}`;
  const verifyEmailPage = createVerifyEmailPage({ directory: options.directory, pathPrefix: settings.pathPrefix, logger });
  const pages = pageSurface('sign-in-pages', isPagePath, (request) => {
    const pathname = request.url.pathname;
    if (pathname === accountBase || pathname.startsWith(`${accountBase}/`)) {
      return accountPages ? accountPages(request) : Promise.resolve(undefined);
    }
    if (pathname === passwordResetPath) return passwordResetPage(request); // A: passwords
    if (pathname === verifyEmailPath) return verifyEmailPage(request); // B: verified e-mail
    return interactions(request);
  });

  const edge = createProviderEdge({
    pathPrefix: settings.pathPrefix,
    trustProxy: settings.trustProxy,
    ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
    clientOrganization: (clientId) => clientOrganizations.of(clientId),
    callback: current.callback,
    pages: pages.node as NodeSurfaceHandler,
  });

  const isPlatformAdmin: PlatformCheck = async (principal: Principal | null) => {
    if (!principal?.organizationId || !principal.permissions.has('AdminAccess')) return false;
    return (await options.organizations.find(principal.organizationId))?.isPlatform === true;
  };

  const routes: Route[] = [
    ...createOrganizationClientRoutes(clients, isPlatformAdmin),
    ...createPlatformClientRoutes(clients, isPlatformAdmin),
    ...createScopeRoutes(clients),
    ...createConsentRoutes(consents, sessionEnd.revokeClientGrants),
    ...createAuthorizeContextRoutes({
      provider: current.provider,
      clients,
      authUrl: settings.authUrl,
      pathPrefix: settings.pathPrefix,
    }),
    ...createUserinfoRoutes(options.verifier, options.resolver, options.directory),
  ];

  return {
    provider: current.provider,
    clients,
    clientLookup: {
      async findClient(clientId) {
        const client = await findStoredClient(clientId);
        return client ? { clientId: client.clientId, organizationId: client.organizationId, status: client.status } : undefined;
      },
    },
    nodeHandler: edge.nodeHandler,
    surfaces: [pages, { name: 'openid-provider', matches: isProviderPath, node: edge.providerHandler }],
    routes,
    events: [OidcSessionEndedEvent],
    handlers: sessionEnd.handlers,
    jobs: [
      // A rotation on any instance reaches this one: the provider is rebuilt with the current key set.
      { name: 'follow signing-key rotation', intervalMs: 60_000, run: current.followRotation },
      { name: 'prune expired provider state', intervalMs: 600_000, run: () => stores.prunePayloads(clock.now()) },
      {
        name: 'prune ended token families',
        intervalMs: 600_000,
        run: () => providerState.pruneFamilies(familyWatermarksForgettableBefore(clock.now(), settings.accessTokenTtlSeconds)),
      },
      {
        name: 'prune grant contexts',
        intervalMs: 3_600_000,
        run: () => providerState.pruneGrantContexts(clock.now()),
      },
    ],
    reloadKeys: current.rebuild,
    endSessions: sessionEnd.endSessions,
    lockout: storeLockout,
    start: () => lockout.load(),
  };
}
