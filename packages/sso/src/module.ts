import { isIP } from 'node:net';
import { type EnvironmentVariable, envReader, type IdtModule, type OutboundResolver } from '@idt/core';
import { SIGN_IN_FEDERATION_CAPABILITY, type SignInFederation, type SignInFederationSlot } from '@idt/oidc';
import { SsoAuditActions } from './audit-actions.js';
import type { SsoConnectionsService } from './connections/service.js';
import type { SsoDomainsService } from './domains/service.js';
import type { TxtResolver } from './domains/txt-resolver.js';
import type { SsoIdentityStore } from './knex/identities-store.js';
import { ssoMigrations } from './knex/migrations.js';
import type { UpstreamOidcOptions } from './oidc/upstream.js';
import type { SsoPolicyService } from './policy/service.js';
import { SsoCodes } from './problems.js';
import type { ReplayCache } from './saml/replay-cache.js';
import type { RequestCache } from './saml/request-cache.js';

/** The settings of the sso module. */
export interface SsoSettings {
  /** `IDT_SSO_DNS_SERVERS`: the DNS servers domain verification asks; the system's when empty. */
  readonly dnsServers: readonly string[];
  /** `IDT_SSO_ALLOW_PRIVATE_HOSTS`: fetch metadata from, and accept issuers on, loopback and private hosts over http. */
  readonly allowPrivateHosts: boolean;
}

/** Options of {@link sso}; each setting wins over its environment variable. */
export interface SsoOptions extends Partial<SsoSettings> {
  /** The TXT resolver domain verification asks (tests inject one); node:dns over `dnsServers` by default. */
  readonly txtResolver?: TxtResolver;
  /** Resolves metadata URL hosts (tests inject one); the system resolver by default. */
  readonly resolve?: OutboundResolver;
  /** Deadlines and limits of the OpenID relying party of `oidc` connections (5 seconds and 1 MiB by default). */
  readonly upstream?: Pick<UpstreamOidcOptions, 'timeoutMs' | 'maxBytes'>;
}

/** The services of the sso module (`idt.services.sso`). */
export interface SsoServices {
  readonly connections: SsoConnectionsService;
  readonly domains: SsoDomainsService;
  /** Organizations' `ssoRequired`. */
  readonly policies: SsoPolicyService;
  /** Federation as the sign-in pipeline uses it: what the module puts in oidc's sign-in federation slot. */
  readonly federation: SignInFederation;
  readonly identities: SsoIdentityStore;
  readonly replayCache: ReplayCache;
  readonly requestCache: RequestCache;
}

/** The environment variables of the sso module. */
export const ssoVariables: readonly EnvironmentVariable[] = [
  {
    name: 'IDT_SSO_DNS_SERVERS',
    description:
      'Comma-separated DNS servers domain verification asks for TXT records (`1.1.1.1`, `127.0.0.1:5353`, `[::1]:53`); the system resolver when unset.',
  },
  {
    name: 'IDT_SSO_ALLOW_PRIVATE_HOSTS',
    description:
      'Fetch SAML metadata from, and accept OpenID issuers on, loopback and private hosts over plain http (local demos and tests only).',
    default: 'false',
  },
];

/** Whether `entry` is an address a node:dns resolver accepts as a server: `ip`, `ip:port` or `[ipv6]:port`. */
export function isDnsServer(entry: string): boolean {
  if (isIP(entry) !== 0) return true;
  const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(entry);
  const plain = /^([\d.]+):(\d{1,5})$/.exec(entry);
  const match = bracketed ?? plain;
  if (!match) return false;
  const [, host = '', port = ''] = match;
  const number = Number(port);
  return isIP(host) === (bracketed ? 6 : 4) && number >= 1 && number <= 65_535;
}

/**
 * The federation module: single sign-on connections of organizations
 * (`/v1/identity/organizations/{orgId}/sso/connections`) and of the platform
 * (`/v1/admin/sso/connections`), verified domains
 * (`/v1/identity/organizations/{orgId}/domains`) and the SAML service
 * provider metadata (`/sso/saml/{connectionId}/metadata`), the
 * organization policy (`/v1/identity/organizations/{orgId}/sso/policy`),
 * and the sign-in round trip: it provides oidc's sign-in federation slot
 * (`SIGN_IN_FEDERATION_CAPABILITY`) and fills it, and serves the OIDC
 * callback (`/sso/oidc/callback`) and the SAML ACS
 * (`/sso/saml/{connectionId}/acs`). Requires the identity and oidc modules.
 *
 * @example
 * const idt = await createIdt({ database, modules: [identity(), oidc(), sso({ dnsServers: ['1.1.1.1'] })] });
 */
export function sso(options: SsoOptions = {}): IdtModule<'sso', SsoServices, SsoSettings> {
  const { txtResolver, resolve, upstream, ...overrides } = options;
  return {
    id: 'sso',
    requires: ['identity', 'oidc'],
    // oidc is set up first and reads the slot at request time; set-up below fills it.
    provides: { [SIGN_IN_FEDERATION_CAPABILITY]: (): SignInFederationSlot => ({ current: undefined }) },
    migrations: ssoMigrations,
    problemCodes: Object.keys(SsoCodes),
    settings: {
      variables: ssoVariables,
      resolve(env) {
        const read = envReader(env);
        let dnsServers = overrides.dnsServers;
        if (dnsServers === undefined) {
          const entries = (read.string('IDT_SSO_DNS_SERVERS') ?? '')
            .split(',')
            .map((entry) => entry.trim())
            .filter(Boolean);
          const bad = entries.filter((entry) => !isDnsServer(entry));
          if (bad.length > 0) {
            read.problem(`IDT_SSO_DNS_SERVERS: ${bad.join(', ')} is not an IP address with an optional port`);
          }
          dnsServers = entries.filter(isDnsServer);
        }
        const settings: SsoSettings = {
          dnsServers,
          allowPrivateHosts: overrides.allowPrivateHosts ?? read.boolean('IDT_SSO_ALLOW_PRIVATE_HOSTS', false),
        };
        read.done();
        return settings;
      },
    },
    async setup(ctx) {
      const { createKnexSso } = await import('./knex/module.js');
      ctx.audit.register(Object.values(SsoAuditActions));
      const module = createKnexSso({
        db: ctx.db,
        outbox: ctx.events,
        audit: ctx.audit,
        invalidator: ctx.invalidator,
        logger: ctx.logger,
        ...(upstream ? { upstream } : {}),
        secret: ctx.secret,
        publicBaseUrl: ctx.config.publicBaseUrl,
        allowPrivateHosts: ctx.settings.allowPrivateHosts,
        dnsServers: ctx.settings.dnsServers,
        ...(txtResolver ? { txtResolver } : {}),
        ...(resolve ? { resolve } : {}),
        clock: ctx.clock,
      });
      const slot = ctx.capability<SignInFederationSlot>(SIGN_IN_FEDERATION_CAPABILITY);
      if (slot) slot.current = module.federation;
      return {
        services: {
          connections: module.connections,
          domains: module.domains,
          policies: module.policies,
          federation: module.federation,
          identities: module.identities,
          replayCache: module.replayCache,
          requestCache: module.requestCache,
        },
        routes: module.routes,
        events: module.events,
        jobs: module.jobs,
      };
    },
  };
}
