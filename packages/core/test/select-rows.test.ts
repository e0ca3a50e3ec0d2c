import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../src/index.js';
import {
  createDatabase,
  isUniqueViolation,
  type ListStatement,
  listStatement,
  rawRows,
  runListStatement,
  runStatement,
  runStatementsTogether,
  selectListRows,
  selectRows,
} from '../src/knex.js';

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

  describe('runStatementsTogether', () => {
    const INSERT = 'insert into select_rows_things (id, kind, name, score) values (?, ?, ?, ?)';
    const RENAME = 'update select_rows_things set name = ? where id = ?';
    const names = async (...ids: string[]) =>
      await selectRows(
        db,
        `select id, name from select_rows_things where id in (${ids.map(() => '?').join(', ')}) order by id`,
        ids,
      );

    it('commits every statement and answers how many rows each changed', async () => {
      const changed = await runStatementsTogether(db, [
        [INSERT, ['t1', 'together', 'One', 1]],
        [RENAME, ['Renamed', 't1']],
        [RENAME, ['Nobody', 'no such id']],
      ]);
      expect(changed).toEqual([1, 1, 0]);
      expect(await names('t1')).toEqual([['t1', 'Renamed']]);
    });

    it('writes nothing when one statement fails, raises its error, and keeps serving', async () => {
      const error = await runStatementsTogether(db, [
        [RENAME, ['Lost', 'a']],
        [INSERT, ['t2', 'together', 'Two', 2]],
        // The primary key of an existing row: refused.
        [INSERT, ['a', 'dup', 'Dup', 1]],
      ]).catch((caught: unknown) => caught);
      expect(isUniqueViolation(error)).toBe(true);
      expect(await names('a', 't2')).toEqual([['a', 'Ada']]);
      expect(await runStatementsTogether(db, [[INSERT, ['t2', 'together', 'Two', 2]]])).toEqual([1]);
      expect(await names('t2')).toEqual([['t2', 'Two']]);
    });

    it('runs in the transaction it is given, and rolls back with it', async () => {
      await expect(
        db.transaction(async (trx) => {
          expect(await runStatementsTogether(trx, [[INSERT, ['t3', 'together', 'Three', 3]]])).toEqual([1]);
          expect(await selectRows(trx, 'select id from select_rows_things where id = ?', ['t3'])).toEqual([['t3']]);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await names('t3')).toEqual([]);
    });

    it('emits one query event per statement, with the transaction around them', async () => {
      const seen: string[] = [];
      const listener = (query: { sql: string }) => seen.push(query.sql.toLowerCase());
      db.on('query', listener);
      try {
        await runStatementsTogether(db, [
          [RENAME, ['Four', 't1']],
          [RENAME, ['Renamed', 't1']],
        ]);
      } finally {
        db.off('query', listener);
      }
      const updates = seen.filter((sql) => sql.startsWith('update'));
      expect(updates).toHaveLength(2);
      expect(seen[0]).toMatch(/^begin/);
      expect(seen.at(-1)).toMatch(/^commit/);
    });

    it('waits for a transaction that holds the connection, then commits on its own', async () => {
      await runStatement(db, INSERT, ['t5', 'together', 'Five', 5]);
      let together: Promise<number[]> | undefined;
      await db.transaction(async (trx) => {
        // SQLite: the transaction holds the only connection; PostgreSQL: it holds the row.
        await runStatement(trx, RENAME, ['Held', 't5']);
        together = runStatementsTogether(db, [[RENAME, ['Fifth', 't5']]]);
        const turn = new Promise((resolve) => setTimeout(resolve, 20, 'still waiting'));
        expect(await Promise.race([together.then(() => 'answered'), turn])).toBe('still waiting');
      });
      expect(await together).toEqual([1]);
      expect(await names('t5')).toEqual([['t5', 'Fifth']]);
    });
  });
});

describe.each(testDialects())('list statements on %s', (dialect) => {
  let database: TestDatabase;
  let db: Knex;
  /** The item counts each statement was written for. */
  const built: Record<string, number[]> = { insert: [], mark: [], find: [] };
  const spy = (name: string, statement: ListStatement): ListStatement => ({
    ...statement,
    sql(count) {
      built[name]?.push(count);
      return statement.sql(count);
    },
  });
  const INSERT = spy(
    'insert',
    listStatement((rows) => `insert into list_things (id, kind, score) values ${rows}`, { kind: 'values', item: '(?, ?, ?)' }),
  );
  const MARK = spy(
    'mark',
    listStatement((pairs) => `update list_things set kind = ? where (id, score) in (${pairs}) returning id`, {
      kind: 'in',
      item: '(?, ?)',
    }),
  );
  const FIND = spy(
    'find',
    listStatement((ids) => `select id from list_things where id in (${ids}) order by id`, { kind: 'in' }),
  );
  const things = (count: number, kind: string) =>
    Array.from({ length: count }, (_, i) => [`${kind}-${String(i).padStart(4, '0')}`, kind, i]).flat();
  const countOf = async (kind: string) =>
    Number((await selectRows(db, 'select count(*) from list_things where kind = ?', [kind]))[0]?.[0]);

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    db = database.db;
    await db.schema.createTable('list_things', (t) => {
      t.string('id').primary();
      t.string('kind').notNullable();
      t.integer('score').notNullable();
    });
  });
  afterAll(async () => {
    await database.destroy();
  });

  it('inserts every row once, in statements of power-of-two row counts', async () => {
    built.insert = [];
    expect(await runListStatement(db, INSERT, [], things(13, 'a'))).toBe(13);
    expect(built.insert).toEqual([8, 4, 1]);
    built.insert = [];
    expect(await runListStatement(db, INSERT, [], things(300, 'b'))).toBe(300);
    expect(built.insert).toEqual([256, 32, 8, 4]);
    expect(await countOf('a')).toBe(13);
    expect(await countOf('b')).toBe(300);
  });

  it('matches an in list exactly, padded to a power of two with its last item, and a long one in chunks', async () => {
    built.find = [];
    expect(await selectListRows(db, FIND, [], ['a-0002', 'a-0000', 'a-0011'])).toEqual([['a-0000'], ['a-0002'], ['a-0011']]);
    expect(built.find).toEqual([4]);
    const all = (things(300, 'b').filter((_, i) => i % 3 === 0) as string[]).reverse();
    built.find = [];
    const rows = await selectListRows(db, FIND, [], all);
    expect(built.find).toEqual([256, 64]);
    expect(rows.map((row) => row[0]).sort()).toEqual([...all].sort());
    expect(await selectListRows(db, FIND, [], [])).toEqual([]);
  });

  it('binds the head before every chunk, and counts each row changed once', async () => {
    built.mark = [];
    // Pairs of (id, score): three that match, one whose score does not.
    const pairs = ['a-0001', 1, 'a-0005', 5, 'a-0006', 99, 'a-0007', 7];
    const marked = await selectListRows(db, MARK, ['marked'], pairs);
    expect(marked.map((row) => row[0]).sort()).toEqual(['a-0001', 'a-0005', 'a-0007']);
    expect(built.mark).toEqual([4]);
    const many = things(300, 'b').flatMap((value, i) => (i % 3 === 1 ? [] : [value]));
    expect((await selectListRows(db, MARK, ['bulk'], many)).length).toBe(300);
    const DELETE = listStatement((ids) => `delete from list_things where kind = ? and id in (${ids})`, { kind: 'in' });
    expect(await runListStatement(db, DELETE, ['marked'], ['a-0001', 'a-0005', 'a-0006', 'a-0007', 'a-0007'])).toBe(3);
    expect(await countOf('bulk')).toBe(300);
  });

  it('refuses items that do not fill the last tuple, before running anything', async () => {
    await expect(runListStatement(db, INSERT, [], ['x-1', 'x', 1, 'x-2', 'x'])).rejects.toThrow(TypeError);
    expect(await countOf('x')).toBe(0);
  });

  it('rolls every chunk back with the transaction it ran in', async () => {
    await expect(
      db.transaction(async (trx) => {
        await runListStatement(trx, INSERT, [], things(20, 'r'));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await countOf('r')).toBe(0);
  });
});

describe.runIf(testDialects().includes('postgres'))('prepared statements on postgres', () => {
  let database: TestDatabase;
  /** One connection, so that every statement meets the prepared forms of the ones before it. */
  let db: Knex;
  const READ = 'select id, score from prepared_things where id = ?';
  /** The statements prepared on the pool's one connection, by their text. */
  const prepared = async (on: Knex = db) =>
    rawRows<{ statement: string }>(await on.raw('select statement from pg_prepared_statements')).map((row) => row.statement);

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    db = createDatabase(database.url, { pool: { min: 1, max: 1 } });
    await db.schema.createTable('prepared_things', (t) => {
      t.string('id').primary();
      t.integer('score').notNullable();
    });
    await db('prepared_things').insert([
      { id: 'a', score: 1 },
      { id: 'b', score: 2 },
    ]);
  });
  afterAll(async () => {
    await db.destroy();
    await database.destroy();
  });

  it('prepares each text once per connection and runs it again by name', async () => {
    expect(await selectRows(db, READ, ['a'])).toEqual([['a', 1]]);
    expect(await selectRows(db, READ, ['b'])).toEqual([['b', 2]]);
    expect(await runStatement(db, 'update prepared_things set score = score where id = ?', ['a'])).toBe(1);
    const texts = await prepared();
    expect(texts.filter((text) => text === 'select id, score from prepared_things where id = $1')).toHaveLength(1);
    expect(texts).toContain('update prepared_things set score = score where id = $1');
  });

  it('prepares on the connection of the transaction it is given', async () => {
    const other = createDatabase(database.url, { pool: { min: 0, max: 2 } });
    try {
      await other.transaction(async (trx) => {
        expect(await selectRows(trx, 'select score from prepared_things where id = ? and score > ?', ['b', 0])).toEqual([[2]]);
        expect(await prepared(trx)).toEqual(['select score from prepared_things where id = $1 and score > $2']);
      });
    } finally {
      await other.destroy();
    }
  });

  it('runs a statement again, by a new name, after the connection lost its prepared statements', async () => {
    await selectRows(db, READ, ['a']);
    await db.raw('deallocate all');
    expect(await prepared()).toEqual([]);
    expect(await selectRows(db, READ, ['a'])).toEqual([['a', 1]]);
    expect(await prepared()).toEqual(['select id, score from prepared_things where id = $1']);
  });

  it('runs a statement again when a column it answers changed type since it was prepared', async () => {
    const READ_SCORE = 'select score from prepared_things where id = ?';
    expect(await selectRows(db, READ_SCORE, ['b'])).toEqual([[2]]);
    await db.raw('alter table prepared_things alter column score type text');
    try {
      expect(await selectRows(db, READ_SCORE, ['b'])).toEqual([['2']]);
      expect(await selectRows(db, READ_SCORE, ['b'])).toEqual([['2']]);
    } finally {
      await db.raw('alter table prepared_things alter column score type integer using score::integer');
    }
  });

  it('inside a transaction, a stale statement fails the transaction, and the next run outside it succeeds', async () => {
    const READ_ID = 'select id from prepared_things where score = ?';
    expect(await selectRows(db, READ_ID, [1])).toEqual([['a']]);
    await db.raw('deallocate all');
    await expect(db.transaction(async (trx) => selectRows(trx, READ_ID, [1]))).rejects.toMatchObject({ code: '26000' });
    expect(await selectRows(db, READ_ID, [1])).toEqual([['a']]);
  });

  it('refuses to run on a transaction that already ended', async () => {
    let ended: Knex.Transaction | undefined;
    await db.transaction(async (trx) => {
      ended = trx;
    });
    await expect(selectRows(ended as Knex.Transaction, READ, ['a'])).rejects.toThrow(/Transaction query already complete/);
  });

  it('prepares nothing with ?prepared_statements=false, and still answers', async () => {
    const unprepared = createDatabase(`${database.url}?prepared_statements=false`, { pool: { min: 1, max: 1 } });
    try {
      expect(await selectRows(unprepared, READ, ['a'])).toEqual([['a', 1]]);
      expect(await runStatement(unprepared, 'update prepared_things set score = score where id = ?', ['b'])).toBe(1);
      expect(await prepared(unprepared)).toEqual([]);
    } finally {
      await unprepared.destroy();
    }
  });
});
