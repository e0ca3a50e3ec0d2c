import { toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { SsoIdentityRecord } from '../connections/records.js';
import { SSO_IDENTITIES_TABLE } from './migrations.js';

/** Who a subject of a connection is here: the sign-in pipeline's lookup and link. */
export interface SsoIdentityStore {
  find(connectionId: string, subject: string): Promise<SsoIdentityRecord | undefined>;
  /**
   * Links `(connectionId, subject)` to a user, in `trx` when given (the
   * transaction that creates the user). Exactly one concurrent caller for
   * the same key links; the others get `false`.
   */
  link(identity: SsoIdentityRecord, trx?: Knex.Transaction): Promise<boolean>;
  /** The identities of a user, oldest first. */
  listForUser(userId: string): Promise<SsoIdentityRecord[]>;
}

function identityFromRow(row: Record<string, unknown>): SsoIdentityRecord {
  return {
    connectionId: String(row.connection_id),
    subject: String(row.subject),
    userId: String(row.user_id),
    email: row.email === null || row.email === undefined ? null : String(row.email),
    createdAt: toIso(row.created_at),
    lastSignInAt: toIsoOrNull(row.last_sign_in_at),
  };
}

/**
 * The knex {@link SsoIdentityStore}.
 *
 * @example
 * const identities = createKnexSsoIdentityStore(db);
 * const known = await identities.find(connection.id, profile.nameId);
 */
export function createKnexSsoIdentityStore(db: Knex): SsoIdentityStore {
  return {
    async find(connectionId, subject) {
      const row = await db(SSO_IDENTITIES_TABLE).where({ connection_id: connectionId, subject }).first();
      return row ? identityFromRow(row) : undefined;
    },
    async link(identity, trx) {
      const inserted = await (trx ?? db)(SSO_IDENTITIES_TABLE)
        .insert({
          connection_id: identity.connectionId,
          subject: identity.subject,
          user_id: identity.userId,
          email: identity.email,
          created_at: identity.createdAt,
          last_sign_in_at: identity.lastSignInAt,
        })
        .onConflict(['connection_id', 'subject'])
        .ignore()
        .returning('subject');
      return inserted.length > 0;
    },
    async listForUser(userId) {
      const rows = await db(SSO_IDENTITIES_TABLE)
        .where({ user_id: userId })
        .orderBy([
          { column: 'created_at', order: 'asc' },
          { column: 'connection_id', order: 'asc' },
        ]);
      return rows.map(identityFromRow);
    },
  };
}
