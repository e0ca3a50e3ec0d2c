/**
 * The knex side of `@idt/inquiries`: the store, the migrations and the
 * module wiring.
 *
 * @packageDocumentation
 */
import './problems.js';

export { INQUIRIES_TABLE, INQUIRY_COMMENTS_TABLE, inquiriesMigrations } from './knex/migrations.js';
export type { KnexInquiries, KnexInquiriesOptions } from './knex/module.js';
export { createKnexInquiries } from './knex/module.js';
export type { KnexInquiriesStoreOptions } from './knex/store.js';
export { createKnexInquiriesStore } from './knex/store.js';
