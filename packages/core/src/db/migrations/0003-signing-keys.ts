import type { Migration } from '../migrations.js';

/** `core_signing_keys`: JWT signing keys, private parts sealed; at most one active key per algorithm. */
export const signingKeysMigration: Migration = {
  name: '0003_signing_keys',
  async up(db) {
    await db.schema.createTable('core_signing_keys', (t) => {
      t.string('kid', 64).primary();
      t.string('alg', 16).notNullable();
      t.string('status', 16).notNullable();
      t.text('public_jwk').notNullable();
      t.text('private_jwk_sealed').notNullable();
      t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
      t.timestamp('retired_at', { useTz: true, precision: 3 });
      t.timestamp('expires_at', { useTz: true, precision: 3 });
    });
    await db.raw("create unique index core_signing_keys_one_active on core_signing_keys (alg) where status = 'active'");
  },
  async down(db) {
    await db.schema.dropTableIfExists('core_signing_keys');
  },
};
