import {
  createIdt,
  createLogger,
  type Env,
  type Idt,
  type IdtConfig,
  type IdtConfigOverrides,
  type Logger,
  loadConfig,
  migrationSetsOf,
  splitBaseUrl,
} from '@idt/core';
import { assertMigrated, createDatabase, type MigrationSet, redactDatabaseUrl } from '@idt/core/knex';
import type { IdentityServices } from '@idt/identity';
import type { ClientActor, OidcServices } from '@idt/oidc';
import type { Knex } from 'knex';
import { type Composition, loadComposition } from './composition.js';
import { CliError } from './errors.js';
import type { CliIo } from './io.js';
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
  const composition = await loadComposition(io.cwd, global.config);
  const file = composition.options;
  const env = file.env ?? io.env;
  // A knex instance is a function: anything but a URL is the host's own pool.
  const knex =
    options.database === undefined && file.database !== undefined && typeof file.database !== 'string'
      ? file.database
      : undefined;
  const databaseUrl = options.database ?? (typeof file.database === 'string' ? file.database : undefined);
  const top: IdtConfigOverrides = { ...settings.overrides, ...(databaseUrl !== undefined ? { databaseUrl } : {}) };
  const config = file.resolvedConfig
    ? { ...file.resolvedConfig, ...top }
    : loadConfig(
        env,
        {
          ...settings.defaults?.(env),
          ...(file.baseUrl === undefined ? {} : splitBaseUrl(file.baseUrl)),
          ...file.config,
          ...top,
        },
        { hasMailer: file.mailer !== undefined },
      );
  return {
    composition,
    config: config as IdtConfig,
    env,
    migrationSets: migrationSetsOf(composition.modules),
    knex,
    database: knex ? `the knex instance of ${composition.source}` : redactDatabaseUrl(config.databaseUrl),
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

/** Opens the database of a command and closes it when the work is done (the config file's knex instance stays open). */
export async function withDatabase<T>(target: CommandTarget, work: (db: Knex) => Promise<T>): Promise<T> {
  if (target.knex) return work(target.knex);
  const db = createDatabase(target.config.databaseUrl);
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
export function composeIdt(target: CommandTarget, db: Knex, logger: Logger): Promise<Idt> {
  const { modules, options } = target.composition;
  return createIdt({
    ...options,
    modules,
    resolvedConfig: target.config,
    env: target.env,
    database: db,
    logger,
    migrations: 'skip',
  });
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
  return withDatabase(target, async (db) => {
    if (target.config.environment !== 'Testing') await assertMigrated(db, target.migrationSets);
    const idt = await composeIdt(target, db, commandLogger(io, target));
    try {
      return await work(idt.services as ServicesWith<N>, idt);
    } finally {
      try {
        await idt.infrastructure.events.dispatchPending();
      } catch (error) {
        out.warn(`some events could not be delivered yet; a running server delivers them (${(error as Error).message})`);
      }
      await idt.close();
    }
  });
}
