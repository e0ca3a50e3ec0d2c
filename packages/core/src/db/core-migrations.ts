import { outboxMigration } from './migrations/0001-outbox.js';
import { rateLimitsMigration } from './migrations/0002-rate-limits.js';
import { signingKeysMigration } from './migrations/0003-signing-keys.js';
import { cacheInvalidationsMigration } from './migrations/0004-cache-invalidations.js';
import { cacheInvalidationsRowidMigration } from './migrations/0005-cache-invalidations-rowid.js';
import { auditEventsMigration } from './migrations/0006-audit-events.js';
import type { Migration, MigrationSet } from './migrations.js';

/**
 * The migrations of `@idt/core`, recorded in `idt_core_migrations`. Each
 * capability ships its own file under `db/migrations/`.
 */
const migrations: Migration[] = [
  outboxMigration,
  rateLimitsMigration,
  signingKeysMigration,
  cacheInvalidationsMigration,
  cacheInvalidationsRowidMigration,
  auditEventsMigration,
];

/** The migrations of `@idt/core` (outbox, rate-limit counters, signing keys, cache invalidations, audit trail). */
export const coreMigrations: MigrationSet = {
  owner: '@idt/core',
  tableName: 'idt_core_migrations',
  migrations,
};
