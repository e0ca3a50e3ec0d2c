import { ProblemError } from '@idt/problem';
import knex from 'knex';
import { describe, expect, it } from 'vitest';
import { databaseConfig } from './database.js';
import { asDatabaseUnavailable, isDatabaseUnavailable } from './unavailable.js';

const coded = (code: string, message = 'failed') => Object.assign(new Error(message), { code });

describe('database unavailability', () => {
  it.each([
    ['a refused connection', coded('ECONNREFUSED')],
    ['a reset connection', coded('ECONNRESET')],
    ['a Postgres shutdown', coded('57P01')],
    ['Postgres starting up', coded('57P03')],
    ['a connection exception', coded('08006')],
    ['SQLite still locked after its busy timeout', coded('SQLITE_BUSY')],
    ['a SQLite disk error', coded('SQLITE_IOERR_WRITE')],
    ['a knex acquire timeout', Object.assign(new Error('Knex: Timeout acquiring a connection.'), { name: 'KnexTimeoutError' })],
    ['a connection lost mid-query (knex prefixes the SQL)', new Error('select 1 - Connection terminated unexpectedly')],
    ['a refusal inside an AggregateError', new AggregateError([coded('ECONNREFUSED')], 'connect failed')],
    ['a refusal as the cause', new Error('lookup failed', { cause: coded('ETIMEDOUT') })],
  ])('recognizes %s', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', coded('23505')],
    ['a syntax error', coded('42601')],
    ['a SQLite constraint', coded('SQLITE_CONSTRAINT_UNIQUE')],
    ['a plain error', new Error('boom')],
    ['a non-error', 'ECONNREFUSED'],
  ])('leaves %s alone', (_, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('maps an outage to Database.Unavailable with Retry-After, and nothing else', () => {
    const mapped = asDatabaseUnavailable(coded('ECONNREFUSED'));
    expect(mapped).toBeInstanceOf(ProblemError);
    expect(mapped).toMatchObject({ code: 'Database.Unavailable', status: 503, headers: { 'retry-after': '5' } });
    const plain = new Error('boom');
    expect(asDatabaseUnavailable(plain)).toBe(plain);
    const clientError = new ProblemError('Tenant.Required', undefined, { cause: coded('ECONNREFUSED') });
    expect(asDatabaseUnavailable(clientError)).toBe(clientError);
    // A service's own 503 (e.g. the virus scanner is down) keeps its code.
    const scanner = new ProblemError('Health.Unavailable', undefined, { cause: coded('ECONNREFUSED') });
    expect(asDatabaseUnavailable(scanner)).toBe(scanner);
  });

  it('recognizes the error of a real pool on a server nobody listens on', async () => {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    // knex reports each failed acquisition on its log as well: kept here, so a passing run prints nothing.
    const logged: unknown[] = [];
    const keep = (message: unknown) => void logged.push(message);
    const db = knex({
      ...databaseConfig('postgres://postgres@127.0.0.1:1/none'),
      log: { warn: keep, error: keep, debug: keep, deprecate: keep },
    });
    try {
      const failure = await db.raw('select 1').then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isDatabaseUnavailable(failure)).toBe(true);
    } finally {
      await db.destroy();
    }
  });
});
