import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  assertMigrated,
  dialectOf,
  type MigrationSet,
  migrationStatus,
  orderMigrationSets,
  PendingMigrationsError,
  runMigrations,
} from '../src/knex.js';

const base: MigrationSet = {
  owner: '@test/base',
  tableName: 'test_base_migrations',
  migrations: [
    {
      name: '0001_things',
      up: (db) =>
        db.schema.createTable('things', (t) => {
          t.string('id').primary();
        }),
    },
  ],
};
const dependent: MigrationSet = {
  owner: '@test/dependent',
  tableName: 'test_dependent_migrations',
  dependsOn: ['@test/base'],
  migrations: [
    {
      name: '0001_parts',
      up: (db) =>
        db.schema.createTable('parts', (t) => {
          t.string('id').primary();
          t.string('thing_id').references('id').inTable('things');
        }),
    },
  ],
};

describe('orderMigrationSets', () => {
  it('puts dependencies first whatever the input order', () => {
    expect(orderMigrationSets([dependent, base]).map((set) => set.owner)).toEqual(['@test/base', '@test/dependent']);
  });

  it('refuses cycles and unknown dependencies', () => {
    const a: MigrationSet = { owner: 'a', tableName: 'a', dependsOn: ['b'], migrations: [] };
    const b: MigrationSet = { owner: 'b', tableName: 'b', dependsOn: ['a'], migrations: [] };
    expect(() => orderMigrationSets([a, b])).toThrow(/cycle/);
    expect(() => orderMigrationSets([a])).toThrow(/not supplied/);
  });
});

describe.each(testDialects())('migration runner on %s', (dialect) => {
  let database: TestDatabase | undefined;
  afterEach(async () => {
    await database?.destroy();
    database = undefined;
  });

  it('applies each package with its own table, in dependency order, once', async () => {
    database = await createTestDatabase(dialect);
    const { db } = database;
    expect(dialectOf(db)).toBe(dialect);
    await expect(assertMigrated(db, [dependent, base])).rejects.toThrow(PendingMigrationsError);
    await expect(assertMigrated(db, [dependent, base])).rejects.toThrow(/idt migrate/);
    const first = await runMigrations(db, [dependent, base]);
    expect(first).toEqual([
      { owner: '@test/base', applied: ['0001_things'], pending: [] },
      { owner: '@test/dependent', applied: ['0001_parts'], pending: [] },
    ]);
    expect(await db.schema.hasTable('test_base_migrations')).toBe(true);
    expect(await db.schema.hasTable('test_dependent_migrations')).toBe(true);
    const second = await runMigrations(db, [dependent, base]);
    expect(second.flatMap((set) => set.applied)).toEqual([]);
    await expect(assertMigrated(db, [base, dependent])).resolves.toBeUndefined();
  });

  it('lists applied and pending migrations', async () => {
    database = await createTestDatabase(dialect);
    await runMigrations(database.db, [base]);
    const extended: MigrationSet = {
      ...base,
      migrations: [...base.migrations, { name: '0002_more', up: (db) => db.schema.createTable('more', (t) => t.string('id')) }],
    };
    expect(await migrationStatus(database.db, [extended])).toEqual([
      { owner: '@test/base', applied: ['0001_things'], pending: ['0002_more'] },
    ]);
  });

  it("applies a set's migrations in the code-unit order of their names, as knex does, whatever the locale", async () => {
    database = await createTestDatabase(dialect);
    const order: string[] = [];
    // In a locale's order 'a_' comes before 'B_'; by code units 'B' (0x42) comes before 'a' (0x61).
    const names = ['b_last', 'a_second', 'B_first'];
    const mixed: MigrationSet = {
      owner: '@test/mixed',
      tableName: 'test_mixed_migrations',
      migrations: names.map((name) => ({ name, up: async () => void order.push(name) })),
    };
    expect(await runMigrations(database.db, [mixed])).toEqual([
      { owner: '@test/mixed', applied: ['B_first', 'a_second', 'b_last'], pending: [] },
    ]);
    expect(order).toEqual(['B_first', 'a_second', 'b_last']);
  });

  it('rolls a failing migration back and leaves it pending', async () => {
    database = await createTestDatabase(dialect);
    const failing: MigrationSet = {
      owner: '@test/failing',
      tableName: 'test_failing_migrations',
      migrations: [
        {
          name: '0001_broken',
          async up(db) {
            await db.schema.createTable('half', (t) => t.string('id'));
            await db.raw('select * from table_that_does_not_exist');
          },
        },
      ],
    };
    await expect(runMigrations(database.db, [failing])).rejects.toThrow();
    expect(await database.db.schema.hasTable('half')).toBe(false);
    expect((await migrationStatus(database.db, [failing]))[0]?.pending).toEqual(['0001_broken']);
  });
});
