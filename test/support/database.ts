import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, dialectOf, type MigrationSet, runMigrations } from '@idt/core/knex';
import type { Knex } from 'knex';
import { adminPostgresUrl, createPostgresDatabase } from './postgres.js';

/**
 * vitest's `inject` in a test run. Outside one (bench/writes.ts starts the
 * test server from a plain script) vitest cannot load, and nothing is
 * provided: a Postgres database is created on {@link adminPostgresUrl}'s
 * server when one is asked for.
 */
const inject: typeof import('vitest').inject = await import('vitest').then(
  (vitest) => vitest.inject,
  () => ((key: string) => (key === 'postgresAdminUrl' ? adminPostgresUrl() : undefined)) as never,
);

/** The engines a suite runs on. */
export type TestDialect = 'sqlite' | 'postgres';

/** A throwaway database: a fresh SQLite file or a fresh Postgres database. */
export interface TestDatabase {
  readonly dialect: TestDialect;
  readonly url: string;
  readonly db: Knex;
  /** A scratch directory for this database's server (mail, files); deleted with it. */
  readonly dataDir: string;
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
  const dir = mkdtempSync(join(tmpdir(), 'idt-test-'));
  let cleanup: () => Promise<void> = async () => undefined;
  if (dialect === 'sqlite') {
    url = `sqlite:${join(dir, 'idt.sqlite')}`;
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
    dataDir: dir,
    async destroy() {
      await db.destroy();
      await cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Another connection pool on an existing throwaway database, as a second
 * server instance (a separate process) would have; `url` reaches it another
 * way (e.g. through a fault-injecting proxy). Destroying it closes the pool
 * only; the database stays.
 */
export function connectTestDatabase(database: TestDatabase, url = database.url): TestDatabase {
  const db = createDatabase(url);
  return { dialect: database.dialect, url, dataDir: database.dataDir, db, destroy: () => db.destroy() };
}

/**
 * Every index of the database's schema and the statement that creates it,
 * as the database reports it (SQLite's `sqlite_master`, PostgreSQL's
 * `pg_indexes`), by name. SQLite's automatic indexes, which no statement
 * created, are left out.
 *
 * @example
 * expect((await indexDefinitions(db)).get('oidc_payloads_uid_index')).toMatch(/ where /i);
 */
export async function indexDefinitions(db: Knex): Promise<Map<string, string>> {
  const rows: Array<{ name: string; definition: string | null }> =
    dialectOf(db) === 'sqlite'
      ? await db.raw("select name, sql as definition from sqlite_master where type = 'index'")
      : (await db.raw('select indexname as name, indexdef as definition from pg_indexes where schemaname = current_schema()'))
          .rows;
  return new Map(rows.flatMap(({ name, definition }) => (definition ? [[name, definition] as const] : [])));
}
