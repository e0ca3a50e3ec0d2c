import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, type MigrationSet, runMigrations } from '@idt/core/knex';
import type { Knex } from 'knex';
import { inject } from 'vitest';
import { createPostgresDatabase } from './postgres.js';

/** The engines a suite runs on. */
export type TestDialect = 'sqlite' | 'postgres';

/** A throwaway database: a fresh SQLite file or a fresh Postgres database. */
export interface TestDatabase {
  readonly dialect: TestDialect;
  readonly url: string;
  readonly db: Knex;
  /** Closes the connection and deletes the database. */
  destroy(): Promise<void>;
}

/**
 * The engines this run covers: SQLite always, Postgres when the global setup
 * found a server. Use with `describe.each(testDialects())`.
 */
export function testDialects(): TestDialect[] {
  return inject('postgresAdminUrl') ? ['sqlite', 'postgres'] : ['sqlite'];
}

/** Creates a throwaway database, optionally migrated. */
export async function createTestDatabase(dialect: TestDialect, migrations: readonly MigrationSet[] = []): Promise<TestDatabase> {
  let url: string;
  let cleanup: () => Promise<void>;
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'idt-test-'));
    url = `sqlite:${join(dir, 'idt.sqlite')}`;
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const adminUrl = inject('postgresAdminUrl');
    if (!adminUrl) throw new Error('Postgres is not available in this run');
    const created = await createPostgresDatabase(adminUrl);
    url = created.url;
    cleanup = created.drop;
  }
  const db = createDatabase(url);
  if (migrations.length > 0) await runMigrations(db, migrations);
  return {
    dialect,
    url,
    db,
    async destroy() {
      await db.destroy();
      await cleanup();
    },
  };
}
