import type { Knex } from 'knex';
import { dialectOf, PREPARED_STATEMENTS_OPTION } from './database.js';

/** A value bound to a `?` of a statement. */
export type StatementBinding = string | number | bigint | boolean | Date | null;

/** The parts of a better-sqlite3 statement {@link selectRows} and {@link runStatement} use. */
interface SqliteStatement {
  readonly reader: boolean;
  raw(toggle: boolean): SqliteStatement;
  all(bindings: readonly unknown[]): unknown[][];
  run(bindings: readonly unknown[]): { changes: number };
}

/** The parts of knex's client {@link selectRows} and {@link runStatement} use. */
interface PoolClient {
  acquireConnection(): Promise<object>;
  releaseConnection(connection: object): unknown;
  emit(event: string, payload: unknown): boolean;
  /** knex's tarn pool; `free` is tarn's list of idle connections (not part of its typed API). */
  readonly pool?: {
    numPendingAcquires(): number;
    readonly free?: ReadonlyArray<{ readonly resource: object }>;
  } | null;
}

/** Most statements of {@link selectRows} and {@link runStatement} kept per SQLite connection. */
const MAX_STATEMENTS = 100;

/**
 * The statements of each SQLite connection that these functions prepared,
 * apart from the ones knex uses: a read's array mode belongs to the statement
 * object, so sharing one with knex would hand knex arrays.
 */
const ownStatements = new WeakMap<object, Map<string, SqliteStatement>>();

function ownStatement(connection: object, sql: string): SqliteStatement {
  let statements = ownStatements.get(connection);
  if (!statements) {
    statements = new Map();
    ownStatements.set(connection, statements);
  }
  let statement = statements.get(sql);
  if (!statement) {
    // The prototype's `prepare`: a fresh statement even when the connection's own `prepare` hands out cached ones.
    const prepare = (Object.getPrototypeOf(connection) as { prepare(sql: string): SqliteStatement }).prepare;
    statement = prepare.call(connection, sql);
    if (statement.reader) statement.raw(true);
    if (statements.size >= MAX_STATEMENTS) statements.delete(statements.keys().next().value as string);
    statements.set(sql, statement);
  }
  return statement;
}

/** What knex's better-sqlite3 client does to bindings: dates as epoch milliseconds, booleans as 0/1. */
function sqliteBinding(value: StatementBinding): unknown {
  if (value instanceof Date) return value.valueOf();
  return typeof value === 'boolean' ? Number(value) : value;
}

/**
 * Runs a read statement written once (or a write with `returning`) and
 * answers its rows as arrays of column values, in the order of the select
 * (or `returning`) list.
 *
 * For the hottest reads: it skips knex's query builder and runner. On
 * SQLite it runs a prepared statement in array mode on knex's own
 * connection (taken from and given back to its pool, or the transaction's
 * when `db` is one); building one object per row through the driver costs
 * more than the read itself on a 20-row page. On PostgreSQL it runs on a
 * connection of knex's pool (the transaction's when `db` is one) as a named
 * prepared statement, in node-postgres's array row mode: the server parses
 * and plans it once per connection (see {@link PREPARED_STATEMENTS_OPTION}
 * to turn that off). knex's `query` event is emitted as for any statement,
 * so query logging and auditing see it.
 *
 * The SQL is the same on both engines: `?` placeholders, which knex numbers
 * for PostgreSQL. Driver errors reach the caller as the driver raised them
 * (with their `code`), as through knex.
 *
 * @example
 * const rows = await selectRows(db, 'select id, name from identity_organizations where id = ?', [id]);
 * const [[orgId, name] = []] = rows;
 */
export async function selectRows(db: Knex, sql: string, bindings: readonly StatementBinding[]): Promise<unknown[][]> {
  if (dialectOf(db) === 'postgres') return (await onPostgresConnection(db, sql, bindings, 'array')).rows;
  return onSqliteConnection(db, sql, bindings, (statement, values) => statement.all(values));
}

/**
 * Runs a write statement written once (an insert, update or delete without
 * `returning`) and answers how many rows it changed. Like {@link selectRows}
 * it skips knex's builder and runner: the statement runs on knex's own
 * connection (the transaction's when `db` is one), prepared once per
 * connection on PostgreSQL. Outside a transaction it commits on its own.
 *
 * @example
 * const changed = await runStatement(db, 'update oidc_payloads set consumed_at = ? where id = ? and consumed_at is null', [now, id]);
 */
export async function runStatement(db: Knex, sql: string, bindings: readonly StatementBinding[]): Promise<number> {
  if (dialectOf(db) === 'postgres') return (await onPostgresConnection(db, sql, bindings, undefined)).rowCount ?? 0;
  return onSqliteConnection(db, sql, bindings, (statement, values) => statement.run(values).changes);
}

/** A write statement written once and its bindings, for {@link runStatementsTogether}. */
export type BoundStatement = readonly [sql: string, bindings: readonly StatementBinding[]];

/**
 * Runs write statements written once as one transaction: all of them
 * commit, or none does. Answers how many rows each changed.
 *
 * On SQLite they run one after the other on knex's connection between
 * `begin immediate` and `commit`, synchronously (nothing else can use the
 * connection meanwhile): one commit, where each statement alone would
 * commit on its own. A statement that fails rolls the others back.
 *
 * On PostgreSQL they run in a knex transaction, a round trip each plus
 * `BEGIN` and `COMMIT`. Where the round trips matter, write the
 * statements as one (a data-modifying `with`) and run it with
 * {@link runStatement}.
 *
 * Inside a transaction (`db` is one) they run in it.
 *
 * @example
 * await runStatementsTogether(db, [
 *   ['update oidc_payloads set consumed_at = ? where model = ? and id = ?', [now, 'RefreshToken', oldId]],
 *   ['insert into oidc_payloads (model, id, payload) values (?, ?, ?)', ['RefreshToken', newId, payload]],
 * ]);
 */
export async function runStatementsTogether(db: Knex, statements: readonly BoundStatement[]): Promise<number[]> {
  const inTransaction = (db as { isTransaction?: boolean }).isTransaction === true;
  if (inTransaction || dialectOf(db) === 'postgres') {
    const run = async (trx: Knex) => {
      const changed: number[] = [];
      for (const [sql, bindings] of statements) changed.push(await runStatement(trx, sql, bindings));
      return changed;
    };
    return inTransaction ? run(db) : db.transaction(run);
  }
  const client = db.client as unknown as PoolClient;
  const inOneTransaction = (connection: object): number[] => {
    const run = (sql: string, bindings: readonly StatementBinding[] = []): number => {
      const values = bindings.map(sqliteBinding);
      emitQuery(client, sql, values);
      return ownStatement(connection, sql).run(values).changes;
    };
    run('begin immediate');
    try {
      const changed = statements.map(([sql, bindings]) => run(sql, bindings));
      run('commit');
      return changed;
    } catch (error) {
      // SQLite may have rolled back already (some errors end the transaction themselves).
      if ((connection as { inTransaction?: boolean }).inTransaction) run('rollback');
      throw error;
    }
  };
  const idle = idleConnection(db, client);
  if (idle) return inOneTransaction(idle);
  const connection = await client.acquireConnection();
  try {
    return inOneTransaction(connection);
  } finally {
    void client.releaseConnection(connection);
  }
}

/**
 * The pool's idle SQLite connection when nobody holds or waits for it, to run a
 * statement on without taking it from the pool. better-sqlite3 runs a
 * statement synchronously, so nothing else can use the connection meanwhile:
 * taking it through the pool (a pending operation, its timeout timer and
 * several promises, twice per statement) would only add work. Inside a
 * transaction, or when the connection is busy, the statement goes through
 * the pool as any query does.
 */
function idleConnection(db: Knex, client: PoolClient): object | undefined {
  if ((db as { isTransaction?: boolean }).isTransaction) return undefined;
  const pool = client.pool;
  if (!pool || pool.numPendingAcquires() > 0) return undefined;
  return pool.free?.[0]?.resource;
}

/**
 * Runs a read written once synchronously on the pool's idle SQLite
 * connection and answers its rows as arrays, with the connection it ran on;
 * `undefined` when it cannot run at once: the connection is held or waited
 * for, `db` is a transaction, or the engine is PostgreSQL. For bookkeeping
 * reads that must not wait for the connection (the cache invalidator's look
 * at the file's data version, which is per connection); knex's `query` event
 * is not emitted for them.
 */
export function selectRowsIfIdle(db: Knex, sql: string): { readonly connection: object; readonly rows: unknown[][] } | undefined {
  if (dialectOf(db) === 'postgres') return undefined;
  const connection = idleConnection(db, db.client as unknown as PoolClient);
  return connection ? { connection, rows: ownStatement(connection, sql).all([]) } : undefined;
}

/** Emits knex's `query` event for a statement run on SQLite past knex's runner, as knex does for its own. */
function emitQuery(client: PoolClient, sql: string, values: readonly unknown[]): void {
  client.emit('query', { method: 'raw', sql, bindings: values, options: {} });
}

/** Runs `work` with the cached statement of `sql` on a connection of knex's pool, after emitting knex's `query` event. */
async function onSqliteConnection<T>(
  db: Knex,
  sql: string,
  bindings: readonly StatementBinding[],
  work: (statement: SqliteStatement, values: unknown[]) => T,
): Promise<T> {
  const client = db.client as unknown as PoolClient;
  const values = bindings.map(sqliteBinding);
  emitQuery(client, sql, values);
  const idle = idleConnection(db, client);
  if (idle) return work(ownStatement(idle, sql), values);
  const connection = await client.acquireConnection();
  try {
    return work(ownStatement(connection, sql), values);
  } finally {
    void client.releaseConnection(connection);
  }
}

/** The parts of a node-postgres connection {@link onPostgresConnection} uses, and what knex marks on it. */
interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[]; rowMode?: 'array' }): Promise<PgResult>;
  readonly __knexUid?: string;
  readonly __knexTxId?: string;
}

/** The parts of a node-postgres result {@link selectRows} and {@link runStatement} read. */
interface PgResult {
  readonly rows: unknown[][];
  readonly rowCount: number | null;
}

/** A statement's text for PostgreSQL and the name it is prepared under on every connection (none past the bound). */
interface PgStatement {
  readonly text: string;
  name: string | undefined;
}

/**
 * Most SQL texts given names. The statements written once in idt's stores
 * number in the tens (list statements add one per power-of-two count); past
 * the bound a text runs unnamed, so a caller passing SQL built per request
 * cannot fill every connection with prepared statements.
 */
const MAX_PG_STATEMENTS = 1000;
const pgStatements = new Map<string, PgStatement>();
/** Numbers the names: one per text, and a new one when a connection's statement of that text went stale. */
let pgStatementSerial = 0;

function pgStatement(client: { positionBindings(sql: string): string }, sql: string): PgStatement {
  let statement = pgStatements.get(sql);
  if (!statement) {
    // knex's own numbering of the `?` (a `\?` stays a literal question mark).
    const named = pgStatements.size < MAX_PG_STATEMENTS;
    statement = { text: client.positionBindings(sql), name: named ? `idt_${++pgStatementSerial}` : undefined };
    if (named) pgStatements.set(sql, statement);
  }
  return statement;
}

/**
 * Whether PostgreSQL refused a named statement because its prepared form on
 * this connection is gone or out of date: `26000` (deallocated, e.g. by
 * `DEALLOCATE ALL` or `DISCARD ALL`), or `0A000` "cached plan must not change
 * result type" (a column it returns changed type since it was prepared).
 */
function isStalePreparedStatement(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '26000' || (code === '0A000' && typeof message === 'string' && /cached plan/i.test(message));
}

/**
 * Runs `sql` on PostgreSQL as a named prepared statement on a connection of
 * knex's pool, or the transaction's: the first run on a connection parses
 * and plans it, later runs only bind and execute (about 20 µs less of the
 * process's CPU per statement than `knex.raw`, and no parse or plan on the
 * server). A statement whose prepared form went stale gets a new name, and
 * runs again at once outside a transaction (inside one, the failed
 * statement has already aborted the transaction).
 */
async function onPostgresConnection(
  db: Knex,
  sql: string,
  bindings: readonly StatementBinding[],
  rowMode: 'array' | undefined,
): Promise<PgResult> {
  const client = db.client as unknown as PoolClient & {
    positionBindings(sql: string): string;
    readonly config: Record<string, unknown>;
  };
  const transaction = db as unknown as Partial<Knex.Transaction>;
  if (transaction.isTransaction && transaction.isCompleted?.()) {
    throw new Error(`Transaction query already complete: ${sql}`);
  }
  const statement = pgStatement(client, sql);
  const named = statement.name !== undefined && client.config[PREPARED_STATEMENTS_OPTION] !== false;
  const values = bindings as unknown[];
  const connection = (await client.acquireConnection()) as PgConnection;
  try {
    const { __knexUid, __knexTxId } = connection;
    client.emit('query', { __knexUid, __knexTxId, method: 'raw', sql: statement.text, bindings: values, options: {} });
    const run = () =>
      connection.query({ ...(named && { name: statement.name }), text: statement.text, values, ...(rowMode && { rowMode }) });
    try {
      return await run();
    } catch (error) {
      if (!named || !isStalePreparedStatement(error)) throw error;
      statement.name = `idt_${++pgStatementSerial}`;
      if (transaction.isTransaction) throw error;
      return await run();
    }
  } finally {
    void client.releaseConnection(connection);
  }
}

/** Most items one list statement binds; a longer list runs as several statements. A power of two. */
export const MAX_LIST_ITEMS = 256;

/**
 * A statement whose SQL holds a list of items, written out once per item
 * count so that it can run through {@link selectRows}/{@link runStatement}
 * (prepared once per count on SQLite) rather than through knex's builder.
 * Made by {@link listStatement}; run by {@link runListStatement} or
 * {@link selectListRows}.
 */
export interface ListStatement {
  /** `in`: a membership list (`where id in (?, ?)`); `values`: the rows of a multi-row insert. */
  readonly kind: 'in' | 'values';
  /** Values bound per item: the `?` of one item. */
  readonly arity: number;
  /** The SQL for `count` items (built the first time each count is asked for). */
  sql(count: number): string;
}

/**
 * Writes a statement with a list of items: `build` receives the list (`?, ?`
 * or `(?, ?), (?, ?)`) and answers the whole SQL. Only a few counts are ever
 * built: an `in` list repeats its last item up to the next power of two
 * (which changes nothing it matches), and the rows of a `values` list are
 * split into statements of power-of-two counts. Both engines take the SQL,
 * as for {@link selectRows}.
 *
 * @param options.item - one item's placeholders: `?` (the default) or a tuple such as `(?, ?)`
 * @example
 * const END = listStatement((ids) => `update identity_sessions set revoked_at = ? where id in (${ids})`, { kind: 'in' });
 * const changed = await runListStatement(trx, END, [now], sessionIds);
 */
export function listStatement(
  build: (list: string) => string,
  options: { readonly kind: 'in' | 'values'; readonly item?: string },
): ListStatement {
  const item = options.item ?? '?';
  const arity = item.split('?').length - 1;
  if (arity < 1) throw new TypeError(`a list item needs at least one placeholder: ${item}`);
  const built = new Map<number, string>();
  return {
    kind: options.kind,
    arity,
    sql(count) {
      let sql = built.get(count);
      if (sql === undefined) {
        sql = build(Array.from({ length: count }, () => item).join(', '));
        built.set(count, sql);
      }
      return sql;
    },
  };
}

/** The largest power of two that is at most `n` (n ≥ 1). */
function powerOfTwoAtMost(n: number): number {
  return 2 ** Math.floor(Math.log2(n));
}

/**
 * The statements that run `statement` over `items` (flat, `arity` values per
 * item) with `head` bound before the list: its SQL and bindings, one pair
 * per statement.
 */
function* listChunks(
  statement: ListStatement,
  head: readonly StatementBinding[],
  items: readonly StatementBinding[],
): Generator<[string, StatementBinding[]]> {
  const { arity } = statement;
  if (items.length % arity !== 0) {
    throw new TypeError(`a list of ${items.length} values does not divide into items of ${arity}`);
  }
  for (let start = 0, left = items.length / arity; left > 0; ) {
    const taken = statement.kind === 'in' ? Math.min(left, MAX_LIST_ITEMS) : powerOfTwoAtMost(Math.min(left, MAX_LIST_ITEMS));
    const size = statement.kind === 'in' ? 2 ** Math.ceil(Math.log2(taken)) : taken;
    const bindings = [...head, ...items.slice(start * arity, (start + taken) * arity)];
    const last = items.slice((start + taken - 1) * arity, (start + taken) * arity);
    for (let padding = taken; padding < size; padding++) bindings.push(...last);
    yield [statement.sql(size), bindings];
    start += taken;
    left -= taken;
  }
}

/**
 * Runs a {@link ListStatement} that writes without `returning` over `items`
 * (flat: `arity` values per item, in order), with `head` bound before the
 * list; answers how many rows changed. A long list runs as several
 * statements, one after the other: inside a transaction to make them one
 * write. No items: nothing runs.
 *
 * @example
 * await runListStatement(trx, DELETE_GRANT_ROWS, [], grantIds);
 */
export async function runListStatement(
  db: Knex,
  statement: ListStatement,
  head: readonly StatementBinding[],
  items: readonly StatementBinding[],
): Promise<number> {
  let changed = 0;
  for (const [sql, bindings] of listChunks(statement, head, items)) changed += await runStatement(db, sql, bindings);
  return changed;
}

/**
 * Runs a {@link ListStatement} that reads (or writes with `returning`) over
 * `items`, as {@link runListStatement} does, and answers the rows of all its
 * statements as {@link selectRows} does. An `in` list's repeated last item
 * matches no row twice.
 */
export async function selectListRows(
  db: Knex,
  statement: ListStatement,
  head: readonly StatementBinding[],
  items: readonly StatementBinding[],
): Promise<unknown[][]> {
  const rows: unknown[][] = [];
  for (const [sql, bindings] of listChunks(statement, head, items)) rows.push(...(await selectRows(db, sql, bindings)));
  return rows;
}
