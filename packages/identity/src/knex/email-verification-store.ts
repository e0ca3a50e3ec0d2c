import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type {
  EmailVerification,
  EmailVerificationStore,
  EmailVerificationUser,
  EmailVerificationWrites,
} from '../email-verification/store.js';
import { type KnexCredentialStoreOptions, lockUser } from './credential-store-deps.js';

const TABLE = 'identity_email_verifications';
const USER_COLUMNS = ['id', 'email', 'first_name', 'status', 'email_verified'] as const;

interface VerificationRow {
  id: string;
  user_id: string;
  email: string;
  token_hash: string;
  created_at: unknown;
  expires_at: unknown;
  consumed_at: unknown;
}

function userOf(row: Record<string, unknown> | undefined): EmailVerificationUser | undefined {
  if (!row) return undefined;
  return {
    id: String(row.id),
    email: String(row.email).toLowerCase(),
    firstName: String(row.first_name ?? ''),
    status: row.status === 'active' ? 'active' : 'deactivated',
    emailVerified: Boolean(row.email_verified),
  };
}

function verificationOf(row: VerificationRow): EmailVerification {
  return {
    id: row.id,
    userId: row.user_id,
    email: row.email,
    createdAt: toIso(row.created_at),
    expiresAt: toIso(row.expires_at),
    consumedAt: toIsoOrNull(row.consumed_at),
  };
}

/** The {@link EmailVerificationWrites} primitives over one transaction. */
function emailVerificationWrites(trx: Knex.Transaction): EmailVerificationWrites {
  return {
    async lockUser(userId) {
      if (!(await lockUser(trx, userId, { activeOnly: true }))) return undefined;
      return userOf(
        await trx('identity_users')
          .where({ id: userId })
          .first(...USER_COLUMNS),
      );
    },
    async hasPending(userId, now) {
      const row = await trx(TABLE)
        .where({ user_id: userId })
        .whereNull('consumed_at')
        .andWhere('expires_at', '>', now)
        .first('id');
      return row !== undefined;
    },
    async replace(verification) {
      await trx(TABLE).where({ user_id: verification.userId }).whereNull('consumed_at').delete();
      await trx(TABLE).insert({
        id: verification.id,
        user_id: verification.userId,
        email: verification.email,
        token_hash: verification.tokenHash,
        created_at: verification.createdAt,
        expires_at: verification.expiresAt,
        consumed_at: null,
      });
    },
    async consume({ verificationId, tokenHash }, now) {
      const match = { id: verificationId, token_hash: tokenHash };
      const consumed = await trx(TABLE)
        .where(match)
        .whereNull('consumed_at')
        .andWhere('expires_at', '>', now)
        .update({ consumed_at: now });
      if (consumed === 1) {
        const row = (await trx(TABLE).where({ id: verificationId }).first()) as VerificationRow;
        return { outcome: 'consumed', verification: verificationOf(row) };
      }
      const expired = await trx(TABLE).where(match).whereNull('consumed_at').andWhere('expires_at', '<=', now).delete();
      return expired > 0 ? { outcome: 'expired' } : { outcome: 'invalid' };
    },
    async markVerified(userId, email, now) {
      const user = userOf(
        await trx('identity_users')
          .where({ id: userId, status: 'active' })
          .first(...USER_COLUMNS),
      );
      if (!user || user.email !== email) return 'mismatch';
      if (user.emailVerified) return 'already';
      await trx('identity_users').where({ id: userId }).update({ email_verified: true, updated_at: now });
      return 'verified';
    },
  };
}

/**
 * The knex {@link EmailVerificationStore}.
 *
 * @example
 * const store = createKnexEmailVerificationStore({ db, outbox: bus, invalidator });
 */
export function createKnexEmailVerificationStore(options: KnexCredentialStoreOptions): EmailVerificationStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, emailVerificationWrites),
    async findUser(userId) {
      return userOf(
        await db('identity_users')
          .where({ id: userId })
          .first(...USER_COLUMNS),
      );
    },
    async findUserByEmail(email) {
      return userOf(
        await db('identity_users')
          .where({ email })
          .first(...USER_COLUMNS),
      );
    },
    async find(verificationId) {
      const row = (await db(TABLE).where({ id: verificationId }).first()) as VerificationRow | undefined;
      return row ? { ...verificationOf(row), tokenHash: row.token_hash } : undefined;
    },
    async prune(now) {
      return db(TABLE).whereNotNull('consumed_at').orWhere('expires_at', '<=', now).delete();
    },
  };
}
