import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { framesByObject, walFramePages } from '../bench/wal-frames.js';

/** The parts of a better-sqlite3 connection these tests use (the driver ships no types of its own). */
interface SqliteConnection {
  pragma(sql: string): unknown;
  exec(sql: string): void;
  prepare(sql: string): { run(...values: unknown[]): unknown; all(...values: unknown[]): unknown[] };
  close(): void;
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => SqliteConnection;

/** A SQLite file in WAL mode with automatic checkpoints off: a table with one index, and a second table. */
function openDatabase() {
  const dir = mkdtempSync(join(tmpdir(), 'idt-wal-frames-'));
  const file = join(dir, 'wal.sqlite');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec(
    'create table items (id integer primary key, name text); create index items_name on items (name); create table other (id integer primary key)',
  );
  db.pragma('wal_checkpoint(TRUNCATE)');
  const framesInWal = () => Number((db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]?.log);
  const byObject = () => {
    const owners = new Map(
      (db.prepare('select pageno, name from dbstat').all() as Array<{ pageno: number; name: string }>).map((row) => [
        row.pageno,
        row.name,
      ]),
    );
    return Object.fromEntries(framesByObject(walFramePages(readFileSync(`${file}-wal`)), owners));
  };
  return { db, file, dir, framesInWal, byObject };
}

describe('bench/wal-frames.ts', () => {
  let opened: ReturnType<typeof openDatabase> | undefined;
  afterEach(() => {
    opened?.db.close();
    if (opened) rmSync(opened.dir, { recursive: true, force: true });
    opened = undefined;
  });

  it('reads the page of every frame and names the table or index that owns it', () => {
    opened = openDatabase();
    const { db, file, byObject, framesInWal } = opened;
    expect(walFramePages(readFileSync(`${file}-wal`))).toEqual([]);
    // One commit: a row of the table and its index entry, one page each.
    db.prepare('insert into items (name) values (?)').run('a');
    expect(byObject()).toEqual({ items: 1, items_name: 1 });
    // A second commit writes the pages it changed again; one of the other table adds its page.
    db.prepare('update items set name = ? where id = 1').run('b');
    db.prepare('insert into other (id) values (1)').run();
    expect(byObject()).toEqual({ items: 2, items_name: 2, other: 1 });
    expect(walFramePages(readFileSync(`${file}-wal`))).toHaveLength(framesInWal());
  });

  it('stops at frames left over from before the WAL restarted', () => {
    opened = openDatabase();
    const { db, file, byObject, framesInWal } = opened;
    const insert = db.prepare('insert into items (name) values (?)');
    for (let i = 0; i < 20; i++) insert.run(`name ${i}`);
    const before = readFileSync(`${file}-wal`).length;
    // Every frame copied back: the next commit writes from the start of the file again, with new salts.
    db.pragma('wal_checkpoint(RESTART)');
    db.prepare('insert into other (id) values (1)').run();
    expect(readFileSync(`${file}-wal`).length).toBe(before);
    expect(byObject()).toEqual({ other: 1 });
    expect(framesInWal()).toBe(1);
  });

  it('answers nothing for an empty or truncated file', () => {
    expect(walFramePages(Buffer.alloc(0))).toEqual([]);
    expect(walFramePages(Buffer.alloc(20))).toEqual([]);
  });
});
