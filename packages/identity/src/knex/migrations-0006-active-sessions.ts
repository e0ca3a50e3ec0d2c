import type { Migration } from '@idt/core/knex';

/**
 * `identity_sessions_active_index`: a user's active sessions in creation
 * order, straight from the index. Signing in (which evicts the oldest beyond
 * the limit) and the account page read them; without it both read every
 * session the user ever had until the prune job deletes the revoked ones,
 * and sorted them.
 */
export const activeSessionsMigration: Migration = {
  name: '0006_active_sessions',
  async up(db) {
    await db.raw(
      'create index identity_sessions_active_index on identity_sessions (user_id, created_at, id) where revoked_at is null',
    );
  },
  async down(db) {
    await db.raw('drop index if exists identity_sessions_active_index');
  },
};
