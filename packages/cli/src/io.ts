import type { Readable } from 'node:stream';
import type { Prompter } from './prompter.js';

/** Where a run writes and what it may read. */
export interface RunOptions {
  /**
   * Standard input: the text itself (tests) or a stream (the binary). Read
   * only by options that say so, such as `idt setup --password-stdin`.
   */
  readonly stdin?: string | Readable;
  /** Environment variables the configuration is read from (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The directory relative paths are resolved against (default `process.cwd()`). */
  readonly cwd?: string;
  /**
   * Read the project env file (`IDT_ENV_FILE`, else `.env` in {@link cwd}) under
   * {@link env}, as the reference server does. Default: `true` when `env` is not
   * given (the binary), `false` when it is (a test's own environment).
   */
  readonly projectEnv?: boolean;
  /** Asks questions on a terminal; when absent, commands never prompt unless {@link interactive} is set. */
  readonly prompter?: Prompter;
  /** Whether standard input and error are a terminal, so the default prompter may ask (the binary sets it). */
  readonly interactive?: boolean;
  /** Also copy standard output here as it is written (the binary passes `process.stdout`). */
  readonly stdout?: { write(chunk: string): unknown };
  /** Also copy standard error here as it is written (the binary passes `process.stderr`). */
  readonly stderr?: { write(chunk: string): unknown };
  /** Stops a long-running command (`idt serve`) when aborted. */
  readonly signal?: AbortSignal;
}

/** What a run did: the exit code and everything it wrote. */
export interface RunResult {
  /** 0 success, 1 failed, 2 usage, 130 interrupted at a prompt. */
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The exit codes of `idt`: 130 is Ctrl-C at a prompt (128 + SIGINT, as shells report it). */
export const ExitCode = Object.freeze({ Success: 0, Failed: 1, Usage: 2, Interrupted: 130 });

/** The streams and settings of one run, as commands see them. */
export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Whether commands read the project env file under {@link env}. */
  readonly projectEnv: boolean;
  readonly interactive: boolean;
  readonly prompter: Prompter | undefined;
  readonly signal: AbortSignal | undefined;
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
  /** Reads standard input to its end. */
  readStdin(): Promise<string>;
}

/** Builds the io of a run, capturing what is written. */
export function createIo(options: RunOptions): CliIo & { captured(): { stdout: string; stderr: string } } {
  let stdout = '';
  let stderr = '';
  let stdinText: Promise<string> | undefined;
  return {
    env: options.env ?? process.env,
    cwd: options.cwd ?? process.cwd(),
    projectEnv: options.projectEnv ?? options.env === undefined,
    interactive: options.prompter !== undefined || options.interactive === true,
    prompter: options.prompter,
    signal: options.signal,
    out(text) {
      stdout += text;
      options.stdout?.write(text);
    },
    err(text) {
      stderr += text;
      options.stderr?.write(text);
    },
    readStdin() {
      stdinText ??= readAll(options.stdin);
      return stdinText;
    },
    captured: () => ({ stdout, stderr }),
  };
}

async function readAll(stdin: string | Readable | undefined): Promise<string> {
  if (stdin === undefined) return '';
  if (typeof stdin === 'string') return stdin;
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
