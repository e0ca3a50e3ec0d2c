import { type Clock, sha256Hex, systemClock } from '@idt/core';
import { rawRows, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { OutcomeStore, PendingSignIn, SignInProtocol, SignInTransactionStore, StoredOutcome } from '../sign-in/store.js';
import { SSO_SIGN_IN_OUTCOMES_TABLE, SSO_SIGN_IN_TRANSACTIONS_TABLE } from './migrations.js';

/** Options of the knex sign-in stores. */
export interface KnexSignInStoreOptions {
  readonly db: Knex;
  readonly clock?: Clock;
}

/** The row of an outcome, for an insert in any transaction. */
export function outcomeRow(handle: string, outcome: StoredOutcome) {
  return {
    key: sha256Hex(handle),
    kind: outcome.kind,
    interaction_uid: outcome.interactionUid,
    data: JSON.stringify(outcome.data),
    expires_at: outcome.expiresAt.toISOString(),
  };
}

/**
 * The knex {@link SignInTransactionStore} (`sso_sign_in_transactions`).
 * `take` is one `DELETE … WHERE key = ? AND expires_at > ? RETURNING`.
 *
 * @example
 * const transactions = createKnexSignInTransactionStore({ db, clock });
 */
export function createKnexSignInTransactionStore(options: KnexSignInStoreOptions): SignInTransactionStore {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  return {
    async save(key, pending) {
      await db(SSO_SIGN_IN_TRANSACTIONS_TABLE).insert({
        key: sha256Hex(key),
        connection_id: pending.connectionId,
        protocol: pending.protocol,
        interaction_uid: pending.interactionUid,
        return_path: pending.returnPath,
        data: JSON.stringify(pending.data),
        expires_at: pending.expiresAt.toISOString(),
      });
    },
    async take(key) {
      // Raw, since knex drops RETURNING from a SQLite delete; both engines run this statement.
      const rows = rawRows<Record<string, unknown>>(
        await db.raw(
          `DELETE FROM ${SSO_SIGN_IN_TRANSACTIONS_TABLE} WHERE key = ? AND expires_at > ? RETURNING connection_id, protocol, interaction_uid, return_path, data, expires_at`,
          [sha256Hex(key), clock.now().toISOString()],
        ),
      );
      const row = rows[0];
      if (!row) return undefined;
      const pending: PendingSignIn = {
        connectionId: String(row.connection_id),
        protocol: String(row.protocol) as SignInProtocol,
        interactionUid: String(row.interaction_uid),
        returnPath: String(row.return_path),
        data: JSON.parse(String(row.data)) as Record<string, unknown>,
        expiresAt: new Date(toIso(row.expires_at)),
      };
      return pending;
    },
  };
}

/**
 * The knex {@link OutcomeStore} (`sso_sign_in_outcomes`). `take` is one
 * `DELETE … RETURNING` filtered by kind, interaction and expiry.
 *
 * @example
 * const outcomes = createKnexOutcomeStore({ db, clock });
 */
export function createKnexOutcomeStore(options: KnexSignInStoreOptions): OutcomeStore {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  return {
    async save(handle, outcome) {
      await db(SSO_SIGN_IN_OUTCOMES_TABLE).insert(outcomeRow(handle, outcome));
    },
    async take(handle, kind, interactionUid) {
      const bound = interactionUid === null ? 'interaction_uid IS NULL' : 'interaction_uid = ?';
      const rows = rawRows<Record<string, unknown>>(
        await db.raw(
          `DELETE FROM ${SSO_SIGN_IN_OUTCOMES_TABLE} WHERE key = ? AND kind = ? AND ${bound} AND expires_at > ? RETURNING kind, interaction_uid, data, expires_at`,
          [sha256Hex(handle), kind, ...(interactionUid === null ? [] : [interactionUid]), clock.now().toISOString()],
        ),
      );
      const row = rows[0];
      if (!row) return undefined;
      const stored: StoredOutcome = {
        kind: String(row.kind) as StoredOutcome['kind'],
        interactionUid: row.interaction_uid === null || row.interaction_uid === undefined ? null : String(row.interaction_uid),
        data: JSON.parse(String(row.data)) as Record<string, unknown>,
        expiresAt: new Date(toIso(row.expires_at)),
      };
      return stored;
    },
  };
}

/** Deletes expired sign-in transactions and outcomes; returns how many rows went. */
export async function pruneSignIns(db: Knex, now: Date): Promise<number> {
  const at = now.toISOString();
  const transactions = await db(SSO_SIGN_IN_TRANSACTIONS_TABLE).where('expires_at', '<=', at).delete();
  const outcomes = await db(SSO_SIGN_IN_OUTCOMES_TABLE).where('expires_at', '<=', at).delete();
  return transactions + outcomes;
}
