import type { AuditTrail, EventDefinition, EventHandlerDefinition, EventOutbox } from '@idt/core';
import { type Clock, type CredentialResolver, type Logger, type Mailer, type Route, silentLogger, systemClock } from '@idt/core';
import type { CacheInvalidator, WindowCounter } from '@idt/core/knex';
import type { Knex } from 'knex';
import { createCredentialResolver } from '../access/credential-resolver.js';
import type { ClientLookup } from '../access/store.js';
import type { PasskeyCount } from '../factors/service.js';
import { createIdentityAuditRoutes } from '../http/routes/audit.js';
import { createSetupRoutes } from '../http/routes/setup.js';
import { createMemberDirectory, type MemberDirectory } from '../memberships/member-directory.js';
import { createRangeBreachedPasswordCheck } from '../password-policy/breached.js';
import { createPasswordPolicy } from '../password-policy/policy.js';
import { createArgon2Hasher, type PasswordHasher } from '../passwords.js';
import { createSetupService, type SetupService } from '../setup/service.js';
import { createSignInService, type SignInService } from '../sign-in/service.js';
import { createTokenMac } from '../tokens.js';
import { createKnexAccessStore } from './access-store.js';
import { type AccountsFeature, createAccountsFeature } from './features/accounts.js';
import type { FeatureContext, IdentitySettings } from './features/context.js';
import { type CredentialsFeature, createCredentialsFeature } from './features/credentials.js';
import { createFactorsFeature, type FactorsFeature } from './features/factors.js';
// D: passkeys
import { createPasskeysFeature, type PasskeysFeature } from './features/passkeys.js';
import { createPasswordsFeature, type PasswordsFeature } from './features/passwords.js';
// SCIM provisioning
import { createScimFeature, type ScimFeature } from './features/scim.js';
import { createVerificationFeature, type VerificationFeature } from './features/verification.js';
import { createKnexMemberDirectoryStore } from './members-with-permission.js';
import { createKnexSetupStore } from './setup-store.js';
import { createKnexSignInStore } from './sign-in-store.js';

/** Options of {@link createKnexIdentity}. */
export interface KnexIdentityOptions {
  readonly db: Knex;
  readonly settings: IdentitySettings;
  /** The server secret link tokens are derived from (the key-encryption secret). */
  readonly secret: string;
  readonly mailer: Mailer;
  readonly outbox: EventOutbox;
  /** The audit trail (`ctx.audit`); without it nothing is recorded and the audit routes are not served. */
  readonly audit?: AuditTrail;
  readonly invalidator: CacheInvalidator;
  readonly counter: WindowCounter;
  readonly hasher?: PasswordHasher;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** OAuth client lookups, supplied by the OpenID provider module. */
  readonly clients?: ClientLookup;
}

/** The identity module on knex: services, routes, credential resolution, events and jobs. */
export interface KnexIdentity {
  readonly setup: SetupService;
  /** Password verification and claims for the sign-in pages and the OpenID provider. */
  readonly signIn: SignInService;
  readonly accounts: AccountsFeature['services'];
  readonly credentials: CredentialsFeature['services'];
  // A: passwords
  /** The password policy, the forgotten-password flow and the password change. */
  readonly passwords: PasswordsFeature['services'];
  /** Verified e-mail addresses and organizations' security policies (`requireMfa`, `requireVerifiedEmail`). */
  readonly verification: VerificationFeature['services'];
  // C1: factors
  /** Second factors: TOTP (authenticator apps) and recovery codes. */
  readonly factors: FactorsFeature['services'];
  /** The recent-authentication rule of account-API changes (recent sign-in, or a fresh factor in the body). */
  readonly recentAuthentication: FactorsFeature['recentAuthentication'];
  // D: passkeys
  /** Passkeys (WebAuthn): registration, sign-in as a first or second factor, list, rename, remove. */
  readonly passkeys: PasskeysFeature['services'];
  // SCIM provisioning
  /** SCIM 2.0 provisioning of organizations by their directories (`/scim/v2`), its tokens and group→role mappings. */
  readonly scim: ScimFeature['services'];
  /** Who holds a permission in an organization: for the modules that notify people. */
  readonly members: MemberDirectory;
  /** Turns verified credentials into principals (plug into `createAuthenticator`). */
  readonly resolver: CredentialResolver & { permissionsOf(userId: string, organizationId: string): Promise<Set<string>> };
  readonly routes: readonly Route[];
  readonly events: readonly EventDefinition<any>[];
  readonly handlers: readonly EventHandlerDefinition<any>[];
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly intervalMs: number; run(): Promise<unknown> }>;
}

/**
 * Wires the identity module over a knex database.
 *
 * @example
 * const identity = createKnexIdentity({ db, settings, secret, mailer, outbox: bus, invalidator, counter });
 * for (const handler of identity.handlers) bus.subscribe(handler);
 * const authenticator = createAuthenticator({ verifier, resolver: identity.resolver });
 */
export function createKnexIdentity(options: KnexIdentityOptions): KnexIdentity {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const hasher = options.hasher ?? createArgon2Hasher();
  let resolver: KnexIdentity['resolver'] | undefined;
  // A: passwords
  const breachedUrl = options.settings.breachedPasswordsUrl;
  const passwordPolicy = createPasswordPolicy({
    ...(options.settings.passwordMinLength !== undefined ? { minLength: options.settings.passwordMinLength } : {}),
    ...(breachedUrl ? { breached: createRangeBreachedPasswordCheck({ url: breachedUrl, logger }) } : {}),
    logger,
  });
  const ctx: FeatureContext = {
    db: options.db,
    settings: options.settings,
    clock,
    logger,
    hasher,
    mailer: options.mailer,
    outbox: options.outbox,
    ...(options.audit ? { audit: options.audit } : {}),
    invalidator: options.invalidator,
    counter: options.counter,
    tokens: createTokenMac(options.secret),
    passwordPolicy,
    permissionsOf: (userId, organizationId) => {
      if (!resolver) throw new Error('The identity module is still being wired');
      return resolver.permissionsOf(userId, organizationId);
    },
  };
  const setup = createSetupService({
    store: createKnexSetupStore(options.db, options.audit ? { audit: options.audit } : {}),
    hasher,
    policy: passwordPolicy,
    clock,
  });
  const signIn = createSignInService({
    store: createKnexSignInStore(options.db, {
      cache: { subscribe: (namespace, listener) => options.invalidator.subscribe(namespace, listener), clock },
    }),
    hasher,
  });
  const accounts = createAccountsFeature(ctx);
  const credentials = createCredentialsFeature(ctx);
  const passwords = createPasswordsFeature(ctx, passwordPolicy);
  const verification = createVerificationFeature(ctx);
  // C1: factors (passkeys count as second factors once the passkeys feature sets `passkeyCount`)
  let passkeyCount: PasskeyCount | undefined;
  const factors = createFactorsFeature(ctx, {
    secret: options.secret,
    sessions: credentials.services.sessions,
    requiresMfaForUser: (userId) => verification.services.organizationPolicy.requiresMfaForUser(userId),
    passkeys: () => passkeyCount,
  });
  // D: passkeys
  const passkeys = createPasskeysFeature(ctx, {
    recentAuthentication: factors.recentAuthentication,
    secondFactors: {
      requiresMfa: (userId) => verification.services.organizationPolicy.requiresMfaForUser(userId),
      hasTotp: async (userId) => (await factors.services.status(userId)).totp,
    },
  });
  passkeyCount = passkeys.services;
  // SCIM provisioning
  const scim = createScimFeature(ctx, accounts.users);
  resolver = createCredentialResolver({
    store: createKnexAccessStore(options.db),
    apiKeys: credentials.apiKeyLookup,
    sessions: credentials.sessionLookup,
    ...(options.clients ? { clients: options.clients } : {}),
    subscribe: (namespace, listener) => options.invalidator.subscribe(namespace, listener),
    clock,
  });
  const features = [accounts, credentials, passwords, verification, factors, passkeys, scim];
  return {
    setup,
    signIn,
    accounts: accounts.services,
    credentials: credentials.services,
    passwords: passwords.services,
    verification: verification.services,
    // C1: factors
    factors: factors.services,
    recentAuthentication: factors.recentAuthentication,
    // D: passkeys
    passkeys: passkeys.services,
    // SCIM provisioning
    scim: scim.services,
    members: createMemberDirectory(createKnexMemberDirectoryStore(options.db)),
    resolver,
    routes: [
      ...createSetupRoutes(setup),
      ...features.flatMap((feature) => feature.routes),
      ...(options.audit ? createIdentityAuditRoutes({ audit: options.audit, db: options.db, logger }) : []),
    ],
    events: features.flatMap((feature) => feature.events),
    handlers: features.flatMap((feature) => feature.handlers),
    jobs: features.flatMap((feature) => feature.jobs),
  };
}
