import { basename, dirname, resolve } from 'node:path';
import { ValidationProblem } from '@idt/problem';
import type { Command } from 'commander';
import {
  type CommandTarget,
  type CommonOptions,
  commandTarget,
  type GlobalOptions,
  withServices,
  withServicesInTransaction,
} from '../context.js';
import type { CliIo } from '../io.js';
import { createOutput, type Output } from '../output.js';
import { applySeed, checkSeedReferences, type SeedReport, seedModules, writeSeedEnvFiles } from '../seed/apply.js';
import { readSeedFile } from '../seed/schema.js';
import { recordSeedApplied } from './operator-audit.js';
import { type EnvFileOptions, envFileOption, examples, withCommonOptions, withEnvFileOptions } from './shared.js';

interface SeedOptions extends CommonOptions, EnvFileOptions {
  readonly file: string;
}

/**
 * The faults of what an invalid seed document refers to (organizations,
 * roles, scopes), read without writing; none when the database cannot be
 * read (the file's own faults are reported then, the database's on the next run).
 */
async function referenceFaults(
  io: CliIo,
  out: Output,
  target: CommandTarget,
  document: unknown,
): Promise<Record<string, string[]>> {
  if (!target.composition.has('identity')) return {};
  try {
    return await withServices(io, out, target, { command: 'seed', modules: ['identity'] }, (services) =>
      checkSeedReferences(services, document),
    );
  } catch {
    return {};
  }
}

/** Prints a seed report: one line per entry, the new secrets once, and a summary. */
export function printSeedReport(out: Output, report: SeedReport, source: string): void {
  const typeWidth = Math.max(0, ...report.steps.map((step) => step.type.length));
  for (const step of report.steps) {
    const detail = step.detail ? `  (${step.detail})` : '';
    out.line(`  ${step.outcome.padEnd(9)}  ${step.type.padEnd(typeWidth)}  ${step.name}${detail}`);
  }
  const shown = report.secrets.filter((secret) => secret.envFile === undefined);
  if (shown.length > 0) {
    out.line('Secrets of the new clients, shown only now (they cannot be fetched again):');
    for (const secret of shown) out.line(`  ${secret.clientId}  ${secret.clientSecret}`);
  }
  for (const secret of report.secrets) {
    if (secret.envFile !== undefined) out.line(`Wrote ${secret.envFile} (mode 0600) for ${secret.clientId}.`);
  }
  const count = (outcome: string) => report.steps.filter((step) => step.outcome === outcome).length;
  out.line(
    report.changed
      ? `Seed applied: ${count('created')} created, ${count('updated')} updated, ${count('unchanged')} unchanged, ${count('skipped')} skipped.`
      : `Nothing changed: everything in ${source} is already in place.`,
  );
  if (!report.changed) return;
  for (const [kind, counts] of Object.entries(report.counts)) {
    const parts = (['created', 'updated', 'unchanged', 'skipped'] as const)
      .filter((outcome) => counts[outcome] > 0)
      .map((outcome) => `${counts[outcome]} ${outcome}`);
    out.line(`  ${`${kind}s:`.padEnd(typeWidth + 2)}  ${parts.join(', ')}`);
  }
}

/** The `--json` answer of a seed: what changed, the counts per kind, every step and the new clients' secrets. */
export function seedResult(report: SeedReport): Record<string, unknown> {
  return { changed: report.changed, counts: report.counts, steps: report.steps, clients: report.secrets };
}

/** `idt seed --file seed.json|seed.yaml`: applies a seed file (docs/seed-file.md), idempotently. */
export function registerSeed(program: Command, io: CliIo): void {
  withEnvFileOptions(
    withCommonOptions(
      program
        .command('seed')
        .summary('apply a seed file: admin, organizations, users, scopes, clients')
        .description(
          'Applies a seed file (JSON or YAML, docs/seed-file.md): the first administrator, organizations, users and memberships, scope rows and first-party clients, through the same services as the HTTP API. Needs the identity module, and the oidc module for scopes and clients. All or nothing: the whole file is checked first (fields, organizations, scopes, env files), then applied in one database transaction, so a refused entry leaves the database as it was. Idempotent: what exists is left unchanged, and a second run says that nothing changed. Reports what was created, updated or left unchanged per kind. Secrets of new clients are shown once or written to their env files.',
        )
        .requiredOption('--file <path>', 'the seed file: .json, or .yaml / .yml'),
    ),
    'the variables of the one new client that names no envFile',
  )
    .addHelpText(
      'after',
      examples(
        "BOB_PASSWORD='a long passphrase for bob' idt seed --file seed.yaml",
        'idt seed --file seed.json --env-out reporting.env --json',
      ),
    )
    .action(async (options: SeedOptions) => {
      const out = createOutput(io, options.json === true);
      const file = resolve(io.cwd, options.file);
      const checked = await readSeedFile(file, io.env);
      const envFile = envFileOption(io, options);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      const seed = checked.seed;
      if (!seed) {
        // The file is refused; what it refers to is checked all the same, so one run names every fault.
        const references = await referenceFaults(io, out, target, checked.document);
        const errors: Record<string, string[]> = { ...checked.errors };
        for (const [field, messages] of Object.entries(references)) errors[field] = [...(errors[field] ?? []), ...messages];
        throw new ValidationProblem(errors, `The seed file ${basename(file)} is invalid.`);
      }
      const needs = { command: 'seed', modules: seedModules(seed) };
      const report = await withServicesInTransaction(io, out, target, needs, async (services, idt) => {
        const applied = await applySeed({ services }, seed, {
          baseDir: dirname(file),
          ...(envFile !== undefined ? { envFile } : {}),
          force: options.force === true,
          command: 'idt seed',
          progress: out.progress,
          writeEnvFiles: false,
        });
        await recordSeedApplied(idt, applied, { command: 'idt seed', file: basename(file) });
        return applied;
      });
      // Committed: only now the env files of the new clients.
      await writeSeedEnvFiles(report, { command: 'idt seed', force: options.force === true });
      printSeedReport(out, report, basename(file));
      out.result(seedResult(report));
    });
}
