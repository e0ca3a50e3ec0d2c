import { existsSync } from 'node:fs';
import { type MigrationSetStatus, migrationStatus, orderMigrationSets, runMigrations } from '@idt/core/knex';
import type { Command } from 'commander';
import {
  type CommonOptions,
  commandTarget,
  describeComposition,
  type GlobalOptions,
  sqliteFile,
  withDatabase,
} from '../context.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { examples, withCommonOptions } from './shared.js';

interface MigrateOptions extends CommonOptions {
  readonly status?: boolean;
}

/** `idt migrate [--status]`: applies the pending migrations of the composition, or lists them. */
export function registerMigrate(program: Command, io: CliIo): void {
  withCommonOptions(
    program
      .command('migrate')
      .summary('apply the pending migrations of the composed modules')
      .description(
        'Applies the pending migrations of core and of every module the config file composes (without one, the reference modules), in dependency order; nothing of modules it does not compose. Safe to run from several processes at once; a SQLite file and its directory are created when missing. With --status, lists applied and pending migrations and changes nothing: a SQLite file that does not exist is reported so, with every migration pending, and is not created.',
      )
      .option('--status', 'list applied and pending migrations without applying any'),
  )
    .addHelpText(
      'after',
      examples(
        'idt migrate',
        'idt migrate --status',
        'idt migrate --config deploy/idt.config.mjs',
        'idt migrate --database postgres://idt@db.internal:5432/idt --json',
      ),
    )
    .action(async (options: MigrateOptions) => {
      const out = createOutput(io, options.json === true);
      // Migrations neither send mail nor touch signing keys.
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options, {
        requires: { mail: false, keyEncryptionSecret: false },
      });
      const { database, migrationSets } = target;
      const modules = target.composition.modules.map((module) => module.id);
      const config = target.composition.file ?? null;
      const printStatus = (sets: MigrationSetStatus[], exists: boolean) => {
        const pending = sets.reduce((sum, set) => sum + set.pending.length, 0);
        const width = Math.max(...sets.map((set) => set.owner.length));
        out.line(`Database: ${database}${exists ? '' : ' (does not exist yet)'}`);
        out.line(`Modules:  ${describeComposition(target)}`);
        for (const set of sets) {
          const names = set.pending.length > 0 ? `: ${set.pending.join(', ')}` : '';
          out.line(`  ${set.owner.padEnd(width)}  ${set.applied.length} applied, ${set.pending.length} pending${names}`);
        }
        out.line(pending === 0 ? 'Every migration is applied.' : `${pending} migration(s) pending; run \`idt migrate\`.`);
        out.result({ database, exists, config, modules, pending, sets });
      };
      const file = target.knex ? undefined : sqliteFile(target.config.databaseUrl);
      if (options.status && file !== undefined && !existsSync(file)) {
        // --status changes nothing: no directory, no file; every migration is pending.
        const sets = orderMigrationSets(migrationSets).map((set) => ({
          owner: set.owner,
          applied: [],
          pending: set.migrations.map((migration) => migration.name),
        }));
        printStatus(sets, false);
        return;
      }
      await withDatabase(target, async (db) => {
        if (options.status) {
          printStatus(await migrationStatus(db, migrationSets), true);
          return;
        }
        out.progress(`Applying migrations to ${database} for ${describeComposition(target)}…`);
        const sets = await runMigrations(db, migrationSets);
        const applied = sets.reduce((sum, set) => sum + set.applied.length, 0);
        for (const set of sets) {
          for (const name of set.applied) out.line(`  applied  ${set.owner}: ${name}`);
        }
        out.line(applied === 0 ? `Migrations: none pending on ${database}.` : `Migrations: ${applied} applied on ${database}.`);
        out.result({ database, config, modules, applied, sets: sets.map(({ owner, applied }) => ({ owner, applied })) });
      });
    });
}
