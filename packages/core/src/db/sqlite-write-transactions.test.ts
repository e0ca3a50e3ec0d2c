import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import { afterEach, describe, expect, it } from 'vitest';
import { createDatabase } from './database.js';

const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const counterWriter = fileURLToPath(new URL('../../test/fixtures/sqlite-counter-writer.ts', import.meta.url));

// In WAL mode a transaction that began with a read and then writes must upgrade its read snapshot to
// the write lock. When another connection holds that lock, or committed since the snapshot, SQLite
// answers SQLITE_BUSY at once, without waiting for busy_timeout (waiting could not help: the snapshot
// is stale). Two processes on one file (`idt seed` beside a running server, whose event dispatcher
// writes every second) then fail at random with "database is locked". idt's SQLite connections begin
// every transaction as a writer (BEGIN IMMEDIATE), so the other connection waits instead.
describe('SQLite write transactions beside another connection on the same file', () => {
  const dirs: string[] = [];
  const databases: Knex[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const db of databases.splice(0)) await db.destroy();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const scratchUrl = () => {
    const dir = mkdtempSync(join(tmpdir(), 'idt-db-tx-'));
    dirs.push(dir);
    return `sqlite:${join(dir, 'idt.sqlite')}`;
  };
  const open = (url: string, busyTimeoutMs?: number) => {
    const db = createDatabase(url, busyTimeoutMs === undefined ? {} : { busyTimeoutMs });
    databases.push(db);
    return db;
  };

  it('hold the write lock from the start: another connection cannot write between their first read and first write', async () => {
    const url = scratchUrl();
    const mine = open(url);
    // Waits for nothing: it reports a locked file at once instead of blocking this (single) thread.
    const other = open(url, 0);
    await mine.schema.createTable('things', (t) => {
      t.string('id').primary();
    });
    await other.raw('select 1');

    let otherWrite: string | undefined;
    await mine.transaction(async (trx) => {
      expect(await trx('things').select('id')).toEqual([]);
      otherWrite = await other('things')
        .insert({ id: 'other' })
        .then(
          () => 'committed',
          (error: { code?: string }) => error.code,
        );
      // Deferred, this write would fail with SQLITE_BUSY_SNAPSHOT: the other connection committed after our read.
      await trx('things').insert({ id: 'mine' });
    });

    expect(otherWrite).toBe('SQLITE_BUSY');
    // Once committed, the file is free again.
    await other('things').insert({ id: 'other' });
    expect((await mine('things').orderBy('id').select('id')).map((row) => row.id)).toEqual(['mine', 'other']);
  });

  it('still nest: a savepoint rolls back alone, and a read-only transaction commits', async () => {
    const db = open(scratchUrl());
    await db.schema.createTable('things', (t) => {
      t.string('id').primary();
    });
    await db.transaction(async (trx) => {
      await trx('things').insert({ id: 'kept' });
      await expect(
        trx.transaction(async (inner) => {
          await inner('things').insert({ id: 'dropped' });
          throw new Error('roll the savepoint back');
        }),
      ).rejects.toThrow('roll the savepoint back');
    });
    expect(await db.transaction((trx) => trx('things').select('id'))).toEqual([{ id: 'kept' }]);
  });

  it('race in two processes without a SQLITE_BUSY and without a lost update', async () => {
    const url = scratchUrl();
    const db = open(url);
    await db.schema.createTable('counter', (t) => {
      t.integer('id').primary();
      t.integer('n').notNullable();
    });
    await db('counter').insert({ id: 1, n: 0 });

    const count = 300;
    const writers = [0, 1].map(() => {
      const child = spawn(process.execPath, ['--import', 'tsx', counterWriter, url, String(count)], {
        cwd: repoRoot,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      children.push(child);
      const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
      const stderr: string[] = [];
      child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
      const next = () =>
        new Promise<string>((resolve, reject) => {
          const onExit = () => reject(new Error(`writer exited early: ${stderr.join('')}`));
          child.once('exit', onExit);
          lines.once('line', (line) => {
            child.off('exit', onExit);
            resolve(line);
          });
        });
      return { child, next };
    });

    // Both open the file first, then start together, so their transactions overlap.
    expect(await Promise.all(writers.map((writer) => writer.next()))).toEqual(['ready', 'ready']);
    const outcomes = writers.map((writer) => writer.next());
    for (const { child } of writers) child.stdin?.end('go\n');

    expect(await Promise.all(outcomes)).toEqual([`done ${count}`, `done ${count}`]);
    expect(await db('counter').where({ id: 1 }).first()).toEqual({ id: 1, n: 2 * count });
  }, 90_000);
});
