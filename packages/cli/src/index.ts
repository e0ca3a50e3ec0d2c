/**
 * The `idt` command line as a library: {@link run} executes a command
 * in-process (what the binary and the tests do), the config-file helpers find
 * and load an `idt.config` module as the commands do, and the seed-file and
 * env-file helpers serve embedders who bootstrap deployments from code.
 *
 * @packageDocumentation
 */
export { CLI_VERSION, createProgram, run } from './cli.js';
export { DEMO_ADMIN_EMAIL, DEMO_PASSWORD_FILE, DEMO_SIGN_IN_REDIRECT_URI, demoSeed } from './commands/demo.js';
export type { SignInTokens } from './commands/sign-in.js';
export type { Composition, ConfigImporters, IdtConfigOptions } from './composition.js';
export { CONFIG_FILE_NAMES, findConfigFile, loadComposition, loadConfigFile, referenceModules } from './composition.js';
export type { EnvFileSource } from './env-file.js';
export {
  assertEnvFileFree,
  envFileComments,
  envFileVariables,
  generateCookiePassword,
  renderEnvFile,
  writeClientEnvFile,
  writeEnvFile,
} from './env-file.js';
export type { DescribedError } from './errors.js';
export { CliError, describeError, errorLine } from './errors.js';
export type { CliIo, RunOptions, RunResult } from './io.js';
export { ExitCode } from './io.js';
export type { AnswerCheck, Prompter } from './prompter.js';
export { createTerminalPrompter } from './prompter.js';
export type { ApplySeedOptions, SeededSecret, SeedOutcome, SeedReport, SeedServices, SeedStep } from './seed/apply.js';
export { applySeed, seedModules } from './seed/apply.js';
export type { SeedFile, SeedFileInput } from './seed/schema.js';
export {
  loadSeedFile,
  parseSeed,
  SeedAdmin,
  SeedClient,
  SeedFileSchema,
  SeedMembership,
  SeedOrganization,
  SeedScope,
  SeedUser,
  seededClientKind,
  seedJsonSchema,
} from './seed/schema.js';
