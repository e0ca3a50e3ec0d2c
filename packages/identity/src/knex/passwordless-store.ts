import { knexUnitOfWork } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { PasswordlessStore, PasswordlessWrites } from '../passwordless/store.js';
import type { KnexCredentialStoreOptions } from './credential-store-deps.js';

const TABLE = 'identity_passwordless_requests';

/** The {@link PasswordlessWrites} primitives over one transaction. */
function passwordlessWrites(trx: Knex.Transaction): PasswordlessWrites {
  return {
    async retireCodes(userId) {
      await trx(TABLE).where({ user_id: userId, kind: 'code' }).whereNull('consumed_at').delete();
    },
    async insert(request) {
      await trx(TABLE).insert({
        id: request.id,
        user_id: request.userId,
        kind: request.kind,
        code_hash: request.codeHash,
        return_to: request.returnTo,
        attempts: 0,
        expires_at: request.expiresAt,
        consumed_at: null,
        created_at: request.createdAt,
      });
    },
    async consume(id, kind, now) {
      const updated = await trx(TABLE)
        .where({ id, kind })
        .whereNull('consumed_at')
        .andWhere('expires_at', '>', now)
        .update({ consumed_at: now });
      if (updated !== 1) return undefined;
      const row = await trx(TABLE).where({ id }).first('user_id', 'return_to');
      if (!row) return undefined;
      // A user deactivated since the request signs in nowhere; the request stays consumed.
      const verified = await trx('identity_users').where({ id: row.user_id, status: 'active' }).update({ email_verified: true });
      if (verified !== 1) return undefined;
      return { userId: row.user_id as string, returnTo: (row.return_to as string | null) ?? null };
    },
  };
}

/**
 * The knex {@link PasswordlessStore}.
 *
 * @example
 * const store = createKnexPasswordlessStore({ db, outbox: bus, invalidator });
 */
export function createKnexPasswordlessStore(options: KnexCredentialStoreOptions): PasswordlessStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, passwordlessWrites),
    async findActiveUserByEmail(email) {
      const row = await db('identity_users').where({ email, status: 'active' }).first('id', 'email', 'first_name');
      return row ? { id: row.id, email: row.email, firstName: row.first_name } : undefined;
    },
    async findCode(userId, now, maxAttempts) {
      const row = await db(TABLE)
        .where({ user_id: userId, kind: 'code' })
        .whereNull('consumed_at')
        .andWhere('expires_at', '>', now)
        .andWhere('attempts', '<', maxAttempts)
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .first('id', 'user_id', 'code_hash');
      return row?.code_hash ? { id: row.id, userId: row.user_id, codeHash: row.code_hash } : undefined;
    },
    async recordAttempt(id, now, maxAttempts) {
      const updated = await db(TABLE)
        .where({ id })
        .whereNull('consumed_at')
        .andWhere('expires_at', '>', now)
        .andWhere('attempts', '<', maxAttempts)
        .increment('attempts', 1);
      return updated === 1;
    },
    async prune(now) {
      return db(TABLE).whereNotNull('consumed_at').orWhere('expires_at', '<=', now).delete();
    },
  };
}
