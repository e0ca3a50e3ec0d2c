import { ConfigError, type ConfigOrigin, isDatabaseUnavailable, PROJECT_ENV_FILE, variableOrigin } from '@idt/core';
import { PendingMigrationsError } from '@idt/core/knex';
import { ProblemError, type ProblemFieldErrors, toProblemError } from '@idt/problem';
import { ExitCode } from './io.js';

/**
 * A failure of the CLI itself (not of a service), with a stable code in the
 * `Area.Reason` style of problem codes, such as `Cli.EnvFileExists`.
 */
export class CliError extends Error {
  /** The stable code, e.g. `Cli.EnvFileExists`. */
  readonly code: string;
  /** 1 (failed) or 2 (usage). */
  readonly exitCode: number;
  /** Lines shown below the error line in human output. */
  readonly hints: readonly string[];

  constructor(code: string, detail: string, options: { exitCode?: number; hints?: readonly string[]; cause?: unknown } = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.code = code;
    this.exitCode = options.exitCode ?? ExitCode.Failed;
    this.hints = options.hints ?? [];
  }
}

/** A command used the wrong way: exit code 2, like commander's own usage errors. */
export function usageError(detail: string): CliError {
  return new CliError('Cli.Usage', detail, { exitCode: ExitCode.Usage });
}

/** Whether a thrown value is an `@inquirer/prompts` prompt ended by Ctrl-C (or closed input). */
export function isPromptInterrupted(error: unknown): boolean {
  const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
  return (
    name === 'ExitPromptError' ||
    name === 'AbortPromptError' ||
    (typeof message === 'string' && message.includes('User force closed the prompt'))
  );
}

/** A setting given by a command option or the config file instead of its environment variable. */
export interface SettingOverride {
  /** Where the value was given: `--database`, `database in ./idt.config.mjs`. */
  readonly label: string;
  /** What to do about an invalid value: `pass a valid --database: …`. */
  readonly fix: string;
  /** The value as the operator may see it (a database URL with its password masked). */
  readonly shown?: string;
}

/** Where the settings of a run were read from, for configuration errors. */
export interface SettingsSource extends ConfigOrigin {
  /** `the environment`, `the env of ./idt.config.mjs`, or the env file a command read. */
  readonly description: string;
  /**
   * The settings given over the environment, by the variable they stand for
   * (`IDT_DATABASE_URL` → `--database`): an error about one names the option
   * or the config file, not the environment or the env file.
   */
  readonly overrides?: ReadonlyMap<string, SettingOverride>;
}

/** `a`, `a and b`, `a, b and c`. */
function joinAnd(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** The fix of one configuration problem (`NAME: message`), naming the variable and where to set it. */
function configFix(problem: string, origin: ConfigOrigin): string {
  const [name = '', ...rest] = problem.split(':');
  const message = rest.join(':').trim();
  const variable = name.trim();
  if (!/^[A-Z][A-Z0-9_]*$/.test(variable)) return 'see docs/configuration.md';
  const from = variableOrigin(variable, origin);
  // Where to write the fix: the file the value came from, else the project env file.
  const where =
    from !== 'the environment'
      ? `in ${from}`
      : origin.envFile
        ? `in ${origin.envFile} (or export it)`
        : `in ./${PROJECT_ENV_FILE} (or export it)`;
  if (/is required in Production/.test(message)) {
    return `set ${variable} ${where} (see docs/configuration.md), or run outside Production: IDT_ENVIRONMENT=Development ${where}`;
  }
  if (variable === 'IDT_ENV_FILE') return 'see docs/configuration.md#the-project-env-file';
  return `set ${variable} to a valid value ${where} (see docs/configuration.md)`;
}

/**
 * A configuration error as the CLI reports it: one line naming the invalid
 * variables and where they were read from, one hint per problem naming where
 * its value came from and the fix.
 */
export function configError(error: ConfigError, source: SettingsSource): CliError {
  const origin: ConfigOrigin = error.origin?.envFile ? error.origin : source;
  const variableOf = (problem: string) => problem.split(':')[0]?.trim() ?? problem;
  const names = [...new Set(error.problems.map(variableOf))];
  // A value an option or the config file gave is blamed on them, not on the environment or its env file.
  const places = [...new Set(names.map((name) => source.overrides?.get(name)?.label ?? source.description))];
  const detail = `Invalid configuration in ${joinAnd(places)}: ${names.join(', ')}.`;
  const hints = error.problems.map((problem) => {
    const variable = variableOf(problem);
    const override = source.overrides?.get(variable);
    if (override) {
      const given = `given by ${override.label}${override.shown === undefined ? '' : ` ${override.shown}`}`;
      return `${problem.replace(/\.?$/, '')} (${given}). Fix: ${override.fix}.`;
    }
    const from = origin.envFile && origin.fromFile?.has(variable) ? ` (set in ${origin.envFile})` : '';
    return `${problem.replace(/\.?$/, '')}${from}. Fix: ${configFix(problem, origin)}.`;
  });
  return new CliError('Config.Invalid', detail, { hints, cause: error });
}

/** The SQLSTATEs of a PostgreSQL login refused for its user or password. */
const AUTH_FAILED = new Set(['28P01', '28000']);

/** The first value in a `cause` / `errors` chain that satisfies `test`. */
function findInChain(
  error: unknown,
  test: (value: Record<string, unknown>) => boolean,
  depth = 0,
): Record<string, unknown> | undefined {
  if (typeof error !== 'object' || error === null || depth > 5) return undefined;
  const value = error as Record<string, unknown>;
  if (test(value)) return value;
  const inCause = findInChain(value.cause, test, depth + 1);
  if (inCause) return inCause;
  return Array.isArray(value.errors) ? value.errors.map((inner) => findInChain(inner, test, depth + 1)).find(Boolean) : undefined;
}

/**
 * Classifies a failure to reach a database: wrong credentials
 * (`Database.AuthenticationFailed`), or a server that is down, refuses,
 * times out, a database that does not exist, a SQLite file that cannot be
 * opened (`Database.Unreachable`). `undefined` for anything else.
 *
 * @param database the database as shown to the operator, its password masked.
 * @param from where the database was given, for the hint: `--database`, `IDT_DATABASE_URL in /srv/idt/.env`.
 */
export function databaseError(
  error: unknown,
  database = 'the database',
  from = 'IDT_DATABASE_URL (or --database)',
): CliError | undefined {
  if (error instanceof CliError) return undefined;
  const code = (value: Record<string, unknown>) => (typeof value.code === 'string' ? value.code : '');
  const auth = findInChain(error, (value) => AUTH_FAILED.has(code(value)));
  if (auth) {
    return new CliError(
      'Database.AuthenticationFailed',
      `The database refused the login: ${String(auth.message).split('\n')[0]}.`,
      {
        hints: [`Check the user and password in ${from}; the URL used was ${database}.`],
        cause: error,
      },
    );
  }
  const missing = findInChain(error, (value) => code(value) === '3D000');
  const sqlite = findInChain(error, (value) => /^SQLITE_(CANTOPEN|READONLY|PERM|NOTADB)/.test(code(value)));
  if (missing || sqlite || isDatabaseUnavailable(error)) {
    const reason = String(
      (missing ?? sqlite ?? findInChain(error, (value) => typeof value.message === 'string'))?.message ?? error,
    )
      .split('\n')[0]
      ?.replace(/^Knex: /, '');
    return new CliError('Database.Unreachable', `Cannot reach the database ${database}: ${reason}.`, {
      hints: [
        `Check ${from}, and that the database server is running and accepts connections there.`,
        'For SQLite (sqlite:<file>), the file’s directory must exist or be creatable, and be writable.',
      ],
      cause: error,
    });
  }
  return undefined;
}

/** A value as one shell word: as is when it needs no quotes, else in single quotes. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Pending migrations as the CLI reports them (`Migrations.Pending`): the
 * command that applies them, with the `--config` and `--database` of the
 * refused command, and one hint per migration.
 *
 * @param migrate the command to run, e.g. `idt migrate --database sqlite:./x.sqlite`.
 */
export function pendingMigrationsError(error: PendingMigrationsError, migrate = 'idt migrate'): CliError {
  const names = error.pending.flatMap((set) => set.pending.map((name) => `- ${set.owner}: ${name}`));
  // The password of --database is not printed: the operator puts it back.
  const masked = migrate.includes(':***@') ? ['Put the password of --database back where *** stands.'] : [];
  return new CliError('Migrations.Pending', `The database has ${names.length} pending migration(s); run \`${migrate}\` first.`, {
    hints: [...masked, ...names],
    cause: error,
  });
}

/** How a failure is reported: the `--json` error member and the human error line. */
export interface DescribedError {
  readonly code: string;
  readonly detail: string;
  /** Field messages of a validation problem, keyed by member path. */
  readonly errors?: ProblemFieldErrors;
  /** Lines shown below the error line (human output only). */
  readonly hints: readonly string[];
  readonly exitCode: number;
}

/**
 * Maps any thrown value onto a code and a detail. Problems keep theirs; a
 * server failure shows its cause's message, since the operator at the
 * terminal is the one who has to act on it.
 */
export function describeError(error: unknown): DescribedError {
  if (error instanceof CliError) {
    return { code: error.code, detail: error.message, hints: error.hints, exitCode: error.exitCode };
  }
  if (error instanceof ConfigError) return describeError(configError(error, { description: 'the environment' }));
  const unreachable = databaseError(error);
  if (unreachable) return describeError(unreachable);
  if (error instanceof PendingMigrationsError) return describeError(pendingMigrationsError(error));
  const problem = toProblemError(error);
  if (!(problem instanceof ProblemError)) {
    return { code: 'Server.Error', detail: firstLine(problem.message), hints: [], exitCode: ExitCode.Failed };
  }
  const cause = problem.code === 'Server.Error' ? (problem.cause ?? error) : undefined;
  const detail = cause instanceof Error && cause.message ? firstLine(cause.message) || problem.detail : problem.detail;
  return {
    code: problem.code,
    detail,
    ...(problem.errors ? { errors: problem.errors } : {}),
    hints: [],
    exitCode: ExitCode.Failed,
  };
}

/** The one human error line: the detail, the field messages, and the code. */
export function errorLine(described: DescribedError): string {
  const fields = Object.entries(described.errors ?? {})
    .map(([field, messages]) => `${field === '' ? '(file)' : field}: ${messages.join(' ')}`)
    .join('; ');
  return `error: ${described.detail}${fields ? ` ${fields}` : ''} (${described.code})`;
}

/** The first line of a message: errors are one line. */
function firstLine(message: string): string {
  return message.split('\n')[0]?.trim() ?? '';
}
