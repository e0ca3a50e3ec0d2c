import type { CliIo } from './io.js';

/**
 * What a command prints: human lines on standard output and progress on
 * standard error, or, with `--json`, one JSON document on standard output
 * and nothing else.
 */
export interface Output {
  readonly json: boolean;
  /** Progress of a long step (migrations, password hashing), on standard error; silent with `--json`. */
  progress(message: string): void;
  /** A line of human output; silent with `--json`. */
  line(text?: string): void;
  /** A warning on standard error, in both modes. */
  warn(text: string): void;
  /** The JSON document of a successful run (`ok: true` is added); silent without `--json`. */
  result(document: Record<string, unknown>): void;
}

/** Creates the output of one command run. */
export function createOutput(io: CliIo, json: boolean): Output {
  return {
    json,
    progress(message) {
      if (!json) io.err(`${message}\n`);
    },
    line(text = '') {
      if (!json) io.out(`${text}\n`);
    },
    warn(text) {
      io.err(`warning: ${text}\n`);
    },
    result(document) {
      if (json) io.out(`${JSON.stringify({ ok: true, ...document }, null, 2)}\n`);
    },
  };
}
