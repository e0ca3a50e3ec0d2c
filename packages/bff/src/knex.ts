/**
 * The knex side of `@idt/bff`: the session table's migrations and the
 * session store for SQLite and Postgres (one or several BFF instances).
 *
 * @packageDocumentation
 */

export { BFF_SESSIONS_TABLE, bffMigrations } from './knex/migrations.js';
export type { KnexBffSessionStoreOptions } from './knex/session-store.js';
export { createKnexBffSessionStore } from './knex/session-store.js';
