/**
 * Knex persistence of `@idt/oidc`, and `createKnexOidc`: the provider composed over it.
 *
 * @packageDocumentation
 */
// The error codes of `@idt/oidc`, for hosts that import only this entry.
import './problems.js';

export type { KnexAdapterClass, KnexAdapterOptions, OidcAdapter } from './knex/adapter.js';
export { createKnexAdapterClass, pruneAdapterPayloads } from './knex/adapter.js';
export { createKnexClientStore } from './knex/client-store.js';
export { oidcMigrations } from './knex/migrations.js';
export type { KnexOidc, KnexOidcOptions, OidcSettings } from './knex/module.js';
export { createKnexOidc } from './knex/module.js';
export type { ClientLockoutOptions, KnexClientLockout } from './knex/stores.js';
export {
  createKnexClientLockout,
  createKnexClientLockoutStore,
  createKnexConsentStore,
  createKnexGrantContextStore,
} from './knex/stores.js';
export type {
  ClientLockout,
  ClientLockoutChange,
  ClientLockoutPolicy,
  ClientLockoutPolicyOptions,
  ClientLockoutRow,
  ClientLockoutStore,
} from './policy/client-lockout.js';
export { CLIENT_LOCKOUT, createClientLockout, UNKNOWN_CLIENT_LIMIT } from './policy/client-lockout.js';
