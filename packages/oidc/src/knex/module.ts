import { IncomingMessage, type ServerResponse } from 'node:http';
import {
  type Clock,
  type CredentialResolver,
  clientIpOf,
  createThrottle,
  createTtlCache,
  decodeComponent,
  decodeUtf8Strict,
  defineEventHandler,
  type EventDefinition,
  type EventHandlerDefinition,
  type EventOutbox,
  type JwtVerifier,
  type Logger,
  type ModuleSurface,
  mediaTypeOf,
  type NodeSurfaceHandler,
  type Principal,
  parseParams,
  pathsUnder,
  type RateLimitDecision,
  type RequestRateLimiter,
  type Route,
  silentLogger,
  systemClock,
  verifyBearerToken,
} from '@idt/core';
import { type CacheInvalidator, evictFrom, type SigningKeyStore, type WindowCounter } from '@idt/core/knex';
import {
  CacheNamespaces,
  type ClientLookup,
  type TokenMac,
  UserDeactivatedEvent,
  UserSessionEvictedEvent,
  UserSessionRevokedEvent,
} from '@idt/identity';
import { ValidationProblem } from '@idt/problem';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { type ClientService, createClientService } from '../clients/service.js';
import type { OrganizationDirectory, StoredClient } from '../clients/store.js';
import { OidcSessionEndedEvent, sessionEnded } from '../events.js';
import { createAuthorizeContextRoutes } from '../http/routes/authorize-context.js';
import { createOrganizationClientRoutes, createPlatformClientRoutes, type PlatformCheck } from '../http/routes/clients.js';
import { createConsentRoutes } from '../http/routes/consents.js';
import { createScopeRoutes } from '../http/routes/scopes.js';
import { createUserinfoRoutes } from '../http/routes/userinfo.js';
import { ACCOUNT_BASE, type AccountServices, createAccountPages } from '../interactions/account.js';
import type { AccountDirectory } from '../interactions/directory.js';
import { ASSETS_BASE, createInteractionHandler, INTERACTION_BASE } from '../interactions/handler.js';
import { createLogoutPages } from '../interactions/logout-pages.js';
import { pageSurface } from '../interactions/page-request.js';
import { createProviderErrorRenderer, setProviderAssetsPath } from '../interactions/pages.js';
import { type BackchannelLimits, createBackchannelNotifier } from '../logout/backchannel.js';
import { createAccessTokenIntrospection } from '../policy/access-token-introspection.js';
import { createFamilyRevocation, familyWatermarksForgettableBefore } from '../policy/family-revocation.js';
import { grantStillApplies, organizationHintError } from '../policy/organization.js';
import { rateLimitRefusal } from '../policy/rate-limit-refusal.js';
import { authLimitedEndpoint, authPartition, createClientOrganizations, requestClientId } from '../policy/rate-partition.js';
import { refreshTokenLifetime as refreshTokenLifetimeOf } from '../policy/refresh-lifetime.js';
import { createSuccessorDerivation } from '../policy/refresh-rotation.js';
import { createSignInLockout } from '../policy/sign-in-lockout.js';
import { clientMetadata, createOidcProvider, OIDC_ROUTES } from '../provider/create-provider.js';
import { loadOidcProvider } from '../provider/load.js';
import { installProviderMiddleware, NO_STORE_HEADERS } from '../provider/middleware.js';
import {
  CLIENT_CACHE_IDLE_MS,
  CLIENT_CACHE_MAX,
  CLIENT_CACHE_TTL_MS,
  createKnexAdapterClass,
  pruneAdapterPayloads,
} from './adapter.js';
import { createKnexClientStore } from './client-store.js';
import { createKnexProviderStateStore } from './provider-state-store.js';
import {
  createKnexClientLockout,
  createKnexConsentStore,
  createKnexGrantContextStore,
  type KnexClientLockout,
} from './stores.js';

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

/** Options of {@link createKnexOidc}. */
export interface KnexOidcOptions {
  readonly db: Knex;
  readonly settings: OidcSettings;
  readonly keys: SigningKeyStore;
  /** The server secret (cookie keys are derived from it). */
  readonly secret: string;
  readonly tokens: TokenMac;
  readonly invalidator: CacheInvalidator;
  readonly counter: WindowCounter;
  readonly outbox: EventOutbox;
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
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The OpenID provider module on knex. */
export interface KnexOidc {
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
  readonly events: readonly EventDefinition<any>[];
  readonly handlers: readonly EventHandlerDefinition<any>[];
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly intervalMs: number; run(): Promise<unknown> }>;
  /** Rebuilds the provider with the current signing keys (after a rotation). */
  reloadKeys(): Promise<void>;
  /** Ends provider sessions (and their grants) of an identity session or of a user, and queues back-channel logout. */
  endSessions(filter: { sessionId?: string; userId?: string }, reason: string): Promise<number>;
  /** The invalid-client lockout (SPEC 8.2), read-only: whether a client is locked, and its bounded memory. */
  readonly lockout: Pick<KnexClientLockout, 'isLocked' | 'unknownClientsTracked'>;
  /** Loads lockouts from the database; call once at start. */
  start(): Promise<void>;
}

const PROVIDER_PATHS = [
  OIDC_ROUTES.authorization,
  OIDC_ROUTES.token,
  OIDC_ROUTES.end_session,
  OIDC_ROUTES.revocation,
  OIDC_ROUTES.introspection,
  OIDC_ROUTES.pushed_authorization_request,
  OIDC_ROUTES.jwks,
  '/.well-known/openid-configuration',
];

const isProviderPath = pathsUnder(PROVIDER_PATHS);
const isAccountPath = pathsUnder([ACCOUNT_BASE]);

const INTERACTION_PREFIX = `${INTERACTION_BASE}/`;
const ASSETS_PREFIX = `${ASSETS_BASE}/`;

/** Whether a path (without the deployment prefix) belongs to the sign-in or account pages. */
function isPagePath(path: string): boolean {
  return path.startsWith(INTERACTION_PREFIX) || path.startsWith(ASSETS_PREFIX) || isAccountPath(path);
}

/** Whether a path (without the deployment prefix) belongs to the provider or the sign-in pages. */
export function isOidcSurfacePath(path: string): boolean {
  return isPagePath(path) || isProviderPath(path);
}

/** The largest form handed to the provider: oidc-provider itself refuses bodies over 56 KiB. */
const MAX_PROVIDER_FORM_BYTES = 56 * 1024;

/** The description of an OAuth error naming what holds text that is not safe to store. */
function unsafeDescription(what: string): string {
  return `${what} contains a NUL character or bytes that are not valid UTF-8.`;
}

/** Parsed query or form parameters (a repeated name is an array). */
type Params = Record<string, string | string[]>;

/** The parameters of a query string or form when it is safe, else the description naming its first unsafe parameter. */
function checkParams(text: string): Params | string {
  try {
    return parseParams(text);
  } catch (error) {
    if (!(error instanceof ValidationProblem)) throw error;
    return unsafeDescription(`The ${Object.keys(error.errors ?? {})[0] ?? 'request'} parameter`);
  }
}

/** A provider request that passed the guard, with what the guard parsed of it. */
interface GuardedRequest {
  /** `req` itself, or (when the form was read) a copy carrying the buffered body: oidc-provider reads the stream itself. */
  readonly req: IncomingMessage;
  readonly query: Params | undefined;
  /** The URL-encoded form body, read and parsed once here; the rate limiter reads its `client_id`. */
  readonly form: Params | undefined;
  /** The form body's text (checked UTF-8), when the form was read. */
  readonly formText?: string;
}

/** Whether HTTP Basic client credentials (form-encoded, then Base64) decode to safe text. */
function safeBasicCredentials(header: string | undefined): boolean {
  const match = header ? /^Basic\s+(\S+)\s*$/i.exec(header) : null;
  if (!match?.[1]) return true;
  const decoded = decodeUtf8Strict(Buffer.from(match[1], 'base64'));
  if (decoded === undefined) return false;
  return decoded.split(':').every((part) => decodeComponent(part.replace(/\+/g, ' ')) !== undefined);
}

/**
 * Checks a provider request's path, query, Basic credentials and form body
 * for NUL characters and bytes that are not valid UTF-8, before oidc-provider
 * and the database see them. Answers the OAuth error description of a
 * refusal, or the request to hand on with its parsed query and form.
 */
function guardProviderRequest(req: IncomingMessage, rawUrl: string): string | GuardedRequest | Promise<string | GuardedRequest> {
  const index = rawUrl.indexOf('?');
  if (decodeComponent(index === -1 ? rawUrl : rawUrl.slice(0, index)) === undefined) {
    return unsafeDescription('The request path');
  }
  const query = index === -1 ? undefined : checkParams(rawUrl.slice(index + 1));
  if (typeof query === 'string') return query;
  if (!safeBasicCredentials(req.headers.authorization)) return unsafeDescription('The Authorization header');
  if (req.method !== 'POST' || mediaTypeOf(req.headers['content-type']) !== 'application/x-www-form-urlencoded') {
    return { req, query, form: undefined };
  }
  return readProviderForm(req, query);
}

/**
 * Reads the form body (up to oidc-provider's own limit) and checks it. Events
 * rather than an async iterator: this runs on every token request. On a body
 * that is too large the request is paused unread; Node drains it after the
 * answer.
 */
function readProviderForm(req: IncomingMessage, query: Params | undefined): Promise<string | GuardedRequest> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PROVIDER_FORM_BYTES) {
        settle();
        req.pause();
        resolve('The request body is too large.');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      settle();
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      const text = decodeUtf8Strict(body);
      if (text === undefined) return resolve(unsafeDescription('The request body'));
      const form = checkParams(text);
      resolve(typeof form === 'string' ? form : { req: withBody(req, body), query, form, formText: text });
    };
    const onError = (error: Error) => {
      settle();
      reject(error);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * A request like `req` whose (already consumed) body is `body`, for
 * oidc-provider to read. The provider reads a body through
 * `req.iterator()`, so the copy answers that with the buffered bytes instead
 * of streaming them through a second Readable.
 */
function withBody(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method as string;
  copy.url = req.url as string;
  copy.headers = req.headers;
  copy.rawHeaders = req.rawHeaders;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.httpVersion = req.httpVersion;
  copy.complete = true;
  copy.iterator = (() => bufferedIterator(body)) as IncomingMessage['iterator'];
  return copy;
}

/** The endpoints OpenID Connect requires to take GET and POST alike. */
const GET_OR_POST_PATHS: ReadonlySet<string> = new Set([OIDC_ROUTES.authorization, OIDC_ROUTES.end_session]);

/**
 * A POST to the authorization or end-session endpoint as the GET
 * oidc-provider serves (OpenID Connect Core 3.1.2.1 and RP-Initiated Logout
 * 1.0 section 2: each takes both): the form body,
 * already read and checked by the guard, becomes the query; the URL's own
 * query is dropped, as the parameters of a POST are its form's. Every check
 * of a GET then applies unchanged (PKCE, redirect URI, organization hint,
 * response mode, interactions and cookies). A POST without a form carries
 * no parameters. oidc-provider's own POST route would need the single
 * sign-on cookie to be `SameSite=None`; it stays `Lax`, so a cross-site POST
 * arrives without it and the person signs in again.
 */
function postAsGet(request: GuardedRequest, pathname: string): { request: GuardedRequest; rawUrl: string } {
  const { req } = request;
  const rawUrl = request.formText ? `${pathname}?${request.formText}` : pathname;
  const copy = new IncomingMessage(req.socket);
  copy.method = 'GET';
  copy.url = rawUrl;
  const { 'content-type': _type, 'content-length': _length, 'transfer-encoding': _encoding, ...headers } = req.headers;
  copy.headers = headers;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.httpVersion = req.httpVersion;
  copy.complete = true;
  copy.iterator = (() => bufferedIterator(Buffer.alloc(0))) as IncomingMessage['iterator'];
  return { request: { req: copy, query: request.form, form: undefined }, rawUrl };
}

/** An async iterator of one chunk: what `Readable.iterator()` gives for a buffered body, without an async generator. */
function bufferedIterator(body: Buffer): AsyncIterableIterator<Buffer> {
  let done = body.byteLength === 0;
  const iterator: AsyncIterableIterator<Buffer> = {
    [Symbol.asyncIterator]: () => iterator,
    next() {
      if (done) return Promise.resolve({ done: true, value: undefined });
      done = true;
      return Promise.resolve({ done: false, value: body });
    },
    return() {
      done = true;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return iterator;
}

/** Answers 400 `invalid_request` the way oidc-provider words its errors. */
function invalidRequest(res: ServerResponse, description: string): true {
  res.writeHead(400, { 'content-type': 'application/json; charset=utf-8', ...NO_STORE_HEADERS });
  res.end(JSON.stringify({ error: 'invalid_request', error_description: description }));
  return true;
}

/**
 * Wires the OpenID provider: oidc-provider with the knex adapter, the
 * clients service and its routes, the sign-in pages, userinfo, logout with
 * front- and back-channel notification, and the invalid-client lockout.
 */
export async function createKnexOidc(options: KnexOidcOptions): Promise<KnexOidc> {
  const { db, settings } = options;
  const oidc = await loadOidcProvider();
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const apiResource = settings.issuer;
  const assets = `${settings.pathPrefix}${ASSETS_BASE}`;
  setProviderAssetsPath(assets);

  const clientStore = createKnexClientStore(db, options.invalidator);
  const clients = createClientService({
    store: clientStore,
    organizations: options.organizations,
    issuer: settings.issuer,
    apiBaseUrl: settings.issuer,
    clock,
  });
  const consents = createKnexConsentStore(db);
  // Client records for the sign-in, consent, logout and account pages and the provider's hooks: one read
  // per client, kept until the client changes (any instance evicts).
  const storedClients = createTtlCache<StoredClient | null>({
    ttlMs: CLIENT_CACHE_TTL_MS,
    idleMs: CLIENT_CACHE_IDLE_MS,
    max: CLIENT_CACHE_MAX,
  });
  options.invalidator.subscribe(CacheNamespaces.clients, evictFrom(storedClients));
  const findStoredClient = async (clientId: string): Promise<StoredClient | undefined> =>
    (await storedClients.getOrLoad(clientId, async () => (await clientStore.find(clientId)) ?? null)) ?? undefined;
  const grantContexts = createKnexGrantContextStore(db);
  const knexLockout = createKnexClientLockout({ db, counter: options.counter, invalidator: options.invalidator, clock, logger });
  // Successful client authentications record `lastUsedAt`, at most once a minute per client.
  const clientUse = createThrottle(60_000, clock);
  const lockout = {
    ...knexLockout,
    recordSuccess(clientId: string) {
      if (clientUse.take(clientId)) {
        clientStore
          .touch(clientId, clock.now())
          .catch((error: unknown) => logger.warn('recording client use failed', { error, clientId }));
      }
      return knexLockout.recordSuccess(clientId);
    },
  };
  const Adapter = createKnexAdapterClass({
    db,
    // The provider keeps the instances (patches.ts) and the rate partition the organization: records of
    // 10,000 clients calling tokens need not stay in memory beside them, nor their metadata.
    findClient: (id) => clientStore.find(id),
    clientMetadata,
    providerKeepsClients: true,
    invalidator: options.invalidator,
    clock,
    // oidc-provider's AsyncLocalStorage: the request it is serving, if any.
    currentRequest: () => (oidc.Provider as unknown as { readonly ctx?: object }).ctx,
    // A rotation's consumption is written with its successor; the provider middleware settles the rest.
    deferConsumption: true,
  });
  const providerState = createKnexProviderStateStore(db, options.invalidator, options.outbox);
  const familyRevocation = createFamilyRevocation({ refuseAccessTokens: providerState.refuseAccessTokens, clock });
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
      return key.privateJwk as never;
    },
  });

  const refreshTokenLifetime = (client: StoredClient | undefined) =>
    refreshTokenLifetimeOf(client, settings.refreshTokenFallbackSeconds);

  // The Auth rate-limit partition is the client's organization: remembered, evicted on change.
  const clientOrganizations = createClientOrganizations({ find: (clientId) => clientStore.find(clientId), clock });
  options.invalidator.subscribe(CacheNamespaces.clients, (key) => clientOrganizations.evict(key));

  async function endSessions(filter: { sessionId?: string; userId?: string }, reason: string): Promise<number> {
    const sessions = await providerState.findSessions(filter);
    // A deactivated user's offline grants end too, not only those of the user's sessions.
    const userGrants = filter.userId && reason === 'deactivated' ? await providerState.grantIdsOf(filter.userId) : [];
    if (!sessions.length && !userGrants.length) return 0;
    const endedAt = clock.now();
    await providerState.end(
      {
        sessions,
        grantIds: [...sessions.flatMap((session) => session.grantIds), ...userGrants],
        events: sessions
          .filter((session) => session.userId && session.sessionId)
          .map((session) =>
            sessionEnded(session.userId as string, session.sessionId as string, session.clientIds, reason, endedAt),
          ),
      },
      endedAt,
    );
    return sessions.length;
  }

  const logoutPages = createLogoutPages({ assets, issuer: settings.issuer });

  const hooks = {
    accountClaims: (userId: string, organizationId: string | null) => options.directory.accountClaims(userId, organizationId),
    grantContext: (grantId: string) => grantContexts.get(grantId),
    cachedGrantContext: (grantId: string) => grantContexts.cached(grantId),
    refreshTokenLifetime: (client: StoredClient | undefined) => refreshTokenLifetime(client),
    async grantStillApplies(
      ctx: Parameters<Parameters<typeof createOidcProvider>[0]['hooks']['grantStillApplies']>[0],
      context: { organizationId: string | null } | undefined,
    ) {
      const clientId = ctx.oidc.client?.clientId;
      const accountId = ctx.oidc.session?.accountId;
      const client = context && clientId && accountId ? await findStoredClient(clientId) : undefined;
      if (!context || !client || !accountId) return false;
      const hint = ctx.oidc.params?.organization as string | undefined;
      return grantStillApplies(client, accountId, hint, context.organizationId, options.directory);
    },
    async validateOrganizationParameter(_ctx: unknown, value: string | undefined, clientId: string) {
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

  let provider: Provider;
  let callback: (req: IncomingMessage, res: ServerResponse) => unknown;
  let keyIds = '';
  let stopClientInstances: (() => void) | undefined;
  async function build() {
    const keys = (await options.keys.listKeys()).sort((a, b) => (a.status === b.status ? 0 : a.status === 'active' ? -1 : 1));
    keyIds = keys.map((key) => `${key.kid}:${key.status}`).join(',');
    provider = createOidcProvider({
      oidc,
      issuer: settings.issuer,
      apiResource,
      authUrl: `${settings.authUrl}`,
      keys,
      secret: options.secret,
      adapter: Adapter,
      hooks: hooks as never,
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
      async onLogout(ended) {
        await options
          .endIdentitySession(ended.userId, ended.sessionId)
          .catch((error: unknown) => logger.error('ending the identity session failed', { error, sessionId: ended.sessionId }));
        // oidc-provider keeps offline-access grants on logout; SPEC 3.2 ends every token of the session.
        const endedAt = clock.now();
        await providerState.end(
          {
            sessions: [],
            grantIds: ended.grantIds,
            events: [sessionEnded(ended.userId, ended.sessionId, ended.clientIds, 'logout', endedAt)],
          },
          endedAt,
        );
        const targets = [];
        for (const clientId of ended.clientIds) {
          const client = await findStoredClient(clientId);
          if (client?.frontchannelLogoutUri) targets.push({ clientId, frontchannelLogoutUri: client.frontchannelLogoutUri });
        }
        return targets;
      },
    });
    provider.on('server_error', (_ctx: unknown, error: unknown) => logger.error('OpenID provider error', { error }));
    callback = provider.callback();
  }
  await build();

  const interactions = createInteractionHandler({
    provider: () => provider,
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
    clock,
    logger,
  });

  /** Withdrawing consent ends the client's token families for the user: refresh tokens, codes and access tokens. */
  async function revokeClientGrants(userId: string, clientId: string): Promise<void> {
    const grantIds = await providerState.grantIdsOf(userId, clientId);
    if (grantIds.length) await providerState.end({ sessions: [], grantIds, events: [] }, clock.now());
  }

  const accountPages = options.account
    ? createAccountPages({
        directory: options.directory,
        consents,
        account: options.account,
        revokeClientGrants,
        findClient: findStoredClient,
        sessionCookieName: settings.sessionCookieName,
        tokens: options.tokens,
        pathPrefix: settings.pathPrefix,
        ...(options.accountSignInUrl ? { signInUrl: options.accountSignInUrl } : {}),
        logger,
      })
    : undefined;

  /**
   * Counts a provider request against the `auth` policy (SPEC 8.1) in the
   * partition `policy/rate-partition.ts` decides, and answers the refusal of
   * `policy/rate-limit-refusal.ts` itself. Synchronous while the client's
   * organization is remembered and a rate-limit lease holds.
   */
  function rateLimited(request: GuardedRequest, res: ServerResponse, path: string): boolean | Promise<boolean> {
    const endpoint = options.rateLimiter ? authLimitedEndpoint(path) : undefined;
    if (!endpoint) return false;
    const { req } = request;
    const clientId = requestClientId({
      endpoint,
      method: req.method,
      authorization: req.headers.authorization,
      query: request.query,
      form: request.form,
    });
    const organizationId = clientId === undefined ? null : clientOrganizations.of(clientId);
    if (organizationId instanceof Promise) return organizationId.then((resolved) => count(req, res, resolved));
    return count(req, res, organizationId);
  }

  function count(req: IncomingMessage, res: ServerResponse, organizationId: string | null): boolean | Promise<boolean> {
    const ip = clientIpOf(req.headers['x-forwarded-for'], req.socket.remoteAddress, settings.trustProxy);
    const decision = (options.rateLimiter as RequestRateLimiter).hit('auth', authPartition({ organizationId, ip }));
    return 'then' in decision ? decision.then((settled) => refuse(req, res, settled)) : refuse(req, res, decision);
  }

  /** Sends the refusal when the decision refuses; `true` when it did. */
  function refuse(req: IncomingMessage, res: ServerResponse, decision: RateLimitDecision): boolean {
    if (decision.allowed) return false;
    const traceparent = req.headers.traceparent;
    const refusal = rateLimitRefusal(decision, typeof traceparent === 'string' ? traceparent : undefined);
    res.writeHead(refusal.status, refusal.headers);
    res.end(JSON.stringify(refusal.body));
    return true;
  }

  const accountBase = `${settings.pathPrefix}${ACCOUNT_BASE}`;
  const pages = pageSurface('sign-in-pages', isPagePath, (request) => {
    const pathname = request.url.pathname;
    if (pathname === accountBase || pathname.startsWith(`${accountBase}/`)) {
      return accountPages ? accountPages(request) : Promise.resolve(undefined);
    }
    return interactions(request);
  });
  const servePages = pages.node as NodeSurfaceHandler;

  const prefixSlash = `${settings.pathPrefix}/`;
  /** Takes the provider's requests; answers `false` synchronously for every other path. */
  function nodeHandler(req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> {
    const rawUrl = req.url ?? '/';
    const query = rawUrl.indexOf('?');
    const pathname = query === -1 ? rawUrl : rawUrl.slice(0, query);
    if (settings.pathPrefix && pathname !== settings.pathPrefix && !pathname.startsWith(prefixSlash)) return false;
    const path = pathname.slice(settings.pathPrefix.length) || '/';
    if (isPagePath(path)) return servePages(req, res);
    if (!isProviderPath(path)) return false;
    return serveProvider(req, res, rawUrl, pathname, path);
  }

  /** oidc-provider's endpoints: the node surface behind the pages. */
  function providerHandler(req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> {
    const rawUrl = req.url ?? '/';
    const query = rawUrl.indexOf('?');
    const pathname = query === -1 ? rawUrl : rawUrl.slice(0, query);
    if (settings.pathPrefix && pathname !== settings.pathPrefix && !pathname.startsWith(prefixSlash)) return false;
    const path = pathname.slice(settings.pathPrefix.length) || '/';
    if (!isProviderPath(path)) return false;
    return serveProvider(req, res, rawUrl, pathname, path);
  }

  function serveProvider(
    req: IncomingMessage,
    res: ServerResponse,
    rawUrl: string,
    pathname: string,
    path: string,
  ): boolean | Promise<boolean> {
    const guarded = guardProviderRequest(req, rawUrl);
    if (typeof guarded === 'string') return invalidRequest(res, guarded);
    if (guarded instanceof Promise) {
      return guarded.then((checked) =>
        typeof checked === 'string' ? invalidRequest(res, checked) : limitAndMount(checked, res, rawUrl, pathname, path),
      );
    }
    return limitAndMount(guarded, res, rawUrl, pathname, path);
  }

  function limitAndMount(
    request: GuardedRequest,
    res: ServerResponse,
    rawUrl: string,
    pathname: string,
    path: string,
  ): boolean | Promise<boolean> {
    if (request.req.method === 'POST' && GET_OR_POST_PATHS.has(path)) {
      const asGet = postAsGet(request, pathname);
      return limitAndMount(asGet.request, res, asGet.rawUrl, pathname, path);
    }
    const limited = rateLimited(request, res, path);
    if (limited === true) return true;
    if (limited === false) return mount(request.req, res, rawUrl);
    return limited.then((refused) => refused || mount(request.req, res, rawUrl));
  }

  /** Hands a request to oidc-provider, its URL relative to the mount point. */
  async function mount(req: IncomingMessage, res: ServerResponse, rawUrl: string): Promise<boolean> {
    const mounted = req as IncomingMessage & { originalUrl?: string };
    mounted.originalUrl = rawUrl;
    mounted.url = rawUrl.slice(settings.pathPrefix.length) || '/';
    await callback(req, res);
    return true;
  }

  const isPlatformAdmin: PlatformCheck = async (principal: Principal | null) => {
    if (!principal?.organizationId || !principal.permissions.has('AdminAccess')) return false;
    return (await options.organizations.find(principal.organizationId))?.isPlatform === true;
  };

  const routes: Route[] = [
    ...createOrganizationClientRoutes(clients, isPlatformAdmin),
    ...createPlatformClientRoutes(clients, isPlatformAdmin),
    ...createScopeRoutes(clients),
    ...createConsentRoutes(consents, revokeClientGrants),
    ...createAuthorizeContextRoutes({
      provider: () => provider,
      clients,
      authUrl: settings.authUrl,
      pathPrefix: settings.pathPrefix,
    }),
    ...createUserinfoRoutes(options.verifier, options.resolver, options.directory),
  ];

  const backchannelHandler = defineEventHandler({
    name: 'oidc.backchannel-logout',
    module: 'oidc',
    event: OidcSessionEndedEvent,
    description: 'Delivers logout+jwt tokens to the back-channel logout URIs of the clients that took part in the session.',
    async handle({ payload }) {
      const targets = [];
      for (const clientId of payload.clientIds.split(' ').filter(Boolean)) {
        const client = await findStoredClient(clientId);
        if (client?.backchannelLogoutUri) targets.push({ clientId, backchannelLogoutUri: client.backchannelLogoutUri });
      }
      if (targets.length) await backchannel.notify(targets, payload.userId, payload.sessionId);
    },
  });

  const sessionEndHandlers = [
    defineEventHandler({
      name: 'oidc.end-evicted-session',
      module: 'oidc',
      event: UserSessionEvictedEvent,
      description: 'Ends the single sign-on session of an evicted session: grants revoked, clients notified.',
      handle: async ({ payload }) => void (await endSessions({ sessionId: payload.sessionId }, 'evicted')),
    }),
    defineEventHandler({
      name: 'oidc.end-revoked-session',
      module: 'oidc',
      event: UserSessionRevokedEvent,
      description: 'Ends the single sign-on session of a revoked session: grants revoked, clients notified.',
      handle: async ({ payload }) => void (await endSessions({ sessionId: payload.sessionId }, payload.reason)),
    }),
    defineEventHandler({
      name: 'oidc.end-deactivated-user-sessions',
      module: 'oidc',
      event: UserDeactivatedEvent,
      description: "Ends every single sign-on session of a deactivated user and revokes the user's refresh tokens.",
      handle: async ({ payload }) => void (await endSessions({ userId: payload.userId }, 'deactivated')),
    }),
  ];

  return {
    provider: () => provider,
    clients,
    clientLookup: {
      async findClient(clientId) {
        const client = await findStoredClient(clientId);
        return client ? { clientId: client.clientId, organizationId: client.organizationId, status: client.status } : undefined;
      },
    },
    nodeHandler,
    surfaces: [pages, { name: 'openid-provider', matches: isProviderPath, node: providerHandler }],
    routes,
    events: [OidcSessionEndedEvent],
    handlers: [backchannelHandler, ...sessionEndHandlers],
    jobs: [
      {
        // A rotation on any instance reaches this one: the provider is rebuilt with the current key set.
        name: 'follow signing-key rotation',
        intervalMs: 60_000,
        run: async () => {
          const current = (await options.keys.listKeys())
            .sort((a, b) => (a.status === b.status ? 0 : a.status === 'active' ? -1 : 1))
            .map((key) => `${key.kid}:${key.status}`)
            .join(',');
          if (current !== keyIds) await build();
        },
      },
      { name: 'prune expired provider state', intervalMs: 600_000, run: () => pruneAdapterPayloads(db, clock.now()) },
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
    reloadKeys: build,
    endSessions,
    lockout: knexLockout,
    start: () => lockout.load(),
  };
}
