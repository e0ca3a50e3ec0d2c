import {
  type CacheEviction,
  listStatement,
  runListStatement,
  runStatement,
  selectRows,
  toIso,
  toIsoOrNull,
} from '@idt/core/knex';
import type { Knex } from 'knex';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { UserSessionEvictedEvent, UserSessionRevokedEvent } from '../sessions/events.js';
import type { SessionEndReason, SessionStore, StoredSession } from '../sessions/store.js';
import { writeRevocation } from './access-store.js';
import { type KnexCredentialStoreOptions, lockUser } from './credential-store-deps.js';

const TABLE = 'identity_sessions';
const COLUMNS = ['id', 'user_id', 'created_at', 'last_activity_at', 'expires_at', 'revoked_at'] as const;
/** The user's live sessions, oldest first: the ones a new sign-in may evict (fixed, past knex's builder). */
const ACTIVE_IDS_SQL = `select id from ${TABLE} where user_id = ? and revoked_at is null and expires_at > ? order by created_at asc, id asc`;
/** Ends live sessions (the one a sign-in evicts, a sign-out, or all of a user's). */
const END_SESSIONS = listStatement(
  (ids) => `update ${TABLE} set revoked_at = ?, revoked_reason = ? where id in (${ids}) and revoked_at is null`,
  { kind: 'in' },
);
const INSERT_SQL = `insert into ${TABLE} (id, user_id, token_hash, created_at, last_activity_at, expires_at, revoked_at, revoked_reason, ip_address, user_agent, amr)
values (?, ?, ?, ?, ?, ?, null, null, ?, ?, ?)`;

interface SessionRow {
  id: string;
  user_id: string;
  created_at: unknown;
  last_activity_at: unknown;
  expires_at: unknown;
  revoked_at: unknown;
}

function fromRow(row: SessionRow): StoredSession {
  return {
    id: row.id,
    userId: row.user_id,
    createdAt: toIso(row.created_at),
    lastActivityAt: toIso(row.last_activity_at),
    expiresAt: toIso(row.expires_at),
    revokedAt: toIsoOrNull(row.revoked_at),
  };
}

/** What ending a session evicts: its revocation watermark and the session. */
function sessionEvictions(id: string): CacheEviction[] {
  return [
    { namespace: CacheNamespaces.revocations, key: `session:${id}` },
    { namespace: CacheNamespaces.sessions, key: id },
  ];
}

/**
 * The knex {@link SessionStore}. Ending a session writes, in its
 * transaction, the session's revocation watermark (every token minted under
 * its `sid` stops validating) and evictions of `identity.sessions` and of the
 * `session:<id>` watermark in `identity.revocations`.
 *
 * @example
 * const store = createKnexSessionStore({ db, outbox: bus, invalidator });
 */
export function createKnexSessionStore(options: KnexCredentialStoreOptions): SessionStore {
  const { db, outbox, invalidator } = options;

  async function endSessions(trx: Knex.Transaction, ids: readonly string[], reason: SessionEndReason, now: string) {
    await runListStatement(trx, END_SESSIONS, [now, reason], ids);
    for (const id of ids) await writeRevocation(trx, 'session', id, new Date(now), { all: true });
    await invalidator.invalidateMany(ids.flatMap(sessionEvictions), trx);
  }

  return {
    create: (session, maxActive) =>
      db.transaction(async (trx) => {
        if (!(await lockUser(trx, session.userId, { activeOnly: true }))) return undefined;
        const active = (await selectRows(trx, ACTIVE_IDS_SQL, [session.userId, session.createdAt])).map((row) => String(row[0]));
        const evicted = active.slice(0, Math.max(0, active.length - (maxActive - 1)));
        await endSessions(trx, evicted, 'evicted', session.createdAt);
        if (evicted.length > 0) {
          await outbox.write(
            trx,
            evicted.map((sessionId) => ({
              event: UserSessionEvictedEvent,
              payload: { userId: session.userId, sessionId, evictedAt: session.createdAt },
            })),
          );
        }
        await runStatement(trx, INSERT_SQL, [
          session.id,
          session.userId,
          session.tokenHash,
          session.createdAt,
          session.createdAt,
          session.expiresAt,
          session.ipAddress,
          session.userAgent,
          JSON.stringify(session.amr),
        ]);
        return { evicted };
      }),
    async findByTokenHash(tokenHash) {
      const row = (await db(TABLE)
        .where({ token_hash: tokenHash })
        .first(...COLUMNS)) as SessionRow | undefined;
      return row ? fromRow(row) : undefined;
    },
    async listActive(userId, now) {
      const rows = (await db(TABLE)
        .where({ user_id: userId })
        .whereNull('revoked_at')
        .andWhere('expires_at', '>', now)
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .select(...COLUMNS)) as SessionRow[];
      return rows.map(fromRow);
    },
    async touch(sessionId, now, staleBefore) {
      const updated = await db(TABLE)
        .where({ id: sessionId })
        .whereNull('revoked_at')
        .andWhere('last_activity_at', '<', staleBefore)
        .update({ last_activity_at: now });
      if (updated > 0) return now;
      const row = await db(TABLE).where({ id: sessionId }).whereNull('revoked_at').first('last_activity_at');
      return row ? toIso(row.last_activity_at) : undefined;
    },
    revoke: (userId, sessionId, reason, now) =>
      db.transaction(async (trx) => {
        const updated = await trx(TABLE)
          .where({ id: sessionId, user_id: userId })
          .whereNull('revoked_at')
          .update({ revoked_at: now, revoked_reason: reason });
        if (updated !== 1) return false;
        await writeRevocation(trx, 'session', sessionId, new Date(now), { all: true });
        await invalidator.invalidateMany(sessionEvictions(sessionId), trx);
        await outbox.write(trx, [{ event: UserSessionRevokedEvent, payload: { userId, sessionId, reason, revokedAt: now } }]);
        return true;
      }),
    revokeAllForUser: (userId, reason, now) =>
      db.transaction(async (trx) => {
        await lockUser(trx, userId);
        const ids: string[] = await trx(TABLE).where({ user_id: userId }).whereNull('revoked_at').pluck('id');
        await endSessions(trx, ids, reason, now);
        if (ids.length > 0) {
          await outbox.write(
            trx,
            ids.map((sessionId) => ({ event: UserSessionRevokedEvent, payload: { userId, sessionId, reason, revokedAt: now } })),
          );
        }
        return ids;
      }),
    async prune(now) {
      return db(TABLE).whereNotNull('revoked_at').orWhere('expires_at', '<=', now).delete();
    },
  };
}
