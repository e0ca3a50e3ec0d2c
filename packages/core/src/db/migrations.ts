import type { Knex } from 'knex';
import { compareCodeUnits } from '../compare.js';

/** One schema change, written as code. */
export interface Migration {
  /** A sortable, unique name such as `0001_users`. */
  readonly name: string;
  up(db: Knex): Promise<void>;
  down?(db: Knex): Promise<void>;
}

/** The migrations one package owns, applied with their own migrations table. */
export interface MigrationSet {
  /** The owning package, e.g. `@idt/identity`. */
  readonly owner: string;
  /** The table recording which of these migrations ran, e.g. `idt_identity_migrations`. */
  readonly tableName: string;
  /** Owners whose migrations must run first. */
  readonly dependsOn?: readonly string[];
  readonly migrations: readonly Migration[];
}

/** What a migration set has applied and what is still pending. */
export interface MigrationSetStatus {
  owner: string;
  applied: string[];
  pending: string[];
}

/**
 * Thrown when a server would start on a database with pending migrations.
 * Its message is one line naming both ways to apply them (`migrations: 'run'`
 * in `createIdt`'s options, or `npx idt migrate --config <your config module>`
 * before starting), so a host can print `error.message` alone; the migrations
 * themselves are in {@link PendingMigrationsError.pending}.
 */
export class PendingMigrationsError extends Error {
  /** The sets with pending migrations, each listing them by name. */
  readonly pending: MigrationSetStatus[];
  constructor(pending: MigrationSetStatus[]) {
    const sets = pending.filter((set) => set.pending.length > 0);
    const count = sets.reduce((sum, set) => sum + set.pending.length, 0);
    const owners = sets.map((set) => `${set.owner}: ${set.pending.length}`).join(', ');
    super(
      `The database has ${count} pending migration${count === 1 ? '' : 's'} (${owners}). Apply them at startup with migrations: 'run' in the options of createIdt, or before starting with \`npx idt migrate --config <your config module>\` (from @idt/cli).`,
    );
    this.name = 'PendingMigrationsError';
    this.pending = pending;
  }
}

/**
 * Orders migration sets so that every set comes after the sets it depends on.
 *
 * @throws Error on an unknown dependency or a cycle.
 */
export function orderMigrationSets(sets: readonly MigrationSet[]): MigrationSet[] {
  const byOwner = new Map(sets.map((set) => [set.owner, set]));
  const ordered: MigrationSet[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (set: MigrationSet, trail: string[]) => {
    const seen = state.get(set.owner);
    if (seen === 'done') return;
    if (seen === 'visiting') throw new Error(`Migration dependency cycle: ${[...trail, set.owner].join(' -> ')}`);
    state.set(set.owner, 'visiting');
    for (const dependency of set.dependsOn ?? []) {
      const target = byOwner.get(dependency);
      if (!target) throw new Error(`${set.owner} depends on ${dependency}, whose migrations were not supplied`);
      visit(target, [...trail, set.owner]);
    }
    state.set(set.owner, 'done');
    ordered.push(set);
  };
  for (const set of sets) visit(set, []);
  return ordered;
}

function sourceOf(set: MigrationSet): Knex.MigratorConfig {
  const names = new Set<string>();
  for (const migration of set.migrations) {
    if (names.has(migration.name)) throw new Error(`${set.owner} has two migrations named ${migration.name}`);
    names.add(migration.name);
  }
  return {
    tableName: set.tableName,
    migrationSource: {
      getMigrations: async () => [...set.migrations].sort((a, b) => compareCodeUnits(a.name, b.name)),
      getMigrationName: (migration: Migration) => migration.name,
      getMigration: async (migration: Migration) => ({
        up: (db: Knex) => migration.up(db),
        down: (db: Knex) => (migration.down ? migration.down(db) : Promise.resolve()),
      }),
    },
  };
}

/**
 * Applies every pending migration of every set, in dependency order. Safe to
 * run from several processes at once: knex holds a lock per set.
 *
 * @returns the names applied, per owner.
 */
export async function runMigrations(db: Knex, sets: readonly MigrationSet[]): Promise<MigrationSetStatus[]> {
  const report: MigrationSetStatus[] = [];
  for (const set of orderMigrationSets(sets)) {
    const [, applied] = (await db.migrate.latest(sourceOf(set))) as [number, string[]];
    const status = await migrationStatusOf(db, set);
    report.push({ owner: set.owner, applied, pending: status.pending });
  }
  return report;
}

/**
 * What a set has applied and what is pending, read without writing: a
 * migrations table that does not exist yet means nothing is applied (knex's
 * own listing would create it, and its lock table).
 *
 * @throws Error when the database records a migration the set does not have (a newer version applied it).
 */
async function migrationStatusOf(db: Knex, set: MigrationSet): Promise<MigrationSetStatus> {
  const names = migrationNames(set);
  const applied = (await db.schema.hasTable(set.tableName))
    ? (await db(set.tableName).orderBy('id').select<Array<{ name: string }>>('name')).map((row) => row.name)
    : [];
  const known = new Set(names);
  const unknown = applied.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new Error(
      `${set.owner}: the database records migrations this version does not have (${unknown.join(', ')}); a newer version of it migrated this database`,
    );
  }
  const done = new Set(applied);
  return { owner: set.owner, applied, pending: names.filter((name) => !done.has(name)) };
}

/** The names of a set's migrations in the order they apply (code units, as knex orders them). */
function migrationNames(set: MigrationSet): string[] {
  const names = set.migrations.map((migration) => migration.name);
  if (new Set(names).size !== names.length) {
    const duplicate = names.find((name, index) => names.indexOf(name) !== index);
    throw new Error(`${set.owner} has two migrations named ${duplicate}`);
  }
  return names.sort(compareCodeUnits);
}

/**
 * The status of a database that has none of the sets' tables (a SQLite file
 * that does not exist yet): every migration pending, in dependency order.
 */
export function emptyDatabaseStatus(sets: readonly MigrationSet[]): MigrationSetStatus[] {
  return orderMigrationSets(sets).map((set) => ({ owner: set.owner, applied: [], pending: migrationNames(set) }));
}

/** What every set has applied and what is pending, in dependency order. Reads only: creates no table. */
export async function migrationStatus(db: Knex, sets: readonly MigrationSet[]): Promise<MigrationSetStatus[]> {
  const report: MigrationSetStatus[] = [];
  for (const set of orderMigrationSets(sets)) report.push(await migrationStatusOf(db, set));
  return report;
}

/**
 * Refuses to go on while any migration is pending. Reads only: a database
 * without idt's tables is left without them.
 *
 * @throws PendingMigrationsError naming `migrations: 'run'` and `npx idt migrate`.
 */
export async function assertMigrated(db: Knex, sets: readonly MigrationSet[]): Promise<void> {
  const status = await migrationStatus(db, sets);
  const pending = status.filter((set) => set.pending.length > 0);
  if (pending.length > 0) throw new PendingMigrationsError(pending);
}
