import { createLogger, type IdtConfig, type IdtConfigOverrides, type Logger, loadConfig } from '@idt/core';
import { assertMigrated, createDatabase } from '@idt/core/knex';
import { createIdtServer, type IdtServer, migrationSets } from '@idt/example-server';
import type { ClientActor } from '@idt/oidc';
import type { Knex } from 'knex';
import type { CliIo } from './io.js';
import type { Output } from './output.js';

/**
 * Who the CLI acts as on the clients service: the platform operator, who may
 * grant platform-only scopes (SPEC-NOTES: seeding may).
 */
export const OPERATOR: ClientActor = Object.freeze({ userId: null, platformAdmin: true });

/** The options every command takes. */
export interface CommonOptions {
  /** `--database <url>`; `IDT_DATABASE_URL` (or its default) when absent. */
  readonly database?: string;
  /** `--json`: one JSON document on standard output. */
  readonly json?: boolean;
}

/**
 * The configuration of a command: the same environment variables as the
 * reference server, with `--database` over `IDT_DATABASE_URL`.
 *
 * @throws ConfigError listing every invalid setting.
 */
export function commandConfig(io: CliIo, options: CommonOptions, overrides: IdtConfigOverrides = {}): IdtConfig {
  return loadConfig(io.env, { ...overrides, ...(options.database ? { databaseUrl: options.database } : {}) });
}

/** The logger of a command: JSON lines on standard error, warnings and worse unless `IDT_LOG_LEVEL` says otherwise. */
export function commandLogger(io: CliIo, config: IdtConfig): Logger {
  const level = io.env.IDT_LOG_LEVEL ? config.logLevel : 'warn';
  return createLogger({ level, fields: { service: 'idt-cli' }, write: (line) => io.err(`${line}\n`) });
}

/** Opens the database of a command and closes it when the work is done. */
export async function withDatabase<T>(config: IdtConfig, work: (db: Knex) => Promise<T>): Promise<T> {
  const db = createDatabase(config.databaseUrl);
  try {
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/**
 * Runs `work` with the services of the reference server (the ones the HTTP
 * API uses: same validation, same events), without listening. Outside the
 * Testing environment it refuses a database with pending migrations. Events
 * the work wrote to the outbox are delivered before the database closes.
 *
 * @throws PendingMigrationsError naming `idt migrate`.
 */
export async function withServices<T>(
  io: CliIo,
  out: Output,
  config: IdtConfig,
  work: (server: IdtServer) => Promise<T>,
): Promise<T> {
  return withDatabase(config, async (db) => {
    if (config.environment !== 'Testing') await assertMigrated(db, migrationSets);
    const server = await createIdtServer({ config, db, logger: commandLogger(io, config) });
    try {
      return await work(server);
    } finally {
      try {
        await server.infrastructure.events.dispatchPending();
      } catch (error) {
        out.warn(`some events could not be delivered yet; a running server delivers them (${(error as Error).message})`);
      }
      await server.close();
    }
  });
}
