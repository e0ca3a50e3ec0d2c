import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../src/index.js';
import { isUniqueViolation, rawRows, runStatement, selectRows } from '../src/knex.js';

describe.each(testDialects())('selectRows and runStatement on %s', (dialect) => {
  let database: TestDatabase;
  let db: Knex;
  const FIND = 'select id, name, score, born_at from select_rows_things where kind = ? and score >= ? order by id';

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    db = database.db;
    await db.schema.createTable('select_rows_things', (t) => {
      t.string('id').primary();
      t.string('kind').notNullable();
      t.string('name');
      t.integer('score').notNullable();
      t.string('born_at');
    });
    await db('select_rows_things').insert([
      { id: 'a', kind: 'x', name: 'Ada', score: 3, born_at: '2026-01-01T00:00:00.000Z' },
      { id: 'b', kind: 'x', name: null, score: 1, born_at: null },
      { id: 'c', kind: 'y', name: 'Cy', score: 9, born_at: null },
    ]);
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('answers each row as its values in the order of the select list, with the bindings in the order of the ?', async () => {
    expect(await selectRows(db, FIND, ['x', 0])).toEqual([
      ['a', 'Ada', 3, '2026-01-01T00:00:00.000Z'],
      ['b', null, 1, null],
    ]);
    expect(await selectRows(db, FIND, ['x', 2])).toEqual([['a', 'Ada', 3, '2026-01-01T00:00:00.000Z']]);
    expect(await selectRows(db, FIND, ['nothing', 0])).toEqual([]);
  });

  it('leaves knex answering objects for the same SQL text', async () => {
    await selectRows(db, FIND, ['y', 0]);
    expect(rawRows(await db.raw(FIND, ['y', 0]))).toEqual([{ id: 'c', name: 'Cy', score: 9, born_at: null }]);
    expect(await selectRows(db, FIND, ['y', 0])).toEqual([['c', 'Cy', 9, null]]);
  });

  it("reads a transaction's uncommitted rows when given the transaction, and nothing of it after a rollback", async () => {
    await expect(
      db.transaction(async (trx) => {
        await trx('select_rows_things').insert({ id: 'd', kind: 'z', name: 'Dee', score: 5 });
        expect(await selectRows(trx, FIND, ['z', 0])).toEqual([['d', 'Dee', 5, null]]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await selectRows(db, FIND, ['z', 0])).toEqual([]);
  });

  it("emits knex's query event with the SQL and bindings, as knex does for its own statements", async () => {
    const seen: Array<{ sql: string; bindings: unknown }> = [];
    const listener = (query: { sql: string; bindings: unknown }) => seen.push({ sql: query.sql, bindings: query.bindings });
    db.on('query', listener);
    try {
      await selectRows(db, FIND, ['x', 1]);
    } finally {
      db.off('query', listener);
    }
    // knex numbers the placeholders for PostgreSQL, and reports the statement as it sent it.
    const sent = dialect === 'sqlite' ? FIND : FIND.replace('?', '$1').replace('?', '$2');
    expect(seen).toEqual([{ sql: sent, bindings: ['x', 1] }]);
  });

  it('binds booleans and dates as knex does on the engine', async () => {
    const [[flag]] = (await selectRows(db, 'select case when ? then 1 else 0 end as flag', [true])) as [[unknown]];
    expect(Number(flag)).toBe(1);
    const [[same]] = (await selectRows(db, 'select count(*) from select_rows_things where id = ?', ['a'])) as [[unknown]];
    expect(Number(same)).toBe(1);
  });

  it('raises the driver error, with its code, and keeps serving afterwards', async () => {
    const error = await selectRows(db, 'select nope from select_rows_things where id = ?', ['a']).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as { code?: string }).code).toMatch(dialect === 'sqlite' ? /^SQLITE_ERROR/ : /^42703$/);
    expect(isDatabaseUnavailable(error)).toBe(false);
    expect(await selectRows(db, FIND, ['y', 0])).toEqual([['c', 'Cy', 9, null]]);
  });

  it('waits for the pool like any statement: concurrent reads all answer', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => selectRows(db, FIND, [i % 2 ? 'x' : 'y', 0])));
    expect(answers.map((rows) => rows.length)).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 ? 2 : 1)));
  });

  it('outside a transaction, neither reads nor writes inside one that holds a connection', async () => {
    let outsideRead: Promise<unknown[][]> | undefined;
    let outsideWrite: Promise<number> | undefined;
    await expect(
      db.transaction(async (trx) => {
        await trx('select_rows_things').insert({ id: 'f', kind: 'v', name: 'Fay', score: 4 });
        outsideRead = selectRows(db, FIND, ['v', 0]);
        outsideWrite = runStatement(db, 'update select_rows_things set name = ? where id = ?', ['Outside', 'a']);
        const turn = new Promise((resolve) => setImmediate(resolve, 'still waiting'));
        const first = await Promise.race([outsideRead.then(() => 'answered'), turn]);
        // SQLite has one connection, held by the transaction: the statement waits for it.
        if (dialect === 'sqlite') expect(first).toBe('still waiting');
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await outsideRead).toEqual([]);
    expect(await outsideWrite).toBe(1);
    expect(await selectRows(db, 'select name from select_rows_things where id = ?', ['a'])).toEqual([['Outside']]);
    await runStatement(db, 'update select_rows_things set name = ? where id = ?', ['Ada', 'a']);
  });

  it('runStatement answers how many rows it changed, commits on its own, and rolls back with a transaction', async () => {
    const RENAME = 'update select_rows_things set name = ? where kind = ? and name is not null';
    expect(await runStatement(db, RENAME, ['Renamed', 'nothing'])).toBe(0);
    expect(
      await runStatement(db, 'insert into select_rows_things (id, kind, name, score) values (?, ?, ?, ?)', ['e', 'w', 'Eve', 2]),
    ).toBe(1);
    expect(await runStatement(db, RENAME, ['Renamed', 'w'])).toBe(1);
    expect(await selectRows(db, 'select name from select_rows_things where id = ?', ['e'])).toEqual([['Renamed']]);
    await expect(
      db.transaction(async (trx) => {
        expect(await runStatement(trx, 'delete from select_rows_things where id = ?', ['e'])).toBe(1);
        expect(await selectRows(trx, 'select id from select_rows_things where id = ?', ['e'])).toEqual([]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await selectRows(db, 'select id from select_rows_things where id = ?', ['e'])).toEqual([['e']]);
  });

  it('runStatement raises a constraint violation as the driver did, and writes nothing', async () => {
    const error = await runStatement(db, 'insert into select_rows_things (id, kind, score) values (?, ?, ?)', [
      'a',
      'dup',
      1,
    ]).catch((caught: unknown) => caught);
    expect(isUniqueViolation(error)).toBe(true);
    expect(await selectRows(db, 'select kind from select_rows_things where id = ?', ['a'])).toEqual([['x']]);
  });
});
