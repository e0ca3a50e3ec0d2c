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
  escapeHtml,
  type JwtVerifier,
  type Logger,
  mediaTypeOf,
  type Principal,
  parseParams,
  type RateLimitDecision,
  type RequestRateLimiter,
  type Route,
  silentLogger,
  systemClock,
} from '@idt/core';
import type { CacheInvalidator, SigningKeyStore, WindowCounter } from '@idt/core/knex';
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
import { OidcSessionEndedEvent } from '../events.js';
import { createAuthorizeContextRoutes } from '../http/routes/authorize-context.js';
import { createOrganizationClientRoutes, createPlatformClientRoutes, type PlatformCheck } from '../http/routes/clients.js';
import { createConsentRoutes } from '../http/routes/consents.js';
import { createScopeRoutes } from '../http/routes/scopes.js';
import { createUserinfoRoutes } from '../http/routes/userinfo.js';
import type { AccountDirectory } from '../interactions/directory.js';
import { ASSETS_BASE, createInteractionHandler, INTERACTION_BASE } from '../interactions/handler.js';
import { pageCsp, renderPage, setProviderAssetsPath } from '../interactions/pages.js';
import { type BackchannelLimits, createBackchannelNotifier } from '../logout/backchannel.js';
import { basicClientId } from '../provider/basic-auth.js';
import { clientMetadata, createOidcProvider, OIDC_ROUTES } from '../provider/create-provider.js';
import { loadOidcProvider } from '../provider/load.js';
import { installProviderMiddleware } from '../provider/middleware.js';
import { createKnexAdapterClass, pruneAdapterPayloads } from './adapter.js';
import { createKnexClientStore } from './client-store.js';
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

const PROVIDER_PATH_SET = new Set(PROVIDER_PATHS);
const PROVIDER_PATH_PREFIXES = PROVIDER_PATHS.map((route) => `${route}/`);

function isProviderPath(path: string): boolean {
  return PROVIDER_PATH_SET.has(path) || PROVIDER_PATH_PREFIXES.some((prefix) => path.startsWith(prefix));
}

/** Whether a path (without the deployment prefix) belongs to the provider or the sign-in pages. */
export function isOidcSurfacePath(path: string): boolean {
  return path.startsWith(`${INTERACTION_BASE}/`) || path.startsWith(`${ASSETS_BASE}/`) || isProviderPath(path);
}

/** The largest form handed to the provider: oidc-provider itself refuses bodies over 56 KiB. */
const MAX_PROVIDER_FORM_BYTES = 56 * 1024;

/** The description of an OAuth error naming what holds text that is not safe to store. */
function unsafeDescription(what: string): string {
  return `${what} contains a NUL character or bytes that are not valid UTF-8.`;
}

/** `undefined` when a query string or form is safe, else the description naming its first unsafe parameter. */
function unsafeParams(text: string): string | undefined {
  try {
    parseParams(text);
    return undefined;
  } catch (error) {
    if (!(error instanceof ValidationProblem)) throw error;
    return unsafeDescription(`The ${Object.keys(error.errors ?? {})[0] ?? 'request'} parameter`);
  }
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
 * refusal, or the request to hand on: `req` itself, or (when the form was
 * read) a copy carrying the buffered body, since oidc-provider reads the
 * stream itself.
 */
function guardProviderRequest(
  req: IncomingMessage,
  rawUrl: string,
): string | IncomingMessage | Promise<string | IncomingMessage> {
  const query = rawUrl.indexOf('?');
  if (decodeComponent(query === -1 ? rawUrl : rawUrl.slice(0, query)) === undefined) {
    return unsafeDescription('The request path');
  }
  const unsafeQuery = query === -1 ? undefined : unsafeParams(rawUrl.slice(query + 1));
  if (unsafeQuery) return unsafeQuery;
  if (!safeBasicCredentials(req.headers.authorization)) return unsafeDescription('The Authorization header');
  if (req.method !== 'POST' || mediaTypeOf(req.headers['content-type']) !== 'application/x-www-form-urlencoded') return req;
  return readProviderForm(req);
}

async function readProviderForm(req: IncomingMessage): Promise<string | IncomingMessage> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req.iterator({ destroyOnReturn: false })) {
    size += (chunk as Buffer).length;
    if (size > MAX_PROVIDER_FORM_BYTES) return 'The request body is too large.';
    chunks.push(chunk as Buffer);
  }
  const body = Buffer.concat(chunks);
  const text = decodeUtf8Strict(body);
  if (text === undefined) return unsafeDescription('The request body');
  return unsafeParams(text) ?? withBody(req, body);
}

/** A request like `req` whose (already consumed) body is `body`, for oidc-provider to read. */
function withBody(req: IncomingMessage, body: Buffer): IncomingMessage {
  const copy = new IncomingMessage(req.socket);
  copy.method = req.method as string;
  copy.url = req.url as string;
  copy.headers = req.headers;
  copy.rawHeaders = req.rawHeaders;
  copy.httpVersionMajor = req.httpVersionMajor;
  copy.httpVersionMinor = req.httpVersionMinor;
  copy.httpVersion = req.httpVersion;
  if (body.byteLength > 0) copy.push(body);
  copy.push(null);
  copy.complete = true;
  return copy;
}

/** Answers 400 `invalid_request` the way oidc-provider words its errors. */
function invalidRequest(res: ServerResponse, description: string): true {
  res.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
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
  const grantContexts = createKnexGrantContextStore(db);
  const knexLockout = createKnexClientLockout({ db, counter: options.counter, invalidator: options.invalidator, clock, logger });
  // Successful client authentications record `lastUsedAt`, at most once a minute per client.
  const clientUse = createThrottle(60_000, clock);
  const lockout = {
    ...knexLockout,
    recordSuccess(clientId: string) {
      if (!clientUse.take(clientId)) return;
      clientStore
        .touch(clientId, clock.now())
        .catch((error: unknown) => logger.warn('recording client use failed', { error, clientId }));
    },
  };
  const Adapter = createKnexAdapterClass({
    db,
    findClient: (id) => clientStore.find(id),
    clientMetadata,
    invalidator: options.invalidator,
    refreshReuseLeewaySeconds: settings.refreshReuseLeewaySeconds,
    clock,
  });
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
    client?.refreshTokenLifetime ??
    (client?.firstParty ? 604_800 : client?.kind === 'application' ? 86_400 : settings.refreshTokenFallbackSeconds);

  // The token endpoint's rate-limit partition is the client's organization: cached, evicted on change.
  const clientOrganizations = createTtlCache<string | null>({ ttlMs: 60_000 });
  options.invalidator.subscribe(CacheNamespaces.clients, (key) =>
    key === '*' ? clientOrganizations.clear() : clientOrganizations.delete(key),
  );
  async function organizationOf(clientId: string) {
    return clientOrganizations.getOrLoad(clientId, async () => (await clientStore.find(clientId))?.organizationId ?? null);
  }

  async function endSessions(filter: { sessionId?: string; userId?: string }, reason: string): Promise<number> {
    const query = db('oidc_payloads').where({ model: 'Session' });
    if (filter.sessionId) query.andWhere({ session_id: filter.sessionId });
    if (filter.userId) query.andWhere({ account_id: filter.userId });
    if (!filter.sessionId && !filter.userId) return 0;
    const rows = (await query.select('id', 'payload', 'session_id', 'account_id')) as Array<{
      id: string;
      payload: string;
      session_id: string | null;
      account_id: string | null;
    }>;
    const now = clock.now().toISOString();
    await db.transaction(async (trx) => {
      for (const row of rows) {
        const payload = JSON.parse(row.payload) as {
          accountId?: string;
          authorizations?: Record<string, { grantId?: string; sid?: string }>;
        };
        const authorizations = payload.authorizations ?? {};
        const grantIds = Object.values(authorizations)
          .map((entry) => entry?.grantId)
          .filter((id): id is string => typeof id === 'string');
        if (grantIds.length) await trx('oidc_payloads').whereIn('grant_id', grantIds).delete();
        await trx('oidc_payloads').where({ model: 'Session', id: row.id }).delete();
        const sessionId = row.session_id ?? Object.values(authorizations).find((entry) => entry?.sid)?.sid;
        const userId = payload.accountId ?? row.account_id;
        if (sessionId && userId) {
          await options.outbox.write(trx, [
            {
              event: OidcSessionEndedEvent,
              payload: { userId, sessionId, clientIds: Object.keys(authorizations).join(' '), reason, endedAt: now },
            },
          ]);
        }
      }
      if (filter.userId && reason === 'deactivated') {
        await trx('oidc_payloads')
          .where({ account_id: filter.userId })
          .whereIn('model', ['RefreshToken', 'Grant', 'AuthorizationCode'])
          .delete();
      }
    });
    return rows.length;
  }

  const logoutSource = async (ctx: Parameters<Parameters<typeof createOidcProvider>[0]['logoutSource']>[0], form: string) => {
    const hinted = Boolean((ctx.oidc.entities as { IdTokenHint?: unknown }).IdTokenHint);
    const confirmed = form.replace('<form ', `<form${hinted ? ' data-autosubmit' : ''} `);
    ctx.set('content-security-policy', pageCsp());
    ctx.set('x-frame-options', 'DENY');
    ctx.body = renderPage(
      { title: 'Sign out', assets, ...(hinted ? { scripts: ['autosubmit.js'] } : {}) },
      `<h1>Sign out?</h1>
<p>You will be signed out of every application that uses ${escapeHtml(new URL(settings.issuer).host)}.</p>
${confirmed.replace('</form>', '<button type="submit" name="logout" value="yes" autofocus>Yes, sign me out</button><button type="submit" class="secondary">No, stay signed in</button></form>')}`,
    );
  };
  const postLogoutSuccessSource = async (
    ctx: Parameters<Parameters<typeof createOidcProvider>[0]['postLogoutSuccessSource']>[0],
  ) => {
    ctx.set('content-security-policy', pageCsp());
    ctx.body = renderPage(
      { title: 'Signed out', assets },
      '<h1>You are signed out</h1><p role="status">You can close this window.</p>',
    );
  };

  const hooks = {
    accountClaims: (userId: string, organizationId: string | null) => options.directory.accountClaims(userId, organizationId),
    grantContext: (grantId: string) => grantContexts.get(grantId),
    cachedGrantContext: (grantId: string) => grantContexts.cached(grantId),
    refreshTokenLifetime: (client: StoredClient | undefined) => refreshTokenLifetime(client),
    async grantStillApplies(
      ctx: Parameters<Parameters<typeof createOidcProvider>[0]['hooks']['grantStillApplies']>[0],
      context: { organizationId: string | null } | undefined,
    ) {
      if (!context) return false;
      const clientId = ctx.oidc.client?.clientId;
      const accountId = ctx.oidc.session?.accountId;
      if (!clientId || !accountId) return false;
      const client = await clientStore.find(clientId);
      if (!client) return false;
      const requested = (ctx.oidc.params?.organization as string | undefined)?.toLowerCase();
      if (client.firstParty && requested) {
        if (requested === 'select') return false;
        if (requested !== 'none' && requested !== context.organizationId) return false;
      }
      const organizationId = client.organizationId ?? context.organizationId;
      if (organizationId) return (await options.directory.membershipState(accountId, organizationId)) === 'active';
      return true;
    },
    async validateOrganizationParameter(_ctx: unknown, value: string | undefined, clientId: string) {
      if (value === undefined) return;
      const { errors } = oidc;
      const client = await clientStore.find(clientId);
      if (!client) return;
      const normalized = value.toLowerCase();
      if (client.organizationId) {
        if (normalized !== client.organizationId)
          throw new errors.InvalidRequest("organization does not match the client's organization");
        return;
      }
      if (!client.firstParty) throw new errors.InvalidRequest('only first-party clients may pass organization');
      if (
        normalized !== 'select' &&
        normalized !== 'none' &&
        !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(normalized)
      ) {
        throw new errors.InvalidRequest('organization must be an organization id');
      }
    },
  };

  let provider: Provider;
  let callback: (req: IncomingMessage, res: ServerResponse) => unknown;
  let keyIds = '';
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
      findClient: (id) => clientStore.find(id),
      accessTokenTtlSeconds: settings.accessTokenTtlSeconds,
      trustProxy: settings.trustProxy,
      logoutSource,
      postLogoutSuccessSource,
      isLocked: (clientId) => lockout.isLocked(clientId),
      clock,
    });
    installProviderMiddleware(provider, {
      lockout,
      assets,
      logger,
      async onLogout(ended) {
        await options
          .endIdentitySession(ended.userId, ended.sessionId)
          .catch((error: unknown) => logger.error('ending the identity session failed', { error, sessionId: ended.sessionId }));
        await db.transaction(async (trx) => {
          // oidc-provider keeps offline-access grants on logout; SPEC 3.2 ends every token of the session.
          if (ended.grantIds.length) await trx('oidc_payloads').whereIn('grant_id', ended.grantIds).delete();
          await options.outbox.write(trx, [
            {
              event: OidcSessionEndedEvent,
              payload: {
                userId: ended.userId,
                sessionId: ended.sessionId,
                clientIds: ended.clientIds.join(' '),
                reason: 'logout',
                endedAt: clock.now().toISOString(),
              },
            },
          ]);
        });
        const targets = [];
        for (const clientId of ended.clientIds) {
          const client = await clientStore.find(clientId);
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
    clients,
    consents,
    grantContexts,
    apiResource,
    pathPrefix: settings.pathPrefix,
    sessionCookie: { name: settings.sessionCookieName },
    trustProxy: settings.trustProxy,
    tokens: options.tokens,
    refreshTokenLifetime: (client) => refreshTokenLifetime(client),
    passwordAttempt: async (email) => (await options.counter.hit(`sign-in:${email}`, 10, 900_000)).allowed,
    clock,
    logger,
  });

  /**
   * Counts a token or authorization request against the `auth` policy of its
   * client's organization (else of its IP); answers 429 itself when refused.
   * Synchronous while the organization is cached and a rate-limit lease holds.
   */
  function rateLimited(req: IncomingMessage, res: ServerResponse, path: string): boolean | Promise<boolean> {
    if (!options.rateLimiter || !(path.startsWith(OIDC_ROUTES.token) || path.startsWith(OIDC_ROUTES.authorization))) return false;
    const clientId = basicClientId(req.headers.authorization);
    if (clientId === undefined) return count(req, res, null);
    const cached = clientOrganizations.get(clientId);
    if (cached !== undefined) return count(req, res, cached);
    return organizationOf(clientId).then(
      (organizationId) => count(req, res, organizationId),
      () => count(req, res, null),
    );
  }

  function count(req: IncomingMessage, res: ServerResponse, organizationId: string | null): boolean | Promise<boolean> {
    const partition = organizationId
      ? `org:${organizationId}`
      : `ip:${clientIpOf(req.headers['x-forwarded-for'], req.socket.remoteAddress, settings.trustProxy) ?? 'unknown'}`;
    const decision = (options.rateLimiter as RequestRateLimiter).hit('auth', partition);
    return 'then' in decision ? decision.then((settled) => refuse(res, settled)) : refuse(res, decision);
  }

  /** Answers 429 when the decision refuses; `true` when it did. */
  function refuse(res: ServerResponse, decision: RateLimitDecision): boolean {
    if (decision.allowed) return false;
    res.writeHead(429, {
      'content-type': 'application/json; charset=utf-8',
      'retry-after': String(decision.retryAfterSeconds),
      'cache-control': 'no-store',
    });
    res.end(
      JSON.stringify({
        error: 'rate_limit_exceeded',
        error_description: `Too many requests; retry in ${decision.retryAfterSeconds} seconds.`,
      }),
    );
    return true;
  }

  /** Takes the provider's requests; answers `false` synchronously for every other path. */
  function nodeHandler(req: IncomingMessage, res: ServerResponse): boolean | Promise<boolean> {
    const rawUrl = req.url ?? '/';
    const query = rawUrl.indexOf('?');
    const pathname = query === -1 ? rawUrl : rawUrl.slice(0, query);
    if (settings.pathPrefix && pathname !== settings.pathPrefix && !pathname.startsWith(`${settings.pathPrefix}/`)) return false;
    const path = pathname.slice(settings.pathPrefix.length) || '/';
    if (path.startsWith('/connect/interaction/') || path.startsWith(`${ASSETS_BASE}/`)) return interactions(req, res);
    if (!isProviderPath(path)) return false;
    return serveProvider(req, res, rawUrl, path);
  }

  function serveProvider(req: IncomingMessage, res: ServerResponse, rawUrl: string, path: string): boolean | Promise<boolean> {
    const guarded = guardProviderRequest(req, rawUrl);
    if (typeof guarded === 'string') return invalidRequest(res, guarded);
    if (guarded instanceof Promise) {
      return guarded.then((checked) =>
        typeof checked === 'string' ? invalidRequest(res, checked) : limitAndMount(checked, res, rawUrl, path),
      );
    }
    return limitAndMount(guarded, res, rawUrl, path);
  }

  function limitAndMount(req: IncomingMessage, res: ServerResponse, rawUrl: string, path: string): boolean | Promise<boolean> {
    const limited = rateLimited(req, res, path);
    if (limited === true) return true;
    if (limited === false) return mount(req, res, rawUrl);
    return limited.then((refused) => refused || mount(req, res, rawUrl));
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
    ...createConsentRoutes(consents, async (userId, clientId) => {
      await db('oidc_payloads')
        .where({ account_id: userId, client_id: clientId })
        .whereIn('model', ['Grant', 'RefreshToken', 'AuthorizationCode'])
        .delete();
    }),
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
        const client = await clientStore.find(clientId);
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
        const client = await clientStore.find(clientId);
        return client ? { clientId: client.clientId, organizationId: client.organizationId, status: client.status } : undefined;
      },
    },
    nodeHandler,
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
        name: 'prune grant contexts',
        intervalMs: 3_600_000,
        run: () => db('oidc_grant_contexts').where('expires_at', '<=', clock.now().toISOString()).delete(),
      },
    ],
    reloadKeys: build,
    endSessions,
    lockout: knexLockout,
    start: () => lockout.load(),
  };
}
