import type { Knex } from 'knex';
import { dialectOf } from '../database.js';
import type { Migration } from '../migrations.js';

const TABLE = 'core_cache_invalidations';
const CREATED_AT_INDEX = 'core_cache_invalidations_created_at_index';
/** Keeps the newest row through any delete, so that SQLite's next rowid never goes back (see the migration). */
const KEEP_NEWEST_TRIGGER = 'core_cache_invalidations_keep_newest';

/**
 * Rebuilds the SQLite table with `key` as its id column's definition,
 * keeping every row; `before` runs between the copy and the swap, on the
 * new table's name.
 */
async function rebuild(db: Knex, key: string, before?: (table: string) => Promise<void>): Promise<void> {
  const next = `${TABLE}_rebuilt`;
  await db.raw(
    `create table ${next} (id ${key}, origin varchar(64) not null, namespace varchar(100) not null, key varchar(400) not null, created_at datetime not null)`,
  );
  await db.raw(
    `insert into ${next} (id, origin, namespace, key, created_at) select id, origin, namespace, key, created_at from ${TABLE}`,
  );
  await before?.(next);
  await db.raw(`drop table ${TABLE}`);
  await db.raw(`alter table ${next} rename to ${TABLE}`);
}

/**
 * `core_cache_invalidations` costs less to write on SQLite: each eviction
 * row was also an entry of the `created_at` index and, the key being
 * `AUTOINCREMENT`, an update of `sqlite_sequence`, so every commit that
 * evicted a cache entry wrote two more pages than its row's. Pruning now
 * goes by id (`@idt/core`'s invalidator), so the index is dropped on both
 * engines (Postgres deployments do not use the table).
 *
 * On SQLite the table is rebuilt with a plain integer key: a new row's id
 * is then one more than the largest present. Readers ask for rows after
 * the last id they read, so ids must never go back: a trigger keeps the
 * newest row through every delete (the invalidator's pruning, an older
 * version's, or one by hand), and the rebuild keeps the rows and, when
 * rows at the top were deleted, a marker row at the highest id ever handed
 * out. The marker's namespace is empty: no cache listens to it.
 */
export const cacheInvalidationsRowidMigration: Migration = {
  name: '0005_cache_invalidations_rowid',
  async up(db) {
    if (dialectOf(db) !== 'sqlite') {
      await db.schema.alterTable(TABLE, (t) => t.dropIndex(['created_at'], CREATED_AT_INDEX));
      return;
    }
    await rebuild(db, 'integer not null primary key', (next) =>
      db.raw(
        `insert into ${next} (id, origin, namespace, key, created_at)
         select seq, 'migration', '', '', ? from sqlite_sequence
         where name = ? and seq > (select coalesce(max(id), 0) from ${TABLE})`,
        [new Date().toISOString(), TABLE],
      ),
    );
    await db.raw(
      `create trigger ${KEEP_NEWEST_TRIGGER} before delete on ${TABLE}
       when old.id = (select max(id) from ${TABLE})
       begin select raise(ignore); end`,
    );
  },
  async down(db) {
    if (dialectOf(db) !== 'sqlite') {
      await db.schema.alterTable(TABLE, (t) => t.index(['created_at'], CREATED_AT_INDEX));
      return;
    }
    // The table as 0004 created it.
    await rebuild(db, 'integer not null primary key autoincrement');
    await db.raw(`create index ${CREATED_AT_INDEX} on ${TABLE} (created_at)`);
  },
};
