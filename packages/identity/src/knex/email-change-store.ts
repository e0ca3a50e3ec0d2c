import { isUniqueViolation } from '@idt/core';
import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { EmailChange, EmailChangeStore, EmailChangeWrites } from '../email-change/store.js';
import { type KnexCredentialStoreOptions, lockUser } from './credential-store-deps.js';

const TABLE = 'identity_email_changes';

interface ChangeRow {
  id: string;
  user_id: string;
  new_email: string;
  created_at: unknown;
  expires_at: unknown;
  consumed_at: unknown;
}

/** The {@link EmailChangeWrites} primitives over one transaction. */
function emailChangeWrites(trx: Knex.Transaction): EmailChangeWrites {
  return {
    lockUser: (userId, options) => lockUser(trx, userId, options),
    async replace(change) {
      await trx(TABLE).where({ user_id: change.userId }).delete();
      await trx(TABLE).insert({
        id: change.id,
        user_id: change.userId,
        new_email: change.newEmail,
        created_at: change.createdAt,
        expires_at: change.expiresAt,
        consumed_at: null,
      });
    },
    async consume({ changeId, userId, newEmail }, now) {
      const match = { id: changeId, user_id: userId, new_email: newEmail };
      const consumed = await trx(TABLE)
        .where(match)
        .whereNull('consumed_at')
        .andWhere('expires_at', '>', now)
        .update({ consumed_at: now });
      if (consumed === 1) return 'consumed';
      const expired = await trx(TABLE).where(match).whereNull('consumed_at').andWhere('expires_at', '<=', now).delete();
      return expired > 0 ? 'expired' : 'invalid';
    },
    async setAddress(userId, newEmail, now) {
      const user = await trx('identity_users').where({ id: userId, status: 'active' }).first('email');
      if (!user) return { outcome: 'inactive' };
      try {
        await trx('identity_users')
          .where({ id: userId })
          .update({ email: newEmail, username: newEmail, email_verified: true, updated_at: now });
      } catch (error) {
        if (isUniqueViolation(error)) return { outcome: 'taken' };
        throw error;
      }
      return { outcome: 'changed', oldEmail: String(user.email) };
    },
  };
}

/**
 * The knex {@link EmailChangeStore}.
 *
 * @example
 * const store = createKnexEmailChangeStore({ db, outbox: bus, invalidator });
 */
export function createKnexEmailChangeStore(options: KnexCredentialStoreOptions): EmailChangeStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, emailChangeWrites),
    async findUser(userId) {
      const row = await db('identity_users').where({ id: userId }).first('id', 'email', 'first_name', 'status');
      if (!row) return undefined;
      return {
        id: row.id,
        email: row.email,
        firstName: row.first_name,
        status: row.status === 'active' ? 'active' : 'deactivated',
      };
    },
    async isAddressTaken(email, exceptUserId) {
      const row = await db('identity_users')
        .whereNot({ id: exceptUserId })
        .andWhere((query) => query.whereRaw('lower(email) = ?', [email]).orWhereRaw('lower(username) = ?', [email]))
        .first('id');
      return row !== undefined;
    },
    async find(changeId) {
      const row = (await db(TABLE).where({ id: changeId }).first()) as ChangeRow | undefined;
      if (!row) return undefined;
      const change: EmailChange = {
        id: row.id,
        userId: row.user_id,
        newEmail: row.new_email,
        createdAt: toIso(row.created_at),
        expiresAt: toIso(row.expires_at),
        consumedAt: toIsoOrNull(row.consumed_at),
      };
      return change;
    },
    async prune(now) {
      return db(TABLE).whereNotNull('consumed_at').orWhere('expires_at', '<=', now).delete();
    },
  };
}
