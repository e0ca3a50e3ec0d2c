import { isUniqueViolation } from '@idt/core';
import { toIso, toIsoOrNull } from '@idt/core/knex';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { UserEmailChangedEvent, UserEmailChangeRequestedEvent } from '../email-change/events.js';
import type { EmailChange, EmailChangeConfirmation, EmailChangeStore } from '../email-change/store.js';
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

/** Thrown inside a transaction to roll it back with a known outcome. */
class Rollback extends Error {
  constructor(readonly result: EmailChangeConfirmation) {
    super('rollback');
  }
}

/**
 * The knex {@link EmailChangeStore}.
 *
 * @example
 * const store = createKnexEmailChangeStore({ db, outbox: bus, invalidator });
 */
export function createKnexEmailChangeStore(options: KnexCredentialStoreOptions): EmailChangeStore {
  const { db, outbox, invalidator } = options;
  return {
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
    request: (change) =>
      db.transaction(async (trx) => {
        if (!(await lockUser(trx, change.userId, { activeOnly: true }))) return false;
        await trx(TABLE).where({ user_id: change.userId }).delete();
        await trx(TABLE).insert({
          id: change.id,
          user_id: change.userId,
          new_email: change.newEmail,
          created_at: change.createdAt,
          expires_at: change.expiresAt,
          consumed_at: null,
        });
        await outbox.write(trx, [
          {
            event: UserEmailChangeRequestedEvent,
            payload: { userId: change.userId, changeId: change.id, newEmail: change.newEmail, expiresAt: change.expiresAt },
          },
        ]);
        return true;
      }),
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
    async confirm({ changeId, userId, newEmail }, now) {
      const match = { id: changeId, user_id: userId, new_email: newEmail };
      try {
        return await db.transaction(async (trx): Promise<EmailChangeConfirmation> => {
          const consumed = await trx(TABLE)
            .where(match)
            .whereNull('consumed_at')
            .andWhere('expires_at', '>', now)
            .update({ consumed_at: now });
          if (consumed !== 1) {
            const expired = await trx(TABLE).where(match).whereNull('consumed_at').andWhere('expires_at', '<=', now).delete();
            return expired > 0 ? { outcome: 'expired' } : { outcome: 'invalid' };
          }
          const user = await trx('identity_users').where({ id: userId, status: 'active' }).first('email');
          if (!user) throw new Rollback({ outcome: 'invalid' });
          await trx('identity_users')
            .where({ id: userId })
            .update({ email: newEmail, username: newEmail, email_verified: true, updated_at: now });
          await outbox.write(trx, [{ event: UserEmailChangedEvent, payload: { userId, oldEmail: user.email, newEmail } }]);
          await invalidator.invalidate(CacheNamespaces.users, userId, trx);
          return { outcome: 'changed', oldEmail: user.email };
        });
      } catch (error) {
        if (error instanceof Rollback) return error.result;
        if (isUniqueViolation(error)) return { outcome: 'invalid' };
        throw error;
      }
    },
    async prune(now) {
      return db(TABLE).whereNotNull('consumed_at').orWhere('expires_at', '<=', now).delete();
    },
  };
}
