import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';

/** The database engines idt runs on. */
export type Dialect = 'sqlite' | 'postgres';

/** Options of {@link createDatabase}. */
export interface DatabaseOptions {
  /** Connection pool bounds (Postgres only; SQLite uses one connection). */
  pool?: { min?: number; max?: number };
  /** Milliseconds SQLite waits on a locked database before failing. */
  busyTimeoutMs?: number;
  /**
   * PostgreSQL: run idt's fixed statements as named prepared statements,
   * parsed and planned once per connection (default `true`). Turn it off
   * behind a pooler that does not keep prepared statements across
   * transactions (PgBouncer in transaction mode before 1.21, or without
   * `max_prepared_statements`); `?prepared_statements=false` on the URL does
   * the same.
   */
  preparedStatements?: boolean;
}

/**
 * The key of a knex configuration that turns named prepared statements off
 * on PostgreSQL: `{ client: 'pg', connection, preparedStatements: false }`,
 * or `?prepared_statements=false` on a database URL given to idt (see
 * {@link databaseConfig}). Needed behind a pooler that hands each transaction a
 * different server connection and does not track prepared statements
 * (PgBouncer in transaction mode before 1.21, or without
 * `max_prepared_statements`). With them off, every statement is parsed and
 * planned again, as `knex.raw` does.
 */
export const PREPARED_STATEMENTS_OPTION = 'preparedStatements';

/** The URL parameter that turns {@link DatabaseOptions.preparedStatements} off: `postgres://…/idt?prepared_statements=false`. */
const PREPARED_STATEMENTS_PARAMETER = 'prepared_statements';

/**
 * The connection string without idt's own parameter, and whether that
 * parameter turned prepared statements off. Any other value than `false`,
 * `off`, `0`, `true`, `on` or `1` is refused: a typo would otherwise leave
 * them on behind a pooler that breaks them.
 */
function preparedStatementsParameter(url: string): { connectionString: string; off: boolean } {
  const query = url.indexOf('?');
  if (query < 0) return { connectionString: url, off: false };
  const parameters = new URLSearchParams(url.slice(query + 1));
  const value = parameters.get(PREPARED_STATEMENTS_PARAMETER);
  if (value === null) return { connectionString: url, off: false };
  if (!/^(false|off|0|true|on|1)$/i.test(value)) {
    throw new TypeError(`${PREPARED_STATEMENTS_PARAMETER}=${value} on the database URL: use true or false`);
  }
  parameters.delete(PREPARED_STATEMENTS_PARAMETER);
  const rest = parameters.toString();
  return { connectionString: url.slice(0, query) + (rest ? `?${rest}` : ''), off: /^(false|off|0)$/i.test(value) };
}

/**
 * Parses a database URL into a knex configuration.
 *
 * - `sqlite:<file>`: better-sqlite3, WAL journal, foreign keys on, every
 *   transaction begun as a writer (`BEGIN IMMEDIATE`, so another process on
 *   the file never fails it half-way with "database is locked"); the
 *   parent directory is created. `sqlite::memory:` is an in-memory database.
 * - `postgres://…` or `postgresql://…`: node-postgres; idt's fixed
 *   statements are prepared once per connection unless
 *   `?prepared_statements=false` (or {@link DatabaseOptions.preparedStatements}).
 */
export function databaseConfig(url: string, options: DatabaseOptions = {}): Knex.Config {
  if (url.startsWith('sqlite:')) {
    const filename = sqliteFilename(url) ?? ':memory:';
    if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
    const busyTimeout = options.busyTimeoutMs ?? 5000;
    return {
      client: 'better-sqlite3',
      connection: { filename },
      useNullAsDefault: true,
      pool: {
        min: 1,
        max: 1,
        afterCreate(connection: SqliteConnection, done: (error: Error | null, connection: unknown) => void) {
          try {
            cacheStatements(connection);
            beginAsWriter(connection);
            if (filename !== ':memory:') connection.pragma('journal_mode = WAL');
            connection.pragma('foreign_keys = ON');
            connection.pragma(`busy_timeout = ${busyTimeout}`);
            connection.pragma('synchronous = NORMAL');
            done(null, connection);
          } catch (error) {
            done(error as Error, connection);
          }
        },
      },
    };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    // Bounded waits, so an outage answers 503 in seconds rather than a minute: a connection attempt
    // gives up after 5 s (a black-holed server), a request waiting for a pooled connection after 10 s.
    // Broken connections are dropped by knex (it marks them on their `error` event), so the pool
    // refills by itself once the server is back; keep-alive notices silent peers.
    const { connectionString, off } = preparedStatementsParameter(url);
    // knex keeps a key it does not know in its client's `config`, where idt's fixed statements read it.
    const config: Knex.Config & { [PREPARED_STATEMENTS_OPTION]: boolean } = {
      client: 'pg',
      connection: { connectionString, connectionTimeoutMillis: 5000, keepAlive: true },
      acquireConnectionTimeout: 10_000,
      pool: { min: options.pool?.min ?? 0, max: options.pool?.max ?? 10 },
      [PREPARED_STATEMENTS_OPTION]: !off && options.preparedStatements !== false,
    };
    return config;
  }
  throw new TypeError(`Unsupported database URL "${redactDatabaseUrl(url)}": use sqlite:<file> or postgres://…`);
}

/**
 * The absolute path of the file a `sqlite:` URL names (`sqlite:./data/idt.sqlite`,
 * `sqlite:///var/lib/idt.sqlite`), resolved against the working directory;
 * `undefined` for `sqlite::memory:` and for other engines.
 *
 * @example
 * sqliteFilename('sqlite:./data/idt.sqlite'); // '/srv/app/data/idt.sqlite' when run in /srv/app
 */
export function sqliteFilename(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  return file === ':memory:' ? undefined : resolve(file);
}

/** The parts of a better-sqlite3 connection {@link databaseConfig} touches. */
interface SqliteConnection {
  readonly readonly?: boolean;
  pragma(sql: string): unknown;
  prepare(sql: string): unknown;
}

/** The statement knex's SQLite transactions begin with (a deferred transaction). */
const KNEX_BEGIN = 'BEGIN;';

/**
 * Makes every knex transaction on a better-sqlite3 connection begin as a
 * writer: knex's `BEGIN;` runs as `BEGIN IMMEDIATE;` (knex's `query` event
 * and debug output still show `BEGIN;`; savepoints of nested transactions
 * are unchanged).
 *
 * A deferred transaction takes a read snapshot at its first read and asks
 * for the write lock only at its first write. In WAL mode, when another
 * connection to the file (another process: a server beside `idt seed`)
 * holds the write lock at that moment, or committed since the snapshot,
 * SQLite answers SQLITE_BUSY (or SQLITE_BUSY_SNAPSHOT) at once, without
 * waiting for `busy_timeout`. `BEGIN IMMEDIATE` takes the write lock before
 * the first read, waiting for it as `busy_timeout` allows, so the
 * transaction reads and writes one state and never fails half-way for a
 * lock. Within one knex instance nothing changes: its pool has one
 * connection, so its transactions already run one at a time. A read-only
 * transaction also takes the lock, keeping other connections' writers
 * waiting for as long as it runs. A read-only connection is left deferred
 * (it could not take the lock).
 */
function beginAsWriter(connection: SqliteConnection): void {
  if (connection.readonly) return;
  const prepare = connection.prepare.bind(connection);
  connection.prepare = (sql: string) => prepare(sql === KNEX_BEGIN ? 'BEGIN IMMEDIATE;' : sql);
}

/** Most prepared statements a SQLite connection keeps. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Makes a better-sqlite3 connection reuse its prepared statements: knex
 * prepares every query anew, and compiling the SQL costs about as much as
 * running a primary-key read. knex only ever runs a statement to completion
 * (`all`/`run`, synchronous), so one statement per SQL text is safe to share;
 * SQLite re-prepares a cached statement by itself after a schema change.
 */
function cacheStatements(connection: SqliteConnection): void {
  const prepare = connection.prepare.bind(connection);
  const statements = new Map<string, unknown>();
  connection.prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = prepare(sql);
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value as string);
      statements.set(sql, statement);
    }
    return statement;
  };
}

/**
 * Opens a database from its URL.
 *
 * @example
 * const db = createDatabase('sqlite:./data/idt.sqlite');
 * const pg = createDatabase('postgres://postgres@127.0.0.1:5432/idt');
 */
export function createDatabase(url: string, options: DatabaseOptions = {}): Knex {
  return knexFactory(databaseConfig(url, options));
}

/**
 * The rows of a `knex.raw` statement on either engine: better-sqlite3
 * answers the rows themselves, pg a result object that holds them.
 *
 * @example
 * const [row] = rawRows<{ count: unknown }>(await db.raw('select count(*) as count from t'));
 */
export function rawRows<Row>(result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[];
}

/** The engine behind a knex instance. */
export function dialectOf(db: Knex): Dialect {
  const client = (db.client as { config?: { client?: unknown } }).config?.client;
  return client === 'pg' || client === 'postgres' || client === 'postgresql' ? 'postgres' : 'sqlite';
}

/** A database URL with any password replaced, safe to print. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}

/** `YYYY-MM-DDTHH:mm:ss.sssZ`, the form `Date#toISOString` writes for years 0000–9999. */
const CANONICAL_ISO = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/**
 * A timestamp read from either engine (Postgres gives `Date`, SQLite the ISO
 * string we wrote) as an ISO 8601 UTC string with milliseconds.
 */
export function toIso(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'number') return new Date(value).toISOString();
  // Already in the canonical form (what idt writes): returned as is, without a Date round trip.
  if (typeof value === 'string') return CANONICAL_ISO.test(value) ? value : new Date(value).toISOString();
  throw new TypeError(`Not a timestamp: ${String(value)}`);
}

/** Like {@link toIso} but passes `null`/`undefined` through as `null`. */
export function toIsoOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : toIso(value);
}
