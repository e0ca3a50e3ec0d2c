import { migrationStatus, redactDatabaseUrl, runMigrations } from '@idt/core/knex';
import { migrationSets } from '@idt/example-server';
import type { Command } from 'commander';
import { type CommonOptions, commandConfig, withDatabase } from '../context.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { examples, withCommonOptions } from './shared.js';

interface MigrateOptions extends CommonOptions {
  readonly status?: boolean;
}

/** `idt migrate [--status]`: applies the pending migrations of every package, or lists them. */
export function registerMigrate(program: Command, io: CliIo): void {
  withCommonOptions(
    program
      .command('migrate')
      .summary('apply the pending migrations of every package')
      .description(
        'Applies the pending migrations of every package, in dependency order. Safe to run from several processes at once. With --status, lists applied and pending migrations and changes nothing.',
      )
      .option('--status', 'list applied and pending migrations without applying any'),
  )
    .addHelpText(
      'after',
      examples('idt migrate', 'idt migrate --status', 'idt migrate --database postgres://idt@db.internal:5432/idt --json'),
    )
    .action(async (options: MigrateOptions) => {
      const out = createOutput(io, options.json === true);
      const config = commandConfig(io, options);
      const database = redactDatabaseUrl(config.databaseUrl);
      await withDatabase(config, async (db) => {
        if (options.status) {
          const sets = await migrationStatus(db, migrationSets);
          const pending = sets.reduce((sum, set) => sum + set.pending.length, 0);
          const width = Math.max(...sets.map((set) => set.owner.length));
          out.line(`Database: ${database}`);
          for (const set of sets) {
            const names = set.pending.length > 0 ? `: ${set.pending.join(', ')}` : '';
            out.line(`  ${set.owner.padEnd(width)}  ${set.applied.length} applied, ${set.pending.length} pending${names}`);
          }
          out.line(pending === 0 ? 'Every migration is applied.' : `${pending} migration(s) pending; run \`idt migrate\`.`);
          out.result({ database, pending, sets });
          return;
        }
        out.progress(`Applying migrations to ${database}…`);
        const sets = await runMigrations(db, migrationSets);
        const applied = sets.reduce((sum, set) => sum + set.applied.length, 0);
        for (const set of sets) {
          for (const name of set.applied) out.line(`  applied  ${set.owner}: ${name}`);
        }
        out.line(applied === 0 ? `Migrations: none pending on ${database}.` : `Migrations: ${applied} applied on ${database}.`);
        out.result({ database, applied, sets: sets.map(({ owner, applied }) => ({ owner, applied })) });
      });
    });
}
