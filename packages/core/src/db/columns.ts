import type { Knex } from 'knex';

/**
 * A timestamp column as idt stores them: `timestamptz(3)` on Postgres, ISO
 * 8601 text on SQLite. Write `Date.toISOString()` values and read them back
 * with `toIso()`.
 *
 * @example
 * await db.schema.createTable('things', (t) => {
 *   timestampColumn(t, 'created_at').notNullable();
 * });
 */
export function timestampColumn(table: Knex.CreateTableBuilder | Knex.AlterTableBuilder, name: string): Knex.ColumnBuilder {
  return table.timestamp(name, { useTz: true, precision: 3 });
}
