/**
 * What the bench's bulk seeders share (bench/seed-scale.ts,
 * bench/seed-scim-audit.ts): the database the servers will use, multi-row
 * inserts in batches each engine takes, and per-step timings.
 */
import { loadConfig } from '@idt/core';
import { createDatabase, dialectOf } from '@idt/core/knex';
import type { Knex } from 'knex';

/** The seeded database: IDT_DATABASE_URL, else whatever the server's configuration resolves. */
export function openSeedDatabase(): { db: Knex; dialect: ReturnType<typeof dialectOf> } {
  const db = createDatabase(process.env.IDT_DATABASE_URL ?? loadConfig(process.env).databaseUrl);
  return { db, dialect: dialectOf(db) };
}

/**
 * Inserts `count` rows made by `row`, in batches: knex writes SQLite's
 * multi-row inserts as a compound SELECT (at most 500 terms); PostgreSQL
 * takes up to 65,535 bound parameters.
 */
export async function insertAll(
  trx: Knex.Transaction,
  table: string,
  count: number,
  row: (index: number) => Record<string, unknown>,
): Promise<void> {
  const batch = dialectOf(trx) === 'sqlite' ? 400 : 1000;
  for (let start = 0; start < count; start += batch) {
    const rows = [];
    for (let index = start; index < Math.min(count, start + batch); index++) rows.push(row(index));
    await trx(table).insert(rows);
  }
}

/** Seconds per step, rounded to 10 ms: `lap(name, since)` records the time since `since` (a `performance.now()`). */
export function createLaps(): { readonly timings: Record<string, number>; lap(name: string, since: number): void } {
  const timings: Record<string, number> = {};
  return {
    timings,
    lap(name, since) {
      timings[name] = Number(((performance.now() - since) / 1000).toFixed(2));
    },
  };
}
