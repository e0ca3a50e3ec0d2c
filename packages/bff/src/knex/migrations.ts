import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/** BFF sessions, one row per signed-in browser session. */
export const BFF_SESSIONS_TABLE = 'bff_sessions';

/**
 * `bff_sessions`: keyed by the SHA-256 of the session id (the id is a bearer
 * secret; a database read yields no usable cookie). The tokens and the CSRF
 * token are one sealed value (`secrets`, AES-256-GCM under a key derived
 * from the cookie secret named by `key_id`, bound to the row). `sub` and
 * `sid` are indexed for back-channel logout; `lock_owner`/`lock_until` are
 * the refresh lease that keeps two instances from refreshing one session.
 */
const initial: Migration = {
  name: '0001_bff_sessions',
  async up(db) {
    await db.schema.createTable(BFF_SESSIONS_TABLE, (t) => {
      t.string('id_hash', 64).primary();
      t.string('sub', 255).notNullable();
      t.string('sid', 255);
      t.text('user_data').notNullable();
      t.text('secrets').notNullable();
      t.string('key_id', 64).notNullable();
      timestampColumn(t, 'access_token_expires_at').notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      t.string('lock_owner', 64);
      timestampColumn(t, 'lock_until');
      t.index(['sub']);
      t.index(['sid']);
      t.index(['expires_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(BFF_SESSIONS_TABLE);
  },
};

/**
 * The migrations of `@idt/bff`, recorded in `idt_bff_migrations`. They
 * depend on no other package: a BFF may keep its sessions in a database of
 * its own or share idt's.
 *
 * @example
 * await runMigrations(db, [bffMigrations]);
 */
export const bffMigrations: MigrationSet = {
  owner: '@idt/bff',
  tableName: 'idt_bff_migrations',
  migrations: [initial],
};
