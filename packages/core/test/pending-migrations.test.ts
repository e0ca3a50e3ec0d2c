import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CreateIdtOptions, createIdt, type IdtModule } from '@idt/core';
import { coreMigrations, createDatabase, type MigrationSet, migrationStatus, PendingMigrationsError } from '@idt/core/knex';
import { createTestDatabase, type TestDatabase } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

/**
 * `createIdt` with `migrations: 'check'` (the default outside Testing) on a
 * database that was never migrated: it refuses with one line naming both
 * fixes, and leaves the database as it found it: no SQLite file, no
 * directory, no table.
 */

const notes: MigrationSet = {
  owner: '@test/notes',
  tableName: 'test_notes_migrations',
  migrations: [
    { name: '0001_notes', up: (db) => db.schema.createTable('test_notes', (t) => t.string('id').primary()) },
    { name: '0002_titles', up: (db) => db.schema.alterTable('test_notes', (t) => t.string('title')) },
  ],
};
const notesModule = (set: MigrationSet = notes): IdtModule => ({ id: 'notes', migrations: set, setup: () => ({ services: {} }) });

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'idt-pending-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Options of a host that keeps the default `'check'` (Development, so the default is not `'skip'`). */
function hostOptions(database: CreateIdtOptions<[]>['database'], module = notesModule()): CreateIdtOptions<[IdtModule]> {
  return {
    database,
    baseUrl: 'http://localhost:3000',
    env: { IDT_ENVIRONMENT: 'Development', IDT_LOG_LEVEL: 'silent', IDT_DATA_DIR: join(dir, 'state') },
    mailer: { send: async () => undefined },
    modules: [module],
  };
}

/** The tables of a database, idt's or knex's, on either engine. */
async function tables(db: Knex): Promise<string[]> {
  const client = (db.client as { config: { client: string } }).config.client;
  const rows =
    client === 'pg'
      ? (await db.raw<{ rows: Array<{ name: string }> }>("select tablename as name from pg_tables where schemaname = 'public'"))
          .rows
      : await db.raw<Array<{ name: string }>>("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'");
  return rows.map((row) => row.name).sort();
}

const everyPending = [
  ...coreMigrations.migrations.map((migration) => `@idt/core: ${migration.name}`),
  '@test/notes: 0001_notes',
  '@test/notes: 0002_titles',
];

function pendingOf(error: PendingMigrationsError): string[] {
  return error.pending.flatMap((set) => set.pending.map((name) => `${set.owner}: ${name}`));
}

describe('a SQLite file that does not exist, with migrations: check', () => {
  it('is refused before it is opened: one line naming both fixes, every migration pending, no file and no directory', async () => {
    const file = join(dir, 'fresh', 'nested', 'idt.sqlite');
    const error = await createIdt(hostOptions(`sqlite:${file}`)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PendingMigrationsError);
    const { message } = error as PendingMigrationsError;
    expect(message).not.toContain('\n');
    expect(message).toBe(
      `The database has ${everyPending.length} pending migrations (@idt/core: ${coreMigrations.migrations.length}, @test/notes: 2). ` +
        "Apply them at startup with migrations: 'run' in the options of createIdt, or before starting with " +
        '`npx idt migrate --config <your config module>` (from @idt/cli).',
    );
    expect(pendingOf(error as PendingMigrationsError)).toEqual(everyPending);
    expect(existsSync(join(dir, 'fresh'))).toBe(false);
    expect(existsSync(join(dir, 'state'))).toBe(false);
  });

  it("is created and migrated with migrations: 'run', and then starts with 'check'", async () => {
    const file = join(dir, 'run', 'idt.sqlite');
    const created = await createIdt({ ...hostOptions(`sqlite:${file}`), migrations: 'run' });
    await created.close();
    expect(existsSync(file)).toBe(true);
    const checked = await createIdt(hostOptions(`sqlite:${file}`));
    expect(await tables(checked.db)).toContain('test_notes');
    await checked.close();
  });

  it('names the one migration a newer module version adds, and creates nothing for it', async () => {
    const file = join(dir, 'newer', 'idt.sqlite');
    const older: MigrationSet = { ...notes, migrations: notes.migrations.slice(0, 1) };
    await (await createIdt({ ...hostOptions(`sqlite:${file}`, notesModule(older)), migrations: 'run' })).close();
    const error = await createIdt(hostOptions(`sqlite:${file}`)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PendingMigrationsError);
    expect((error as Error).message).toMatch(/^The database has 1 pending migration \(@test\/notes: 1\)\. Apply them/);
    expect(pendingOf(error as PendingMigrationsError)).toEqual(['@test/notes: 0002_titles']);
    const db = createDatabase(`sqlite:${file}`);
    try {
      expect(await db.schema.hasColumn('test_notes', 'title')).toBe(false);
    } finally {
      await db.destroy();
    }
  });

  it('refuses to read the status of a database a newer version migrated, naming the migrations it does not know', async () => {
    const file = join(dir, 'downgraded', 'idt.sqlite');
    await (await createIdt({ ...hostOptions(`sqlite:${file}`), migrations: 'run' })).close();
    const older: MigrationSet = { ...notes, migrations: notes.migrations.slice(0, 1) };
    const db = createDatabase(`sqlite:${file}`);
    try {
      await expect(migrationStatus(db, [older])).rejects.toThrow(
        '@test/notes: the database records migrations this version does not have (0002_titles)',
      );
    } finally {
      await db.destroy();
    }
  });

  it("keeps 'sqlite::memory:' working: an in-memory database is never a file", async () => {
    const error = await createIdt(hostOptions('sqlite::memory:')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PendingMigrationsError);
    expect(pendingOf(error as PendingMigrationsError)).toEqual(everyPending);
  });
});

const adminUrl = inject('postgresAdminUrl');

describe.skipIf(!adminUrl)('a fresh Postgres database, with migrations: check', () => {
  let database: TestDatabase;
  let db: Knex;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    db = database.db;
  });
  afterAll(() => database?.destroy());

  it('is refused with every migration pending, and is left without a table (no migrations table, no lock table)', async () => {
    const error = await createIdt(hostOptions(database.url)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PendingMigrationsError);
    expect((error as Error).message).not.toContain('\n');
    expect(pendingOf(error as PendingMigrationsError)).toEqual(everyPending);
    expect(await tables(db)).toEqual([]);
  });

  it("is refused the same way through the host's own knex instance", async () => {
    const error = await createIdt(hostOptions(db)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PendingMigrationsError);
    expect(await tables(db)).toEqual([]);
  });

  it('answers migrationStatus (what `idt migrate --status` prints) without creating a table', async () => {
    const status = await migrationStatus(db, [coreMigrations, notes]);
    expect(status.map((set) => [set.owner, set.applied, set.pending.length])).toEqual([
      ['@idt/core', [], coreMigrations.migrations.length],
      ['@test/notes', [], 2],
    ]);
    expect(await tables(db)).toEqual([]);
  });
});
