import {
  type Clock,
  createSecretBox,
  type EventDefinition,
  type EventOutbox,
  type OutboundResolver,
  type Route,
  systemClock,
} from '@idt/core';
import type { Knex } from 'knex';
import { createMetadataFetcher } from '../connections/metadata-source.js';
import { createSsoConnectionsService, type SsoConnectionsService } from '../connections/service.js';
import { createSsoDomainsService, type SsoDomainsService } from '../domains/service.js';
import { createDnsTxtResolver, type TxtResolver } from '../domains/txt-resolver.js';
import { createDomainVerifier } from '../domains/verifier.js';
import { ssoEvents } from '../events.js';
import { createSsoConnectionRoutes } from '../http/connection-routes.js';
import { createSsoDomainRoutes } from '../http/domain-routes.js';
import { createSamlRoutes } from '../http/saml-routes.js';
import type { ReplayCache } from '../saml/replay-cache.js';
import type { RequestCache } from '../saml/request-cache.js';
import { createKnexConnectionsStore, SSO_SECRET_PURPOSE } from './connections-store.js';
import { createKnexSsoDirectory } from './directory.js';
import { createKnexDomainsStore } from './domains-store.js';
import { createKnexSsoIdentityStore, type SsoIdentityStore } from './identities-store.js';
import { createKnexReplayCache, createKnexRequestCache, pruneSamlCaches } from './saml-caches.js';

/** How often expired SAML cache rows are deleted: every ten minutes. */
export const SAML_CACHE_PRUNE_INTERVAL_MS = 10 * 60_000;

/** Options of {@link createKnexSso}. */
export interface KnexSsoOptions {
  readonly db: Knex;
  /** The event bus's outbox: the module's events are written in the transaction of each change. */
  readonly outbox: EventOutbox;
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
}

/** The sso module on knex: services, stores, routes, events and jobs. */
export interface KnexSso {
  readonly connections: SsoConnectionsService;
  readonly domains: SsoDomainsService;
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
 * const sso = createKnexSso({ db, outbox: bus, secret, publicBaseUrl, allowPrivateHosts: false });
 * routes.push(...sso.routes);
 */
export function createKnexSso(options: KnexSsoOptions): KnexSso {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  const directory = createKnexSsoDirectory(db);
  const replayCache = createKnexReplayCache({ db, clock });
  const requestCache = createKnexRequestCache({ db, clock });
  const connections = createSsoConnectionsService({
    store: createKnexConnectionsStore({ db, outbox: options.outbox, box: createSecretBox(options.secret, SSO_SECRET_PURPOSE) }),
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
    store: createKnexDomainsStore({ db, outbox: options.outbox }),
    directory,
    verifier: createDomainVerifier({ resolver }),
    clock,
  });
  return {
    connections,
    domains,
    identities: createKnexSsoIdentityStore(db),
    replayCache,
    requestCache,
    routes: [
      ...createSsoConnectionRoutes(connections),
      ...createSsoDomainRoutes(domains),
      ...createSamlRoutes({ connections, clock, replayCache, requestCache }),
    ],
    events: [...ssoEvents],
    jobs: [
      {
        name: 'sso.saml-caches.prune',
        intervalMs: SAML_CACHE_PRUNE_INTERVAL_MS,
        run: () => pruneSamlCaches(db, clock.now()),
      },
    ],
  };
}
