/**
 * Database access for idt: the knex factory for SQLite and Postgres, the
 * migration runner, and timestamp helpers.
 *
 * @packageDocumentation
 */

export type { DatabaseOptions, Dialect } from './db/database.js';
export {
  createDatabase,
  databaseConfig,
  dialectOf,
  redactDatabaseUrl,
  toIso,
  toIsoOrNull,
} from './db/database.js';
export { isUniqueViolation } from './db/errors.js';
export type { Migration, MigrationSet, MigrationSetStatus } from './db/migrations.js';
export {
  assertMigrated,
  migrationStatus,
  orderMigrationSets,
  PendingMigrationsError,
  runMigrations,
} from './db/migrations.js';
