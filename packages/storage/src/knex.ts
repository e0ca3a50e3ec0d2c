/**
 * The knex side of `@idt/storage`: the metadata store, the migrations and
 * the module wiring.
 *
 * @packageDocumentation
 */
import './problems.js';

export { BUCKETS_TABLE, FILES_TABLE, storageMigrations } from './knex/migrations.js';
export type { KnexStorage, KnexStorageOptions } from './knex/module.js';
export { createKnexStorage } from './knex/module.js';
export { createKnexFilesStore } from './knex/store.js';
