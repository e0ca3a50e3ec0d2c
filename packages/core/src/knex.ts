/**
 * Database access for idt: the knex factory for SQLite and Postgres, the
 * migration runner, timestamp helpers, the database-backed rate limiter, and
 * the event bus over the durable outbox, and the audit trail's store.
 *
 * @packageDocumentation
 */

export type { AuditEventRow } from './audit/knex-store.js';
export { auditRecordFromRow, createKnexAuditStore, verifyAuditChain } from './audit/knex-store.js';
export type { CacheEviction, CacheInvalidator, CacheInvalidatorOptions } from './cache/invalidator.js';
export { ALL_KEYS, createCacheInvalidator, evictFrom, RECONNECT_MAX_DELAY_MS } from './cache/invalidator.js';
export { timestampColumn } from './db/columns.js';
export { coreMigrations } from './db/core-migrations.js';
export type { DatabaseOptions, Dialect } from './db/database.js';
export {
  createDatabase,
  databaseConfig,
  dialectOf,
  PREPARED_STATEMENTS_OPTION,
  rawRows,
  redactDatabaseUrl,
  toIso,
  toIsoOrNull,
} from './db/database.js';
export { isUniqueViolation } from './db/errors.js';
export { AUDIT_CHAINS_TABLE, AUDIT_EVENTS_TABLE } from './db/migrations/0006-audit-events.js';
export type { Migration, MigrationSet, MigrationSetStatus } from './db/migrations.js';
export {
  assertMigrated,
  migrationStatus,
  orderMigrationSets,
  PendingMigrationsError,
  runMigrations,
} from './db/migrations.js';
export type { BoundStatement, StatementBinding } from './db/statements.js';
export {
  type ListStatement,
  listStatement,
  runListStatement,
  runStatement,
  runStatementsTogether,
  selectListRows,
  selectRows,
} from './db/statements.js';
export type { KnexEffectsOptions } from './db/unit-of-work.js';
export { knexEffects, knexUnitOfWork } from './db/unit-of-work.js';
export type { EventBus, EventBusOptions } from './events/bus.js';
export { createEventBus, EventPayloadError } from './events/bus.js';
export type { PublicJwk, SigningAlgorithm, SigningKey, SigningKeyStore, SigningKeyStoreOptions } from './keys/store.js';
export { createKnexSigningKeyStore, jwkThumbprint, publicJwks, SIGNING_ALGORITHMS } from './keys/store.js';
export type { RateLimiter, RateLimiterOptions } from './rate-limit/rate-limiter.js';
export { batchSize, createRateLimiter } from './rate-limit/rate-limiter.js';
export type { WindowCounter, WindowCounterOptions } from './rate-limit/window-counter.js';
export { createWindowCounter } from './rate-limit/window-counter.js';
