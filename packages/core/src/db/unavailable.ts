import { ProblemError } from '@idt/problem';
import '../problems.js';

/** Seconds a client is asked to wait (`Retry-After`) when the database is unreachable. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** Socket errors of a database connection that could not be made or was lost. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Postgres SQLSTATEs of a server that is down or refusing work: class 08
 * (connection exception), admin/crash shutdown, "cannot connect now"
 * (starting up or in recovery), too many connections.
 */
const POSTGRES_CODES = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;

/** SQLite errors left after its busy timeout: the file stays locked, or the disk fails. */
const SQLITE_CODES = /^SQLITE_(BUSY|IOERR)(_[A-Z_]+)?$/;

/** Messages of knex and node-postgres when the pool or the connection fails (no code; knex prefixes the SQL). */
const MESSAGES = [
  /Timeout acquiring a connection/i,
  /Unable to acquire a connection/i,
  /Connection terminated/i,
  /Connection ended unexpectedly/i,
  /Client has encountered a connection error/i,
  /Client was closed and is not queryable/i,
  /timeout exceeded when trying to connect/i,
];

function isUnavailableOwn(error: object): boolean {
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || POSTGRES_CODES.test(code) || SQLITE_CODES.test(code))) {
    return true;
  }
  if (name === 'KnexTimeoutError') return true;
  return typeof message === 'string' && MESSAGES.some((pattern) => pattern.test(message));
}

/**
 * Whether an error means the database is unreachable or unable to serve now
 * (connection refused, reset or timed out, server shutting down, pool acquire
 * timeout, SQLite still locked after its busy timeout), as opposed to a bad
 * query. Follows `cause` chains and the `errors` of an `AggregateError`.
 *
 * @example
 * if (isDatabaseUnavailable(error)) res.statusCode = 503;
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  if (isUnavailableOwn(error)) return true;
  const { cause, errors } = error as { cause?: unknown; errors?: unknown };
  if (cause !== undefined && isDatabaseUnavailable(cause, depth + 1)) return true;
  return Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner, depth + 1));
}

/**
 * A thrown value as the pipeline should render it: a database outage becomes
 * `Database.Unavailable` (503 with `Retry-After`); anything else, problems
 * included (a service already chose their code), is returned unchanged.
 *
 * @example
 * const rendered = renderProblem(asDatabaseUnavailable(error), { environment, traceId });
 */
export function asDatabaseUnavailable(error: unknown): unknown {
  if (error instanceof ProblemError) return error;
  if (!isDatabaseUnavailable(error)) return error;
  return new ProblemError('Database.Unavailable', undefined, {
    headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
    cause: error,
  });
}
