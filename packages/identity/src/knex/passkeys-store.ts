import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { PasskeyChallenge, PasskeyStore, PasskeyUser, PasskeyWrites, StoredPasskey } from '../passkeys/store.js';
import { type KnexCredentialStoreOptions, lockUser } from './credential-store-deps.js';

const PASSKEYS = 'identity_passkeys';
const CHALLENGES = 'identity_passkey_challenges';

interface PasskeyRow {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: string;
  counter: number | string;
  transports: string;
  device_type: string;
  backed_up: boolean | number;
  aaguid: string;
  name: string;
  created_at: unknown;
  last_used_at: unknown;
}

interface ChallengeRow {
  id: string;
  binding: string;
  purpose: string;
  user_id: string | null;
  challenge_hash: string;
  created_at: unknown;
  expires_at: unknown;
}

function passkeyOf(row: PasskeyRow): StoredPasskey {
  return {
    id: row.id,
    userId: row.user_id,
    credentialId: row.credential_id,
    publicKey: row.public_key,
    counter: Number(row.counter),
    transports: row.transports ? row.transports.split(',') : [],
    deviceType: row.device_type === 'multiDevice' ? 'multiDevice' : 'singleDevice',
    backedUp: Boolean(row.backed_up),
    aaguid: row.aaguid,
    name: row.name,
    createdAt: toIso(row.created_at),
    lastUsedAt: toIsoOrNull(row.last_used_at),
  };
}

function challengeOf(row: ChallengeRow): PasskeyChallenge {
  return {
    id: row.id,
    binding: row.binding,
    purpose: row.purpose === 'registration' ? 'registration' : 'authentication',
    userId: row.user_id,
    challengeHash: row.challenge_hash,
    createdAt: toIso(row.created_at),
    expiresAt: toIso(row.expires_at),
  };
}

async function countOf(db: Knex | Knex.Transaction, userId: string): Promise<number> {
  const row = (await db(PASSKEYS).where({ user_id: userId }).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return Number(row?.n ?? 0);
}

/** The {@link PasskeyWrites} primitives over one transaction. */
function passkeyWrites(trx: Knex.Transaction): PasskeyWrites {
  return {
    lockActiveUser: (userId) => lockUser(trx, userId, { activeOnly: true }),
    count: (userId) => countOf(trx, userId),
    async insert(passkey) {
      // Checked under the user's lock; the unique index settles a race between two users.
      if (await trx(PASSKEYS).where({ credential_id: passkey.credentialId }).first('id')) return false;
      await trx(PASSKEYS).insert({
        id: passkey.id,
        user_id: passkey.userId,
        credential_id: passkey.credentialId,
        public_key: passkey.publicKey,
        counter: passkey.counter,
        transports: passkey.transports.join(','),
        device_type: passkey.deviceType,
        backed_up: passkey.backedUp,
        aaguid: passkey.aaguid,
        name: passkey.name,
        created_at: passkey.createdAt,
        last_used_at: passkey.lastUsedAt,
      });
      return true;
    },
    async rename(userId, passkeyId, name) {
      return (await trx(PASSKEYS).where({ id: passkeyId, user_id: userId }).update({ name })) === 1;
    },
    async remove(userId, passkeyId) {
      return (await trx(PASSKEYS).where({ id: passkeyId, user_id: userId }).delete()) === 1;
    },
    async removeAll(userId) {
      const ids = (await trx(PASSKEYS).where({ user_id: userId }).pluck('id')) as string[];
      if (ids.length > 0) await trx(PASSKEYS).whereIn('id', ids).delete();
      return ids;
    },
    async recordUse(passkeyId, expectedCounter, use) {
      const updated = await trx(PASSKEYS)
        .where({ id: passkeyId, counter: expectedCounter })
        .update({ counter: use.counter, backed_up: use.backedUp, device_type: use.deviceType, last_used_at: use.at });
      return updated === 1;
    },
  };
}

/**
 * The knex {@link PasskeyStore} over `identity_passkeys` and
 * `identity_passkey_challenges` (migration 0011).
 *
 * @example
 * const store = createKnexPasskeyStore({ db, outbox: bus, invalidator });
 */
export function createKnexPasskeyStore(options: KnexCredentialStoreOptions): PasskeyStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, passkeyWrites),
    async findUser(userId) {
      const row = await db('identity_users').where({ id: userId }).first('id', 'email', 'first_name', 'last_name', 'status');
      if (!row) return undefined;
      const user: PasskeyUser = {
        id: String(row.id),
        email: String(row.email),
        firstName: String(row.first_name ?? ''),
        lastName: String(row.last_name ?? ''),
        status: row.status === 'active' ? 'active' : 'deactivated',
      };
      return user;
    },
    async list(userId) {
      const rows = (await db(PASSKEYS)
        .where({ user_id: userId })
        .orderBy([{ column: 'created_at' }, { column: 'id' }])) as PasskeyRow[];
      return rows.map(passkeyOf);
    },
    count: (userId) => countOf(db, userId),
    async findByCredentialId(credentialId) {
      const row = (await db(PASSKEYS).where({ credential_id: credentialId }).first()) as PasskeyRow | undefined;
      return row && passkeyOf(row);
    },
    async replaceChallenge(challenge) {
      await db.transaction(async (trx) => {
        await trx(CHALLENGES).where({ binding: challenge.binding, purpose: challenge.purpose }).delete();
        await trx(CHALLENGES).insert({
          id: challenge.id,
          binding: challenge.binding,
          purpose: challenge.purpose,
          user_id: challenge.userId,
          challenge_hash: challenge.challengeHash,
          created_at: challenge.createdAt,
          expires_at: challenge.expiresAt,
        });
      });
    },
    async consumeChallenge(binding, purpose) {
      const row = (await db(CHALLENGES)
        .where({ binding, purpose })
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .first()) as ChallengeRow | undefined;
      if (!row) return undefined;
      // The delete decides: of two concurrent uses, one deletes the row and the other finds none.
      if ((await db(CHALLENGES).where({ id: row.id }).delete()) !== 1) return undefined;
      await db(CHALLENGES).where({ binding, purpose }).delete();
      return challengeOf(row);
    },
    async prune(now) {
      return db(CHALLENGES).where('expires_at', '<=', now).delete();
    },
  };
}
