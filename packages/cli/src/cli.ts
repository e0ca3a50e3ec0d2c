import { Command, CommanderError } from 'commander';
import { registerAudit } from './commands/audit.js';
import { registerClientCommands } from './commands/clients.js';
import { registerDemo } from './commands/demo.js';
import { registerMigrate } from './commands/migrate.js';
import { registerClientAdmin, registerOrganizationAdmin, registerToken, registerUserAdmin } from './commands/operator.js';
import { registerSeed } from './commands/seed.js';
import { registerServe } from './commands/serve.js';
import { registerSetup } from './commands/setup.js';
import { registerSignIn } from './commands/sign-in.js';
import { describeError, errorLine, isPromptInterrupted } from './errors.js';
import { type CliIo, createIo, ExitCode, type RunOptions, type RunResult } from './io.js';

/** The version `idt --version` prints. */
export const CLI_VERSION = '0.1.0';

/**
 * Builds the `idt` program for one run: commander with `exitOverride`, so
 * usage errors and `--help` come back as exceptions instead of exiting.
 */
export function createProgram(io: CliIo): Command {
  const program = new Command('idt')
    .description(
      'The idt command line: migrate and serve a composition of idt modules, bootstrap setup mode, seed, and manage OAuth clients. The modules come from the config file (--config, else idt.config.ts, .mts, .mjs or .js in the working directory), else the reference modules (identity, oidc, and inquiries and storage when installed). Settings come from the environment variables of docs/configuration.md, over the project env file (./.env, which npm start and idt demo write; IDT_ENV_FILE names another).',
    )
    .version(CLI_VERSION)
    .option(
      '--config <path>',
      'the config file whose default export composes the modules (default: ./idt.config.{ts,mts,mjs,js}, else the reference modules)',
    )
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) })
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError('(run idt <command> --help for usage and examples)')
    .addHelpText(
      'after',
      [
        '',
        'Exit codes: 0 success, 1 failed, 2 usage, 130 interrupted (Ctrl-C at a question).',
        "Every command takes --config <path>, --database <url> (default: the config file's database, else IDT_DATABASE_URL) and --json.",
        'Documentation: docs/cli.md',
      ].join('\n'),
    );
  registerMigrate(program, io);
  registerServe(program, io);
  registerSetup(program, io);
  registerSeed(program, io);
  registerClientCommands(program, io);
  registerClientAdmin(program, io);
  registerOrganizationAdmin(program, io);
  registerUserAdmin(program, io);
  registerToken(program, io);
  registerAudit(program, io);
  registerSignIn(program, io);
  registerDemo(program, io);
  return program;
}

/**
 * Runs `idt` in-process with `argv` (without the `node` and script names)
 * and returns the exit code and the captured output. The binary is this
 * function with the process's streams.
 *
 * @example
 * const { exitCode, stdout } = await run(['register-client', '--org', 'acme', '--kind', 'service-account',
 *   '--name', 'Reporting', '--scope', 'users.read', '--json'], { env: { IDT_DATABASE_URL: 'sqlite:./data/idt.sqlite' } });
 */
export async function run(argv: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const io = createIo(options);
  const json = argv.includes('--json');
  let exitCode: number = ExitCode.Success;
  try {
    await createProgram(io).parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end with exit code 0; everything else commander refuses is a usage error.
      exitCode = error.exitCode === 0 ? ExitCode.Success : ExitCode.Usage;
      if (exitCode !== ExitCode.Success && json) {
        const detail = error.message.replace(/^error: /, '');
        io.out(`${JSON.stringify({ ok: false, error: { code: 'Cli.Usage', detail } }, null, 2)}\n`);
      }
    } else if (isPromptInterrupted(error)) {
      // Ctrl-C at a question: the person chose to stop; nothing to report.
      exitCode = ExitCode.Interrupted;
    } else {
      const described = describeError(error);
      exitCode = described.exitCode;
      if (json) {
        const { code, detail, errors } = described;
        io.out(`${JSON.stringify({ ok: false, error: { code, detail, ...(errors ? { errors } : {}) } }, null, 2)}\n`);
      }
      io.err(`${errorLine(described)}\n`);
      for (const hint of described.hints) io.err(`  ${hint}\n`);
    }
  }
  return { exitCode, ...io.captured() };
}
