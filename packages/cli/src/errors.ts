import { ConfigError } from '@idt/core';
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
  if (error instanceof ConfigError) {
    return { code: 'Config.Invalid', detail: 'Invalid configuration.', hints: error.problems, exitCode: ExitCode.Failed };
  }
  if (error instanceof PendingMigrationsError) {
    const [first = error.message, ...rest] = error.message.split('\n');
    return { code: 'Migrations.Pending', detail: first.replace(/:$/, '.'), hints: rest.map((line) => line.trim()), exitCode: 1 };
  }
  const problem = toProblemError(error);
  if (!(problem instanceof ProblemError)) {
    return { code: 'Server.Error', detail: problem.message, hints: [], exitCode: ExitCode.Failed };
  }
  const cause = problem.code === 'Server.Error' ? (problem.cause ?? error) : undefined;
  const detail = cause instanceof Error && cause.message ? cause.message.split('\n')[0] || problem.detail : problem.detail;
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
