/**
 * Knex persistence for `@idt/identity`: migrations and stores.
 *
 * @packageDocumentation
 */
export { identityMigrations } from './knex/migrations.js';
export { createKnexSetupStore } from './knex/setup-store.js';
