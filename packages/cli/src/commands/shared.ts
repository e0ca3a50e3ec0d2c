import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { ProblemError } from '@idt/problem';
import type { Command } from 'commander';
import { CliError, usageError } from '../errors.js';
import type { CliIo } from '../io.js';

/** Adds `--database` and `--json`, which every command takes. */
export function withCommonOptions(command: Command): Command {
  return command
    .option('--database <url>', 'the database: sqlite:<file> or postgres://… (default: IDT_DATABASE_URL)')
    .option('--json', 'print one JSON document on standard output, for scripts');
}

/** Adds `--env-file`, its alias `--env-out`, and `--force`. */
export function withEnvFileOptions(command: Command, what: string): Command {
  return command
    .option('--env-out <path>', `write ${what} (mode 0600); works under npx`)
    .option('--env-file <path>', 'the same as --env-out where idt is started directly (npx takes --env-file itself: exit 9)')
    .option('--force', 'overwrite an existing env file');
}

/** The options `withEnvFileOptions` adds. */
export interface EnvFileOptions {
  readonly envFile?: string;
  readonly envOut?: string;
  readonly force?: boolean;
}

/**
 * The env file a command writes, resolved against the working directory.
 *
 * @throws CliError (usage) when `--env-file` and `--env-out` name different files.
 */
export function envFileOption(io: CliIo, options: EnvFileOptions): string | undefined {
  if (options.envFile !== undefined && options.envOut !== undefined && options.envFile !== options.envOut) {
    throw usageError('--env-file and --env-out name different files; give one of them.');
  }
  const path = options.envFile ?? options.envOut;
  return path === undefined ? undefined : resolve(io.cwd, path);
}

/** Splits repeated or space- and comma-separated option values (`--scope "a b" --scope c`). */
export function splitList(values: readonly string[] | undefined): string[] {
  return (values ?? []).flatMap((value) => value.split(/[\s,]+/)).filter(Boolean);
}

/** Collects a repeatable option's values. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Formats examples for `--help`. */
export function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;
}

/** What {@link readCommandVariables} needs besides the file. */
export interface CommandVariablesOptions {
  /** Variables that must be set. */
  readonly required: readonly string[];
  /** The hint when the file cannot be read. */
  readonly unreadableHint: string;
  /** The hint when required variables are missing: from the environment, or from the file at `where`. */
  readonly missingHint: (where: string | undefined) => string;
}

/**
 * The variables a command reads from an env file (`source`, relative to the
 * working directory) or, without one, from the environment; `where` names
 * their origin for error messages.
 *
 * @throws CliError `Cli.EnvFileUnreadable` when the file cannot be read; `Config.Invalid` when a required variable is missing.
 */
export async function readCommandVariables(
  io: CliIo,
  source: string | undefined,
  options: CommandVariablesOptions,
): Promise<{ variables: Readonly<Record<string, string | undefined>>; where: string }> {
  let variables: Readonly<Record<string, string | undefined>> = io.env;
  let where = 'the environment';
  if (source !== undefined) {
    where = resolve(io.cwd, source);
    try {
      variables = parseEnv(await readFile(where, 'utf8'));
    } catch (error) {
      throw new CliError('Cli.EnvFileUnreadable', `Cannot read the env file ${where}: ${(error as Error).message}`, {
        hints: [options.unreadableHint],
      });
    }
  }
  const missing = options.required.filter((name) => !variables[name]);
  if (missing.length > 0) {
    throw new CliError('Config.Invalid', `${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not set in ${where}.`, {
      hints: [options.missingHint(source === undefined ? undefined : where)],
    });
  }
  return { variables, where };
}

/**
 * Runs a call on one client, answering an unknown client (`Clients.NotFound`)
 * with a detail that names it, and the organization only when the command
 * was given one: the services' own detail speaks of "this organization",
 * which a command without `--org` has none of.
 */
export async function onClient<T>(
  clientId: string,
  organization: { readonly name: string; readonly slug: string } | undefined,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof ProblemError) || error.code !== 'Clients.NotFound') throw error;
    const where = organization ? ` in the organization ${organization.name} (${organization.slug})` : '';
    throw new ProblemError('Clients.NotFound', `No client ${clientId} exists${where}.`, { cause: error });
  }
}
