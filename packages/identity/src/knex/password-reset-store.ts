import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { PasswordAccount, PasswordReset, PasswordResetStore, PasswordResetWrites } from '../password-reset/store.js';
import { writeRevocation } from './access-store.js';
import { type KnexCredentialStoreOptions, lockUser } from './credential-store-deps.js';

const TABLE = 'identity_password_resets';
const SESSIONS = 'identity_sessions';
const USER_COLUMNS = ['id', 'email', 'first_name', 'last_name', 'status', 'password_hash'] as const;

interface ResetRow {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: unknown;
  expires_at: unknown;
  consumed_at: unknown;
}

function accountOf(row: Record<string, unknown> | undefined): PasswordAccount | undefined {
  if (!row) return undefined;
  return {
    id: String(row.id),
    email: String(row.email),
    firstName: String(row.first_name ?? ''),
    lastName: String(row.last_name ?? ''),
    status: row.status === 'active' ? 'active' : 'deactivated',
    passwordHash: typeof row.password_hash === 'string' && row.password_hash !== '' ? row.password_hash : null,
  };
}

/** The {@link PasswordResetWrites} primitives over one transaction. */
function passwordResetWrites(trx: Knex.Transaction): PasswordResetWrites {
  return {
    lockUser: (userId, options) => lockUser(trx, userId, options),
    async replace(reset) {
      await trx(TABLE).where({ user_id: reset.userId }).whereNull('consumed_at').delete();
      await trx(TABLE).insert({
        id: reset.id,
        user_id: reset.userId,
        token_hash: reset.tokenHash,
        created_at: reset.createdAt,
        expires_at: reset.expiresAt,
        consumed_at: null,
      });
    },
    async consume({ resetId, tokenHash }, now) {
      const match = { id: resetId, token_hash: tokenHash };
      const consumed = await trx(TABLE)
        .where(match)
        .whereNull('consumed_at')
        .andWhere('expires_at', '>', now)
        .update({ consumed_at: now });
      if (consumed === 1) return 'consumed';
      const expired = await trx(TABLE).where(match).whereNull('consumed_at').andWhere('expires_at', '<=', now).delete();
      return expired > 0 ? 'expired' : 'invalid';
    },
    async retire(userId) {
      await trx(TABLE).where({ user_id: userId }).whereNull('consumed_at').delete();
    },
    async setPasswordHash(userId, passwordHash, now, options = {}) {
      const query = trx('identity_users').where({ id: userId, status: 'active' });
      if (options.expected !== undefined) query.andWhere({ password_hash: options.expected });
      const changes = options.emailVerified ? { email_verified: true } : {};
      return (await query.update({ password_hash: passwordHash, updated_at: now, ...changes })) === 1;
    },
    async endSessions(userId, reason, now, except) {
      const query = trx(SESSIONS).where({ user_id: userId }).whereNull('revoked_at');
      if (except) query.whereNot({ id: except });
      const ids = (await query.pluck('id')) as string[];
      if (ids.length === 0) return [];
      await trx(SESSIONS).whereIn('id', ids).whereNull('revoked_at').update({ revoked_at: now, revoked_reason: reason });
      for (const id of ids) await writeRevocation(trx, 'session', id, new Date(now), { all: true });
      return ids;
    },
    async revokeUserTokens(userId, now) {
      await writeRevocation(trx, 'user', userId, new Date(now));
    },
  };
}

/**
 * The knex {@link PasswordResetStore} over `identity_password_resets`
 * (migration 0008) and the users and sessions tables.
 *
 * @example
 * const store = createKnexPasswordResetStore({ db, outbox: bus, invalidator });
 */
export function createKnexPasswordResetStore(options: KnexCredentialStoreOptions): PasswordResetStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, passwordResetWrites),
    async findActiveUserByEmail(email) {
      return accountOf(
        await db('identity_users')
          .where({ email, status: 'active' })
          .first(...USER_COLUMNS),
      );
    },
    async findUser(userId) {
      return accountOf(
        await db('identity_users')
          .where({ id: userId })
          .first(...USER_COLUMNS),
      );
    },
    async find(resetId) {
      const row = (await db(TABLE).where({ id: resetId }).first()) as ResetRow | undefined;
      if (!row) return undefined;
      const reset: PasswordReset = {
        id: row.id,
        userId: row.user_id,
        tokenHash: row.token_hash,
        createdAt: toIso(row.created_at),
        expiresAt: toIso(row.expires_at),
        consumedAt: toIsoOrNull(row.consumed_at),
      };
      return reset;
    },
    async prune(now) {
      return db(TABLE).whereNotNull('consumed_at').orWhere('expires_at', '<=', now).delete();
    },
  };
}
