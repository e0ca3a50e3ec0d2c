/**
 * Knex persistence and wiring of `@idt/oidc`.
 *
 * @packageDocumentation
 */
// The error codes of `@idt/oidc`, for hosts that import only this entry.
import './problems.js';

export type { KnexAdapterOptions, OidcAdapter } from './knex/adapter.js';
export { createKnexAdapterClass, pruneAdapterPayloads } from './knex/adapter.js';
export { createKnexClientStore } from './knex/client-store.js';
export { oidcMigrations } from './knex/migrations.js';
export type { KnexOidc, KnexOidcOptions, OidcSettings } from './knex/module.js';
export { createKnexOidc } from './knex/module.js';
export { createKnexClientLockout, createKnexConsentStore, createKnexGrantContextStore } from './knex/stores.js';
