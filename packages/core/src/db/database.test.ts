import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDatabase, databaseConfig, toIso } from './database.js';

describe('SQLite connections', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const open = () => {
    const dir = mkdtempSync(join(tmpdir(), 'idt-db-'));
    dirs.push(dir);
    return createDatabase(`sqlite:${join(dir, 'idt.sqlite')}`);
  };

  it('prepare each SQL text once and reuse the statement', async () => {
    const db = open();
    try {
      const connection = (await db.client.acquireConnection()) as { prepare(sql: string): unknown };
      try {
        expect(connection.prepare('select 1 as one')).toBe(connection.prepare('select 1 as one'));
        expect(connection.prepare('select 2 as two')).not.toBe(connection.prepare('select 1 as one'));
      } finally {
        await db.client.releaseConnection(connection);
      }
    } finally {
      await db.destroy();
    }
  });

  it('answer a cached query correctly after the schema changed under it, with other bindings each time', async () => {
    const db = open();
    try {
      await db.schema.createTable('things', (t) => {
        t.string('id').primary();
      });
      await db('things').insert([{ id: 'a' }, { id: 'b' }]);
      expect(await db('things').where({ id: 'a' }).select('*')).toEqual([{ id: 'a' }]);
      await db.schema.alterTable('things', (t) => {
        t.string('name').defaultTo('unnamed');
      });
      expect(await db('things').where({ id: 'b' }).select('*')).toEqual([{ id: 'b', name: 'unnamed' }]);
      expect(await db('things').where({ id: 'a' }).select('*')).toEqual([{ id: 'a', name: 'unnamed' }]);
      await expect(db('things').insert({ id: 'a' })).rejects.toThrow(/UNIQUE/);
      expect(await db('things').where({ id: 'a' }).select('*')).toEqual([{ id: 'a', name: 'unnamed' }]);
    } finally {
      await db.destroy();
    }
  });
});

describe('Postgres configuration', () => {
  const of = (url: string, options = {}) =>
    databaseConfig(url, options) as { connection: { connectionString: string }; preparedStatements?: boolean };

  it("prepares statements unless the URL or the options say not to, and hands node-postgres the URL without idt's parameter", () => {
    expect(of('postgres://idt@db:5432/idt')).toMatchObject({
      connection: { connectionString: 'postgres://idt@db:5432/idt' },
      preparedStatements: true,
    });
    expect(of('postgres://idt@db/idt?prepared_statements=false')).toMatchObject({
      connection: { connectionString: 'postgres://idt@db/idt' },
      preparedStatements: false,
    });
    expect(of('postgresql://idt@db/idt?sslmode=require&prepared_statements=off&application_name=api')).toMatchObject({
      connection: { connectionString: 'postgresql://idt@db/idt?sslmode=require&application_name=api' },
      preparedStatements: false,
    });
    expect(of('postgres://idt@db/idt?prepared_statements=true')).toMatchObject({ preparedStatements: true });
    expect(of('postgres://idt@db/idt?sslmode=disable', { preparedStatements: false })).toMatchObject({
      connection: { connectionString: 'postgres://idt@db/idt?sslmode=disable' },
      preparedStatements: false,
    });
  });

  it('refuses a value of prepared_statements it does not know, rather than guess', () => {
    expect(() => databaseConfig('postgres://idt@db/idt?prepared_statements=no')).toThrow(
      'prepared_statements=no on the database URL: use true or false',
    );
  });
});

describe('toIso', () => {
  it('keeps canonical strings and normalizes everything else', () => {
    expect(toIso('2026-11-25T10:00:00.123Z')).toBe('2026-11-25T10:00:00.123Z');
    expect(toIso('2026-11-25T10:00:00Z')).toBe('2026-11-25T10:00:00.000Z');
    expect(toIso('2026-11-25 10:00:00.5+01:00')).toBe('2026-11-25T09:00:00.500Z');
    expect(toIso(new Date(Date.UTC(2026, 0, 2)))).toBe('2026-01-02T00:00:00.000Z');
    expect(toIso(0)).toBe('1970-01-01T00:00:00.000Z');
    expect(() => toIso({})).toThrow(TypeError);
  });
});
