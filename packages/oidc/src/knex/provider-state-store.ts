import type { EventOutbox, PendingEvent } from '@idt/core';
import { type CacheInvalidator, listStatement, runListStatement, selectRows } from '@idt/core/knex';
import { CacheNamespaces } from '@idt/identity';
import { REVOKE_ALL, writeRevocation } from '@idt/identity/knex';
import type { Knex } from 'knex';

/** A single sign-on session of the provider, as ending it needs it. */
export interface ProviderSession {
  /** The row id of the provider session. */
  readonly id: string;
  readonly userId: string | null;
  /** The identity session id (the `sid` of its tokens). */
  readonly sessionId: string | null;
  /** The clients that took part, and their grants. */
  readonly clientIds: readonly string[];
  readonly grantIds: readonly string[];
}

/** What ending sessions and token families writes, in one transaction. */
export interface EndedState {
  /** Provider sessions to delete. */
  readonly sessions: readonly ProviderSession[];
  /** Token families to end: every stored row of the grant, and its access tokens. */
  readonly grantIds: readonly string[];
  /** Events to publish with the change. */
  readonly events: readonly PendingEvent[];
}

/**
 * Persistence of the provider's sessions and token families beyond the
 * adapter: reads, and one atomic write per change. No policy: what to end,
 * and why, is decided by the callers.
 */
export interface ProviderStateStore {
  /** The provider sessions of an identity session, of a user, or of both. */
  findSessions(filter: { readonly sessionId?: string; readonly userId?: string }): Promise<ProviderSession[]>;
  /** The grants of a user, with one client only when `clientId` is given. */
  grantIdsOf(userId: string, clientId?: string): Promise<string[]>;
  /**
   * In one transaction: deletes the sessions, deletes every stored row of the
   * grants, refuses the grants' access tokens from `at` on (a `grant`
   * watermark, evicted from every instance's cache), and writes the events.
   */
  end(state: EndedState, at: Date): Promise<void>;
  /**
   * Refuses every access token of a grant from `at` on (oidc-provider
   * deletes the grant's stored rows itself).
   */
  refuseAccessTokens(grantId: string, at: Date): Promise<void>;
  /** Forgets family watermarks written before `before`; returns how many. */
  pruneFamilies(before: Date): Promise<number>;
  /** Deletes grant contexts expired by `now`; returns how many. */
  pruneGrantContexts(now: Date): Promise<number>;
}

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

async function refuse(trx: Knex.Transaction, invalidator: CacheInvalidator, grantId: string, at: Date) {
  await writeRevocation(trx, 'grant', grantId, at, { all: true });
  await invalidator.invalidate(CacheNamespaces.revocations, `grant:${grantId}`, trx);
}

/** The knex {@link ProviderStateStore} over `oidc_payloads` and identity's revocation watermarks. */
export function createKnexProviderStateStore(db: Knex, invalidator: CacheInvalidator, outbox: EventOutbox): ProviderStateStore {
  return {
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
    async end(state, at) {
      const grantIds = [...new Set(state.grantIds)];
      await db.transaction(async (trx) => {
        await runListStatement(
          trx,
          DELETE_SESSIONS,
          [],
          state.sessions.map((session) => session.id),
        );
        await runListStatement(trx, DELETE_GRANT_ROWS, [], grantIds);
        for (const grantId of grantIds) await refuse(trx, invalidator, grantId, at);
        if (state.events.length) await outbox.write(trx, state.events);
      });
    },
    async refuseAccessTokens(grantId, at) {
      await db.transaction((trx) => refuse(trx, invalidator, grantId, at));
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
