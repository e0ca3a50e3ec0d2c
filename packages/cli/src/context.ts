import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  ConfigError,
  createIdt,
  createLogger,
  type Env,
  explainKeyDecryption,
  type Idt,
  type IdtConfig,
  type IdtConfigOverrides,
  type LoadConfigOptions,
  type Logger,
  loadConfig,
  loadProjectEnv,
  migrationSetsOf,
  type ProjectEnv,
  splitBaseUrl,
  variableOrigin,
} from '@idt/core';
import { assertMigrated, databaseConfig, type MigrationSet, PendingMigrationsError, redactDatabaseUrl } from '@idt/core/knex';
import type { IdentityServices } from '@idt/identity';
import type { ClientActor, OidcServices } from '@idt/oidc';
import knexFactory, { type Knex } from 'knex';
import { type Composition, loadComposition } from './composition.js';
import {
  CliError,
  configError,
  databaseError,
  pendingMigrationsError,
  type SettingOverride,
  type SettingsSource,
  shellWord,
} from './errors.js';
import type { CliIo } from './io.js';
import { type CommandMailer, createCommandMailer, nodemailerMissingError, withoutNodemailerWarnings } from './mail.js';
import type { Output } from './output.js';

/**
 * Who the CLI acts as on the clients service: the platform operator, who may
 * grant platform-only scopes (SPEC-NOTES: seeding may).
 */
export const OPERATOR: ClientActor = Object.freeze({ userId: null, platformAdmin: true });

/** The options every command takes. */
export interface CommonOptions {
  /** `--database <url>`: over the config file's `database` and `IDT_DATABASE_URL`. */
  readonly database?: string;
  /** `--json`: one JSON document on standard output. */
  readonly json?: boolean;
}

/** The options of `idt` itself, given before or after the command. */
export interface GlobalOptions {
  /** `--config <path>`: the config file; `idt.config.{ts,mts,mjs,js}` in the working directory by default. */
  readonly config?: string;
}

/** What a command works on: the composition, its settings and its database. */
export interface CommandTarget {
  readonly composition: Composition;
  /** The settings: the environment, under the config file's options, under the command's options. */
  readonly config: IdtConfig;
  /** Where the modules read their settings: the config file's `env`, else the run's environment. */
  readonly env: Env;
  /** The migration sets of the composition: core's and each module's, in order. */
  readonly migrationSets: readonly MigrationSet[];
  /** The config file's own knex instance, when it gives one and `--database` does not replace it. */
  readonly knex: Knex | undefined;
  /** The database for messages, its password masked. */
  readonly database: string;
  /** Where the settings were read from, for configuration errors. */
  readonly source: SettingsSource;
  /** Where the database was given, for its errors: `--database`, `IDT_DATABASE_URL in /srv/idt/.env`, … */
  readonly databaseOrigin: string;
  /** The command that applies the pending migrations of this target: `idt migrate` with the same `--config` and `--database`. */
  readonly migrateCommand: string;
}

/** Settings a command adds to the configuration. */
export interface TargetSettings {
  /**
   * Under the config file's settings, given the environment the settings are
   * read from: the demo's Development environment when `IDT_ENVIRONMENT` is unset.
   */
  readonly defaults?: (env: Env) => IdtConfigOverrides;
  /** Over everything but `--database` (`--port`, `--host`). */
  readonly overrides?: IdtConfigOverrides;
  /**
   * The settings of those Production requires that the command uses. Default:
   * the key-encryption secret (every command that composes the modules), not
   * SMTP (only `idt serve` sends mail; other commands leave mail-sending
   * events to the server in Production without `IDT_SMTP_URL`).
   */
  readonly requires?: LoadConfigOptions['requires'];
}

/**
 * The project env file under the run's environment (see `loadProjectEnv` of
 * `@idt/core`), when the run reads it; the run's environment alone otherwise.
 *
 * @throws CliError `Config.Invalid` when `IDT_ENV_FILE` names a missing or unreadable file.
 */
export function projectEnvOf(io: CliIo): ProjectEnv {
  if (!io.projectEnv) return { env: io.env, envFile: undefined, fromFile: new Set(), directory: io.cwd };
  try {
    return loadProjectEnv({ cwd: io.cwd, env: io.env });
  } catch (error) {
    if (error instanceof ConfigError) throw configError(error, { description: 'the environment' });
    throw error;
  }
}

/**
 * Loads what a command works on: the config file (`--config`, else
 * `idt.config.*` in the working directory) or the reference modules, and the
 * settings, with the database from `--database`, else the config file's
 * `database`, else `IDT_DATABASE_URL`.
 *
 * @throws CliError for a missing or invalid config file; ConfigError listing every invalid setting.
 */
export async function commandTarget(
  io: CliIo,
  global: GlobalOptions,
  options: CommonOptions,
  settings: TargetSettings = {},
): Promise<CommandTarget> {
  const project = projectEnvOf(io);
  const composition = await loadComposition(io.cwd, global.config);
  const file = composition.options;
  const env = file.env ?? project.env;
  // A knex instance is a function: anything but a URL is the host's own pool.
  const knex =
    options.database === undefined && file.database !== undefined && typeof file.database !== 'string'
      ? file.database
      : undefined;
  const databaseUrl = options.database ?? (typeof file.database === 'string' ? file.database : undefined);
  const top: IdtConfigOverrides = { ...settings.overrides, ...(databaseUrl !== undefined ? { databaseUrl } : {}) };
  const overrides = settingOverrides(composition, options, settings.overrides);
  let config: IdtConfig;
  try {
    config = (
      file.resolvedConfig
        ? { ...file.resolvedConfig, ...top }
        : loadConfig(
            env,
            {
              ...settings.defaults?.(env),
              ...(file.baseUrl === undefined ? {} : splitBaseUrl(file.baseUrl)),
              ...file.config,
              ...top,
            },
            {
              hasMailer: file.mailer !== undefined,
              baseDir: project.directory,
              requires: { mail: false, ...settings.requires },
              ...(file.env ? {} : { origin: project }),
            },
          )
    ) as IdtConfig;
  } catch (error) {
    if (error instanceof ConfigError) throw configError(error, settingsSource(io, composition, project, overrides));
    throw error;
  }
  return {
    composition,
    source: settingsSource(io, composition, project, overrides),
    config,
    env,
    migrationSets: migrationSetsOf(composition.modules),
    knex,
    database: knex ? `the knex instance of ${composition.source}` : redactDatabaseUrl(config.databaseUrl),
    databaseOrigin: databaseOrigin(composition, options, file.env ? undefined : project, knex !== undefined),
    migrateCommand: migrateCommand(global, options),
  };
}

/** The environment variable each setting of `createIdt`'s `config` stands for. */
const SETTING_VARIABLES: Readonly<Record<string, string>> = {
  environment: 'IDT_ENVIRONMENT',
  port: 'PORT',
  host: 'HOST',
  databaseUrl: 'IDT_DATABASE_URL',
  dataDir: 'IDT_DATA_DIR',
  issuer: 'IDT_ISSUER',
  pathPrefix: 'IDT_PATH_PREFIX',
  authUrl: 'IDT_AUTH_URL',
  trustProxy: 'IDT_TRUST_PROXY',
  keyEncryptionSecret: 'IDT_KEY_ENCRYPTION_SECRET',
  logLevel: 'IDT_LOG_LEVEL',
};

/** The settings given over the environment (by the config file, then by the command's options), by variable. */
function settingOverrides(
  composition: Composition,
  options: CommonOptions,
  commandOverrides: IdtConfigOverrides | undefined,
): Map<string, SettingOverride> {
  const file = composition.options;
  const where = composition.source;
  const overrides = new Map<string, SettingOverride>();
  const fromFile = (variable: string, key: string) =>
    overrides.set(variable, {
      label: `${key} in ${where}`,
      fix: `set ${key} in ${where} to a valid value (see docs/configuration.md)`,
    });
  if (file.baseUrl !== undefined) {
    fromFile('IDT_ISSUER', 'baseUrl');
    fromFile('IDT_PATH_PREFIX', 'baseUrl');
  }
  for (const key of Object.keys(file.config ?? {})) {
    const variable = SETTING_VARIABLES[key];
    if (variable) fromFile(variable, `config.${key}`);
  }
  if (typeof file.database === 'string') fromFile('IDT_DATABASE_URL', 'database');
  for (const [key, flag] of [
    ['port', '--port'],
    ['host', '--host'],
  ] as const) {
    const value = commandOverrides?.[key];
    if (value !== undefined) {
      overrides.set(SETTING_VARIABLES[key] ?? key, { label: flag, fix: `pass a valid ${flag}`, shown: String(value) });
    }
  }
  if (options.database !== undefined) {
    overrides.set('IDT_DATABASE_URL', {
      label: '--database',
      fix: 'pass --database sqlite:<file> or --database postgres://user:password@host:5432/database',
      shown: redactDatabaseUrl(options.database),
    });
  }
  return overrides;
}

/** Where the database of a command was given, for its errors. */
function databaseOrigin(
  composition: Composition,
  options: CommonOptions,
  project: ProjectEnv | undefined,
  knex: boolean,
): string {
  if (options.database !== undefined) return '--database';
  if (knex) return `the knex instance of ${composition.source}`;
  if (typeof composition.options.database === 'string') return `database in ${composition.source}`;
  const env = composition.options.env ?? project?.env ?? {};
  if (env.IDT_DATABASE_URL === undefined) return 'the default database (IDT_DATABASE_URL is not set; set it, or pass --database)';
  if (composition.options.env) return `IDT_DATABASE_URL in the env of ${composition.source}`;
  const from = variableOrigin('IDT_DATABASE_URL', project);
  return from === 'the environment' ? 'IDT_DATABASE_URL (set in the environment)' : `IDT_DATABASE_URL in ${from}`;
}

/** `idt migrate` with the `--config` and `--database` a command was given (a password masked). */
function migrateCommand(global: GlobalOptions, options: CommonOptions): string {
  const words = ['idt migrate'];
  if (global.config !== undefined) words.push('--config', shellWord(global.config));
  if (options.database !== undefined) {
    // The password is never printed: the error says to put it back where *** stands.
    words.push('--database', shellWord(redactDatabaseUrl(options.database)));
  }
  return words.join(' ');
}

/**
 * Refuses a database with pending migrations of the target's composition,
 * naming the command that applies them.
 *
 * @throws CliError `Migrations.Pending`.
 */
export async function assertTargetMigrated(db: Knex, target: CommandTarget): Promise<void> {
  try {
    await assertMigrated(db, target.migrationSets);
  } catch (error) {
    if (error instanceof PendingMigrationsError) throw pendingMigrationsError(error, target.migrateCommand);
    throw error;
  }
}

/** The env file node loaded for this process (`node --env-file=<path>`), if any. */
function nodeEnvFile(): string | undefined {
  const args = process.execArgv;
  for (const [index, arg] of args.entries()) {
    if (arg.startsWith('--env-file=')) return arg.slice('--env-file='.length);
    if (arg === '--env-file') return args[index + 1];
  }
  return undefined;
}

/** Where a run's settings come from, for configuration errors. */
export function settingsSource(
  io: CliIo,
  composition: Composition,
  project?: ProjectEnv,
  overrides?: ReadonlyMap<string, SettingOverride>,
): SettingsSource {
  const given = overrides && overrides.size > 0 ? { overrides } : {};
  if (composition.options.env) return { description: `the env of ${composition.source}`, ...given };
  const envFile = io.env === process.env ? nodeEnvFile() : undefined;
  let environment = envFile ? `the environment (with ${resolve(io.cwd, envFile)}, loaded by node --env-file)` : 'the environment';
  if (project?.envFile) environment = `${environment} and ${project.envFile}`;
  return {
    description: composition.file ? `${environment} and ${composition.source}` : environment,
    ...(project?.envFile ? { envFile: project.envFile, fromFile: project.fromFile } : {}),
    ...given,
  };
}

/** The modules of a target and where they come from: `identity, oidc (./idt.config.mjs)`. */
export function describeComposition(target: CommandTarget): string {
  const { composition } = target;
  return `${composition.modules.map((module) => module.id).join(', ')} (${composition.source})`;
}

/** The logger of a command: JSON lines on standard error, warnings and worse unless `IDT_LOG_LEVEL` says otherwise. */
export function commandLogger(io: CliIo, target: CommandTarget): Logger {
  const level = target.env.IDT_LOG_LEVEL ? target.config.logLevel : 'warn';
  return createLogger({ level, fields: { service: 'idt-cli' }, write: (line) => io.err(`${line}\n`) });
}

/** The file of a `sqlite:` URL, `undefined` for an in-memory database or another engine. */
export function sqliteFile(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  return file === ':memory:' ? undefined : resolve(file);
}

async function existing(path: string): Promise<{ isDirectory(): boolean } | undefined> {
  try {
    return await stat(path);
  } catch (error) {
    // ENOTDIR: a file stands where a directory would be; the walk up finds it.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/** How {@link withDatabase} treats a SQLite file that does not exist yet. */
export type MissingDatabase = 'create' | 'refuse';

/**
 * Makes sure a SQLite file can be opened: with `create`, its missing
 * directories are created one by one (a file under a path that cannot hold
 * one fails here, not in a retry loop of the pool); with `refuse`, a missing
 * file is an error (the command would only find an empty database).
 *
 * @throws CliError `Database.Unreachable` naming the file.
 */
export async function prepareSqliteFile(
  file: string,
  missing: MissingDatabase,
  from = 'IDT_DATABASE_URL (or --database)',
  migrate?: string,
): Promise<void> {
  const unreachable = (reason: string, hints: string[]) =>
    new CliError('Database.Unreachable', `Cannot open the SQLite database ${file}: ${reason}`, { hints });
  const found = await existing(file);
  if (found) {
    if (found.isDirectory()) throw unreachable('it is a directory.', [`Point ${from} at a file: sqlite:./data/idt.sqlite.`]);
    return;
  }
  if (missing === 'refuse') {
    throw unreachable('the file does not exist.', [`Check ${from}; create the database with \`${migrate ?? 'idt migrate'}\`.`]);
  }
  const toCreate: string[] = [];
  let directory = dirname(file);
  let ancestor = await existing(directory);
  while (!ancestor) {
    toCreate.unshift(directory);
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
    ancestor = await existing(directory);
  }
  const hints = [`Check ${from}: the directory of a SQLite file must exist or be creatable, and be writable.`];
  if (ancestor && !ancestor.isDirectory()) throw unreachable(`${directory} is not a directory.`, hints);
  try {
    await access(directory, constants.W_OK);
    for (const path of toCreate) await mkdir(path);
  } catch (error) {
    throw unreachable(`${(error as Error).message}.`, hints);
  }
}

/** knex's log, without its stack trace of every failed connection attempt (the CLI reports the failure itself). */
const knexLog = {
  warn(message: string) {
    if (!String(message).startsWith('Acquire connection error')) console.warn(`warning: ${message}`);
  },
  error(message: string) {
    console.error(`error: ${message}`);
  },
  deprecate() {},
  debug() {},
};

/**
 * Opens the database of a command and checks that it answers.
 *
 * @throws CliError `Database.Unreachable` or `Database.AuthenticationFailed`.
 */
export async function openDatabase(target: CommandTarget, missing: MissingDatabase = 'create'): Promise<Knex> {
  const url = target.config.databaseUrl;
  const file = sqliteFile(url);
  if (file !== undefined) await prepareSqliteFile(file, missing, target.databaseOrigin, target.migrateCommand);
  let db: Knex;
  try {
    db = knexFactory({ ...databaseConfig(url), log: knexLog });
  } catch (error) {
    throw databaseError(error, target.database, target.databaseOrigin) ?? error;
  }
  try {
    await db.raw('select 1');
  } catch (error) {
    await db.destroy().catch(() => undefined);
    throw databaseError(error, target.database, target.databaseOrigin) ?? error;
  }
  return db;
}

/**
 * Opens the database of a command and closes it when the work is done (the
 * config file's knex instance stays open). A SQLite file that does not exist
 * is created (`create`, the default: migrate, demo) or refused (`refuse`).
 *
 * @throws CliError `Database.Unreachable` or `Database.AuthenticationFailed` when it cannot be opened.
 */
export async function withDatabase<T>(
  target: CommandTarget,
  work: (db: Knex) => Promise<T>,
  missing: MissingDatabase = 'create',
): Promise<T> {
  if (target.knex) return work(target.knex);
  const db = await openDatabase(target, missing);
  try {
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/** The services the commands use, by module id; present when the module is composed. */
export interface KnownServices {
  readonly identity?: IdentityServices;
  readonly oidc?: OidcServices;
}

/** {@link KnownServices} with the modules `N` present. */
export type ServicesWith<N extends keyof KnownServices> = KnownServices & { readonly [K in N]-?: NonNullable<KnownServices[K]> };

/**
 * Refuses a command whose modules the composition lacks.
 *
 * @throws CliError `Cli.ModuleMissing` naming the modules to add.
 */
export function requireModules(target: CommandTarget, command: string, ids: readonly string[]): void {
  const missing = ids.filter((id) => !target.composition.has(id));
  if (missing.length === 0) return;
  const { file, source } = target.composition;
  const names = missing.join(' and ');
  throw new CliError(
    'Cli.ModuleMissing',
    `idt ${command} needs the ${names} module${missing.length > 1 ? 's' : ''}, which ${source} does not compose.`,
    {
      hints: [
        `Add ${missing.map((id) => `${id}() from @idt/${id}`).join(' and ')} to the modules of ${file ?? 'the config file'}.`,
      ],
    },
  );
}

/**
 * Composes the target's modules on an open database, without checking or
 * running migrations (the command has checked them).
 */
export async function composeIdt(target: CommandTarget, db: Knex, logger: Logger, mailer?: CommandMailer): Promise<Idt> {
  const { modules, options } = target.composition;
  try {
    return await createIdt({
      ...options,
      modules,
      resolvedConfig: target.config,
      env: target.env,
      database: db,
      // Without a mailer of its own `createIdt` requires nodemailer at once: what `idt serve` wants, since it sends mail.
      ...(options.mailer === undefined && mailer !== undefined
        ? { mailer, logger: withoutNodemailerWarnings(logger) }
        : { logger }),
      migrations: 'skip',
    });
  } catch (error) {
    if (error instanceof ConfigError && error.problems.some((problem) => /^mailer:.*nodemailer/.test(problem))) {
      throw nodemailerMissingError('idt serve', error);
    }
    // A module's own settings (read from the same environment).
    if (error instanceof ConfigError) throw configError(error, target.source);
    throw keyDecryptionError(error, target) ?? error;
  }
}

/**
 * Runs `work` with the services of the composition (the ones the HTTP API
 * uses: same validation, same events), without listening. Refuses, before
 * opening the database, a composition without the modules the command needs,
 * and outside the Testing environment a database with pending migrations of
 * the composition. Events the work wrote to the outbox are delivered before
 * the database closes.
 *
 * @throws CliError `Cli.ModuleMissing`; PendingMigrationsError naming `idt migrate`.
 */
export async function withServices<N extends keyof KnownServices, T>(
  io: CliIo,
  out: Output,
  target: CommandTarget,
  needs: { readonly command: string; readonly modules: readonly N[] },
  work: (services: ServicesWith<N>, idt: Idt) => Promise<T>,
): Promise<T> {
  requireModules(target, needs.command, needs.modules);
  return withDatabase(
    target,
    async (db) => {
      if (target.config.environment !== 'Testing') await assertTargetMigrated(db, target);
      const logger = commandLogger(io, target);
      const mailer = createCommandMailer(target.config, logger);
      const idt = await composeIdt(target, db, logger, mailer);
      try {
        return await work(idt.services as ServicesWith<N>, idt);
      } finally {
        await deliverEvents(out, idt, target, mailer);
        await idt.close();
      }
    },
    'refuse',
  );
}

/**
 * "Cannot decrypt a signing key" as one line naming where the secret was read
 * from (`Config.KeyEncryptionSecretMismatch`); `undefined` for other errors.
 */
export function keyDecryptionError(error: unknown, target: Pick<CommandTarget, 'config' | 'source'>): CliError | undefined {
  const explained = explainKeyDecryption(error, target.config, target.source);
  if (explained === error || !(explained instanceof Error)) return undefined;
  const [detail = explained.message, fix = ''] = explained.message.split(' Fix: ');
  return new CliError('Config.KeyEncryptionSecretMismatch', detail, { hints: [`Fix: ${fix}`], cause: error });
}

/** Delivers the events a command wrote to the outbox; a running server delivers what fails here. */
async function deliverEvents(out: Output, idt: Idt, target: CommandTarget, mailer: CommandMailer): Promise<void> {
  const { config } = target;
  if (config.environment === 'Production' && config.mail.transport === 'file' && !target.composition.options.mailer) {
    // No IDT_SMTP_URL here (only `idt serve` requires it): the server, which has it, sends the mail these events cause.
    out.progress('Events are left to the running server to deliver (no IDT_SMTP_URL in this run).');
    return;
  }
  try {
    await idt.infrastructure.events.dispatchPending();
  } catch (error) {
    out.warn(`some events could not be delivered yet; a running server delivers them (${(error as Error).message})`);
  }
  if (mailer.unsent > 0) {
    // Only when a mail was really to be sent: commands that send none never need nodemailer.
    out.warn(
      `${mailer.unsent} mail(s) of this command's events were not sent: sending mail needs the nodemailer package, which is not installed here. A running server sends them; to send them from idt, npm install nodemailer. (Mail.NodemailerMissing)`,
    );
  }
}

/**
 * Like {@link withServices}, but `work` runs in ONE database transaction:
 * the services are composed on it, so everything they write is committed
 * together when `work` returns, or not at all when it throws. Events the
 * work published are delivered after the commit.
 *
 * @throws CliError `Cli.ModuleMissing`; PendingMigrationsError; whatever `work` throws (after the rollback).
 */
export async function withServicesInTransaction<N extends keyof KnownServices, T>(
  io: CliIo,
  out: Output,
  target: CommandTarget,
  needs: { readonly command: string; readonly modules: readonly N[] },
  work: (services: ServicesWith<N>, idt: Idt) => Promise<T>,
): Promise<T> {
  requireModules(target, needs.command, needs.modules);
  return withDatabase(
    target,
    async (db) => {
      if (target.config.environment !== 'Testing') await assertTargetMigrated(db, target);
      const logger = commandLogger(io, target);
      const mailer = createCommandMailer(target.config, logger);
      const result = await db.transaction(async (trx) => {
        const idt = await composeIdt(target, trx, logger, mailer);
        try {
          return await work(idt.services as ServicesWith<N>, idt);
        } finally {
          await idt.close();
        }
      });
      // Committed: deliver the events through a composition on the database itself.
      const idt = await composeIdt(target, db, logger, mailer);
      try {
        await deliverEvents(out, idt, target, mailer);
      } finally {
        await idt.close();
      }
      return result;
    },
    'refuse',
  );
}
