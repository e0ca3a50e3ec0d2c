import type { AuditTrail, EventOutbox } from '@idt/core';
import { type CacheInvalidator, runStatement } from '@idt/core/knex';
import type { Knex } from 'knex';

/** What the credential stores write through: the database, the outbox and the cache invalidator. */
export interface KnexCredentialStoreOptions {
  readonly db: Knex;
  /** Writes the events services publish in the store's transactions. */
  readonly outbox: EventOutbox;
  /** Evicts the cached credentials services name, after the store's transactions commit. */
  readonly invalidator: Pick<CacheInvalidator, 'invalidate' | 'invalidateMany'>;
  /** Records the audit entries services write in the store's transactions (`ctx.audit`). */
  readonly audit?: Pick<AuditTrail, 'record'>;
}

/** The statements of {@link lockUser}, fixed (past knex's builder). */
const LOCK_USER_SQL = 'update identity_users set updated_at = updated_at where id = ?';
const LOCK_ACTIVE_USER_SQL = `${LOCK_USER_SQL} and status = ?`;

/**
 * Takes the row lock of a user (`UPDATE ... SET updated_at = updated_at`),
 * serializing writes that must see each other's results, e.g. two logins
 * counting the same user's sessions. On SQLite the statement takes the
 * database write lock, which serializes them as well.
 *
 * @returns whether the user exists (and, with `activeOnly`, is active).
 */
export async function lockUser(trx: Knex.Transaction, userId: string, options: { activeOnly?: boolean } = {}): Promise<boolean> {
  return options.activeOnly
    ? (await runStatement(trx, LOCK_ACTIVE_USER_SQL, [userId, 'active'])) === 1
    : (await runStatement(trx, LOCK_USER_SQL, [userId])) === 1;
}
