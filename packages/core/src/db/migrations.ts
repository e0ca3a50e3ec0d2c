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

/** Thrown when a server would start on a database with pending migrations. */
export class PendingMigrationsError extends Error {
  readonly pending: MigrationSetStatus[];
  constructor(pending: MigrationSetStatus[]) {
    const list = pending.flatMap((set) => set.pending.map((name) => `${set.owner}: ${name}`));
    super(
      `The database has ${list.length} pending migration(s); run \`idt migrate\` (or \`npm run migrate\`) first:\n${list
        .map((line) => `  - ${line}`)
        .join('\n')}`,
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

async function migrationStatusOf(db: Knex, set: MigrationSet): Promise<MigrationSetStatus> {
  const [completed, pending] = (await db.migrate.list(sourceOf(set))) as [
    Array<string | { name: string }>,
    Array<Migration | { file: string }>,
  ];
  return {
    owner: set.owner,
    applied: completed.map((entry) => (typeof entry === 'string' ? entry : entry.name)),
    pending: pending.map((entry) => ('name' in entry ? entry.name : entry.file)),
  };
}

/** What every set has applied and what is pending, in dependency order. */
export async function migrationStatus(db: Knex, sets: readonly MigrationSet[]): Promise<MigrationSetStatus[]> {
  const report: MigrationSetStatus[] = [];
  for (const set of orderMigrationSets(sets)) report.push(await migrationStatusOf(db, set));
  return report;
}

/**
 * Refuses to go on while any migration is pending.
 *
 * @throws PendingMigrationsError naming `idt migrate`.
 */
export async function assertMigrated(db: Knex, sets: readonly MigrationSet[]): Promise<void> {
  const status = await migrationStatus(db, sets);
  const pending = status.filter((set) => set.pending.length > 0);
  if (pending.length > 0) throw new PendingMigrationsError(pending);
}
