/**
 * The knex side of `@idt/sso`: the stores (connections with sealed secrets,
 * domains, identities), the shared SAML caches, the migrations and the
 * module wiring.
 *
 * @packageDocumentation
 */
import './problems.js';

export { createKnexConnectionsStore, SSO_SECRET_PURPOSE } from './knex/connections-store.js';
export { createKnexSsoDirectory } from './knex/directory.js';
export { createKnexDomainsStore } from './knex/domains-store.js';
export type { SsoIdentityStore } from './knex/identities-store.js';
export { createKnexSsoIdentityStore } from './knex/identities-store.js';
export {
  SSO_CONNECTIONS_TABLE,
  SSO_DOMAINS_TABLE,
  SSO_IDENTITIES_TABLE,
  SSO_POLICIES_TABLE,
  SSO_SAML_REPLAYS_TABLE,
  SSO_SAML_REQUESTS_TABLE,
  SSO_SIGN_IN_OUTCOMES_TABLE,
  SSO_SIGN_IN_TRANSACTIONS_TABLE,
  ssoMigrations,
} from './knex/migrations.js';
export type { KnexSso, KnexSsoOptions } from './knex/module.js';
export { createKnexSso, SAML_CACHE_PRUNE_INTERVAL_MS, SIGN_IN_PRUNE_INTERVAL_MS } from './knex/module.js';
export { createKnexSsoPolicyStore } from './knex/policy-store.js';
export { createKnexProvisioningStore } from './knex/provisioning-store.js';
export { createKnexRealmStore } from './knex/realm-store.js';
export type { KnexSamlCacheOptions } from './knex/saml-caches.js';
export { createKnexReplayCache, createKnexRequestCache, pruneSamlCaches } from './knex/saml-caches.js';
export type { KnexSignInStoreOptions } from './knex/sign-in-store.js';
export { createKnexOutcomeStore, createKnexSignInTransactionStore, pruneSignIns } from './knex/sign-in-store.js';
