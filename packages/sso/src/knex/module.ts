import {
  type AuditTrail,
  type Clock,
  createSecretBox,
  type EventDefinition,
  type EventOutbox,
  type Logger,
  type OutboundResolver,
  type Route,
  silentLogger,
  systemClock,
} from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import type { SignInFederation } from '@idt/oidc';
import type { Knex } from 'knex';
import { createMetadataFetcher } from '../connections/metadata-source.js';
import { createSsoConnectionsService, type SsoConnectionsService } from '../connections/service.js';
import { createSsoDomainsService, type SsoDomainsService } from '../domains/service.js';
import { createDnsTxtResolver, type TxtResolver } from '../domains/txt-resolver.js';
import { createDomainVerifier } from '../domains/verifier.js';
import { ssoEvents } from '../events.js';
import { createSsoConnectionRoutes } from '../http/connection-routes.js';
import { createSsoDomainRoutes } from '../http/domain-routes.js';
import { createSsoPolicyRoutes } from '../http/policy-routes.js';
import { createSamlRoutes } from '../http/saml-routes.js';
import { createSignInRoutes } from '../http/sign-in-routes.js';
import { createUpstreamOidc, type UpstreamOidc, type UpstreamOidcOptions } from '../oidc/upstream.js';
import { createSsoPolicyService, type SsoPolicyService } from '../policy/service.js';
import type { ReplayCache } from '../saml/replay-cache.js';
import type { RequestCache } from '../saml/request-cache.js';
import { createBegin } from '../sign-in/begin.js';
import { createCallbacks } from '../sign-in/callbacks.js';
import { createSignInFederation } from '../sign-in/federation.js';
import { createRealmRouting } from '../sign-in/home-realm.js';
import { createOutcomeTaking } from '../sign-in/outcomes.js';
import { createProvisioner } from '../sign-in/provisioning.js';
import { createRealmCache } from '../sign-in/realm-cache.js';
import { createKnexConnectionsStore, SSO_SECRET_PURPOSE } from './connections-store.js';
import { createKnexSsoDirectory } from './directory.js';
import { createKnexDomainsStore } from './domains-store.js';
import { createKnexSsoIdentityStore, type SsoIdentityStore } from './identities-store.js';
import { createKnexSsoPolicyStore } from './policy-store.js';
import { createKnexProvisioningStore } from './provisioning-store.js';
import { createKnexRealmStore } from './realm-store.js';
import { createKnexReplayCache, createKnexRequestCache, pruneSamlCaches } from './saml-caches.js';
import { createKnexOutcomeStore, createKnexSignInTransactionStore, pruneSignIns } from './sign-in-store.js';

/** How often expired SAML cache rows are deleted: every ten minutes. */
export const SAML_CACHE_PRUNE_INTERVAL_MS = 10 * 60_000;
/** How often expired sign-in transactions and outcomes are deleted: every ten minutes. */
export const SIGN_IN_PRUNE_INTERVAL_MS = 10 * 60_000;

/** Options of {@link createKnexSso}. */
export interface KnexSsoOptions {
  readonly db: Knex;
  /** The event bus's outbox: the module's events are written in the transaction of each change. */
  readonly outbox: EventOutbox;
  /**
   * The audit trail (`ctx.audit`): connection, domain and policy changes and
   * SSO sign-ins record in their transactions; refused callbacks in small
   * ones of their own. Nothing is recorded without it.
   */
  readonly audit?: Pick<AuditTrail, 'record'>;
  /**
   * The cache invalidator (`ctx.invalidator`): changes evict the sign-in
   * realms on every instance, sign-ins evict identity's membership caches.
   */
  readonly invalidator: CacheInvalidator;
  /** The server secret (`ctx.secret`): client secrets are sealed under a key derived from it. */
  readonly secret: string;
  /** The public base URL, prefix included: SAML entity ids, ACS and callback URLs are under it. */
  readonly publicBaseUrl: string;
  /** Fetch IdP metadata from, and accept issuers on, loopback and private hosts over http (local demos and tests). */
  readonly allowPrivateHosts: boolean;
  /** The DNS servers domain verification asks (`IDT_SSO_DNS_SERVERS`); the system's by default. */
  readonly dnsServers?: readonly string[];
  /** The TXT resolver; a node:dns one over {@link dnsServers} by default. */
  readonly txtResolver?: TxtResolver;
  /** Resolves metadata hosts; the system resolver by default. */
  readonly resolve?: OutboundResolver;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Options of the OpenID relying party (tests shorten deadlines); `allowPrivateHosts`, `clock` and `resolve` come from above. */
  readonly upstream?: Omit<UpstreamOidcOptions, 'allowPrivateHosts' | 'clock' | 'resolve'>;
}

/** The sso module on knex: services, stores, routes, events and jobs. */
export interface KnexSso {
  readonly connections: SsoConnectionsService;
  readonly domains: SsoDomainsService;
  /** Organizations' `ssoRequired`. */
  readonly policies: SsoPolicyService;
  /** Federation as the sign-in pipeline uses it (what the module puts in oidc's slot). */
  readonly federation: SignInFederation;
  /** The OpenID relying party of `oidc` connections (its discovery cache). */
  readonly upstream: UpstreamOidc;
  /** Linked identities, for the sign-in pipeline. */
  readonly identities: SsoIdentityStore;
  /** The shared SAML replay cache (`sso_saml_replays`). */
  readonly replayCache: ReplayCache;
  /** The shared SAML request cache (`sso_saml_requests`). */
  readonly requestCache: RequestCache;
  readonly routes: readonly Route[];
  readonly events: readonly EventDefinition<any>[];
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly intervalMs: number; run(): Promise<unknown> }>;
}

/**
 * Wires the sso module over a knex database (migrations: `ssoMigrations`,
 * after `@idt/core` and `@idt/identity`).
 *
 * @example
 * const sso = createKnexSso({ db, outbox: bus, invalidator, secret, publicBaseUrl, allowPrivateHosts: false });
 * slot.current = sso.federation;
 * routes.push(...sso.routes);
 */
export function createKnexSso(options: KnexSsoOptions): KnexSso {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const { outbox, invalidator } = options;
  const audit = options.audit ? { audit: options.audit } : {};
  const directory = createKnexSsoDirectory(db);
  const replayCache = createKnexReplayCache({ db, clock });
  const requestCache = createKnexRequestCache({ db, clock });
  const connections = createSsoConnectionsService({
    store: createKnexConnectionsStore({
      db,
      outbox,
      invalidator,
      box: createSecretBox(options.secret, SSO_SECRET_PURPOSE),
      ...audit,
    }),
    directory,
    publicBaseUrl: options.publicBaseUrl,
    fetchMetadata: createMetadataFetcher({
      allowPrivateHosts: options.allowPrivateHosts,
      ...(options.resolve ? { resolve: options.resolve } : {}),
    }),
    allowPrivateHosts: options.allowPrivateHosts,
    clock,
  });
  const resolver =
    options.txtResolver ??
    createDnsTxtResolver(options.dnsServers && options.dnsServers.length > 0 ? { servers: options.dnsServers } : {});
  const domains = createSsoDomainsService({
    store: createKnexDomainsStore({ db, outbox, invalidator, ...audit }),
    directory,
    verifier: createDomainVerifier({ resolver }),
    clock,
  });
  const policies = createSsoPolicyService({
    store: createKnexSsoPolicyStore({ db, outbox, invalidator, ...audit }),
    directory,
    clock,
  });

  const upstream = createUpstreamOidc({
    ...options.upstream,
    allowPrivateHosts: options.allowPrivateHosts,
    clock,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  const realms = createRealmCache({
    store: createKnexRealmStore(db),
    subscribe: (namespace, listener) => invalidator.subscribe(namespace, listener),
    isLive: () => invalidator.isLive(),
    clock,
  });
  const organizationName = async (organizationId: string) => {
    const row = await db('identity_organizations').where({ id: organizationId }).first('name');
    return row ? String(row.name) : null;
  };
  const transactions = createKnexSignInTransactionStore({ db, clock });
  const outcomes = createKnexOutcomeStore({ db, clock });
  const provisioner = createProvisioner({
    store: createKnexProvisioningStore({ db, outbox, invalidator, ...audit }),
    findConnection: (id) => connections.find(id),
    organizationName,
    clock,
  });
  const signInLogger = logger.child({ module: 'sso' });
  const federation = createSignInFederation(
    createRealmRouting(realms),
    createBegin({
      connections,
      upstream,
      transactions,
      replayCache,
      requestCache,
      origin: new URL(options.publicBaseUrl).origin,
      organizationName,
      logger: signInLogger,
      clock,
    }),
    createOutcomeTaking({ outcomes, provisioner, logger: signInLogger, clock }),
  );
  const callbacks = createCallbacks({
    connections,
    upstream,
    transactions,
    provisioner,
    replayCache,
    requestCache,
    organizationName,
    publicBaseUrl: options.publicBaseUrl,
    logger: signInLogger,
    clock,
  });

  return {
    connections,
    domains,
    policies,
    federation,
    upstream,
    identities: createKnexSsoIdentityStore(db),
    replayCache,
    requestCache,
    routes: [
      ...createSsoConnectionRoutes(connections),
      ...createSsoDomainRoutes(domains),
      ...createSsoPolicyRoutes(policies),
      ...createSamlRoutes({ connections, clock, replayCache, requestCache }),
      ...createSignInRoutes(callbacks),
    ],
    events: [...ssoEvents],
    jobs: [
      {
        name: 'sso.saml-caches.prune',
        intervalMs: SAML_CACHE_PRUNE_INTERVAL_MS,
        run: () => pruneSamlCaches(db, clock.now()),
      },
      {
        name: 'sso.sign-ins.prune',
        intervalMs: SIGN_IN_PRUNE_INTERVAL_MS,
        run: () => pruneSignIns(db, clock.now()),
      },
    ],
  };
}
