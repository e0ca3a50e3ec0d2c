/**
 * Knex persistence for `@idt/identity`: migrations, stores and the wired module.
 *
 * @packageDocumentation
 */
export { createKnexAccessStore, REVOKE_ALL, writeRevocation } from './knex/access-store.js';
export type { AccountsFeature } from './knex/features/accounts.js';
export type { FeatureContext, IdentityFeature, IdentitySettings } from './knex/features/context.js';
export type { CredentialsFeature } from './knex/features/credentials.js';
export { identityMigrations } from './knex/migrations.js';
export type { KnexIdentity, KnexIdentityOptions } from './knex/module.js';
export { createKnexIdentity } from './knex/module.js';
export { createKnexSetupStore } from './knex/setup-store.js';
