import { type KnexEffectsOptions, knexUnitOfWork, listStatement, runListStatement, selectRows } from '@idt/core/knex';
import { REVOKE_ALL, writeRevocation } from '@idt/identity/knex';
import type { Knex } from 'knex';
import type { ProviderStateStore, ProviderStateWrites } from '../provider/store.js';

export type { ProviderSession, ProviderStateStore, ProviderStateWrites } from '../provider/store.js';

/** The provider sessions of an identity session, of a user, or of both, written once (see `selectRows`). */
const FIND_SESSIONS_SQL = {
  ofSession: "select id, payload, session_id, account_id from oidc_payloads where model = 'Session' and session_id = ?",
  ofUser: "select id, payload, session_id, account_id from oidc_payloads where model = 'Session' and account_id = ?",
  ofSessionAndUser:
    "select id, payload, session_id, account_id from oidc_payloads where model = 'Session' and session_id = ? and account_id = ?",
} as const;
const DELETE_SESSIONS = listStatement((ids) => `delete from oidc_payloads where model = 'Session' and id in (${ids})`, {
  kind: 'in',
});
const DELETE_GRANT_ROWS = listStatement((ids) => `delete from oidc_payloads where grant_id in (${ids})`, { kind: 'in' });

/** The {@link ProviderStateWrites} primitives over one transaction. */
function providerStateWrites(trx: Knex.Transaction): ProviderStateWrites {
  return {
    deleteSessions: (ids) => runListStatement(trx, DELETE_SESSIONS, [], ids),
    deleteGrantRows: (grantIds) => runListStatement(trx, DELETE_GRANT_ROWS, [], grantIds),
    async refuseGrants(grantIds, at) {
      for (const grantId of grantIds) await writeRevocation(trx, 'grant', grantId, at, { all: true });
    },
  };
}

/**
 * The knex {@link ProviderStateStore} over `oidc_payloads` and identity's
 * revocation watermarks. Its transactions publish through `outbox` and
 * evict through `invalidator`, as their callers decide.
 */
export function createKnexProviderStateStore(options: KnexEffectsOptions): ProviderStateStore {
  const { db } = options;
  const { transaction } = knexUnitOfWork(options, providerStateWrites);
  return {
    transaction,
    async findSessions(filter) {
      const bindings = [filter.sessionId, filter.userId].filter((value): value is string => Boolean(value));
      if (!bindings.length) return [];
      const sql = filter.sessionId
        ? filter.userId
          ? FIND_SESSIONS_SQL.ofSessionAndUser
          : FIND_SESSIONS_SQL.ofSession
        : FIND_SESSIONS_SQL.ofUser;
      return (await selectRows(db, sql, bindings)).map(([id, stored, sessionId, accountId]) => {
        const payload = JSON.parse(String(stored)) as {
          accountId?: string;
          authorizations?: Record<string, { grantId?: string; sid?: string }>;
        };
        const authorizations = Object.entries(payload.authorizations ?? {});
        return {
          id: String(id),
          userId: payload.accountId ?? (accountId === null ? null : String(accountId)),
          sessionId:
            (sessionId === null ? null : String(sessionId)) ?? authorizations.find(([, entry]) => entry?.sid)?.[1].sid ?? null,
          clientIds: authorizations.map(([clientId]) => clientId),
          grantIds: authorizations.map(([, entry]) => entry?.grantId).filter((id): id is string => typeof id === 'string'),
        };
      });
    },
    async grantIdsOf(userId, clientId) {
      const query = db('oidc_payloads').where({ account_id: userId }).whereNotNull('grant_id');
      if (clientId !== undefined) query.andWhere({ client_id: clientId });
      return (await query.distinct('grant_id').pluck('grant_id')) as string[];
    },
    pruneFamilies(before) {
      return db('identity_token_revocations')
        .where({ subject_type: 'grant', not_before: REVOKE_ALL })
        .andWhere('created_at', '<', before.toISOString())
        .delete();
    },
    pruneGrantContexts(now) {
      return db('oidc_grant_contexts').where('expires_at', '<=', now.toISOString()).delete();
    },
  };
}
