import { knexUnitOfWork, listStatement, runListStatement, runStatement, selectRows, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { SessionEndReason, SessionStore, SessionWrites, StoredSession } from '../sessions/store.js';
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
const INSERT_SQL = `insert into ${TABLE} (id, user_id, token_hash, created_at, last_activity_at, expires_at, revoked_at, revoked_reason, ip_address, user_agent, amr, authenticated_at)
values (?, ?, ?, ?, ?, ?, null, null, ?, ?, ?, ?)`;

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

/** C1: the stored `amr` list (JSON text), or none when it cannot be read. */
function parseAmr(value: unknown): string[] {
  try {
    const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
    return Array.isArray(parsed) ? parsed.filter((entry): entry is string => typeof entry === 'string') : [];
  } catch {
    return [];
  }
}

/** The {@link SessionWrites} primitives over one transaction. */
function sessionWrites(trx: Knex.Transaction): SessionWrites {
  return {
    lockUser: (userId, options) => lockUser(trx, userId, options),
    async liveIds(userId, now) {
      return (await selectRows(trx, ACTIVE_IDS_SQL, [userId, now])).map((row) => String(row[0]));
    },
    unrevokedIds: (userId) => trx(TABLE).where({ user_id: userId }).whereNull('revoked_at').pluck('id'),
    async insert(session) {
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
        // C1: a session starts authenticated when it is created.
        session.createdAt,
      ]);
    },
    async end(ids: readonly string[], reason: SessionEndReason, now: string) {
      await runListStatement(trx, END_SESSIONS, [now, reason], ids);
      for (const id of ids) await writeRevocation(trx, 'session', id, new Date(now), { all: true });
    },
    async revoke(userId, sessionId, reason, now) {
      const updated = await trx(TABLE)
        .where({ id: sessionId, user_id: userId })
        .whereNull('revoked_at')
        .update({ revoked_at: now, revoked_reason: reason });
      if (updated !== 1) return false;
      await writeRevocation(trx, 'session', sessionId, new Date(now), { all: true });
      return true;
    },
    markAuthenticated: (sessionId, amr, at) => markAuthenticated(trx, sessionId, amr, at),
  };
}

/** C1: a re-authentication in a session that is not revoked; whether such a session exists. */
async function markAuthenticated(db: Knex, sessionId: string, amr: readonly string[], at: string): Promise<boolean> {
  const updated = await db(TABLE)
    .where({ id: sessionId })
    .whereNull('revoked_at')
    .update({ authenticated_at: at, amr: JSON.stringify(amr) });
  return updated > 0;
}

/**
 * The knex {@link SessionStore}. Ending a session writes, in its
 * transaction, the session's revocation watermark (every token minted under
 * its `sid` stops validating); the session service adds the events and the
 * cache evictions in the same transaction.
 *
 * @example
 * const store = createKnexSessionStore({ db, outbox: bus, invalidator });
 */
export function createKnexSessionStore(options: KnexCredentialStoreOptions): SessionStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, sessionWrites),
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
    async prune(now) {
      return db(TABLE).whereNotNull('revoked_at').orWhere('expires_at', '<=', now).delete();
    },
    // C1: recent authentication
    async authentication(sessionId, now) {
      const row = await db(TABLE)
        .where({ id: sessionId })
        .whereNull('revoked_at')
        .andWhere('expires_at', '>', now)
        .first('user_id', 'created_at', 'authenticated_at', 'amr');
      if (!row) return undefined;
      return {
        userId: String(row.user_id),
        authenticatedAt: toIso(row.authenticated_at ?? row.created_at),
        amr: parseAmr(row.amr),
      };
    },
    markAuthenticated: (sessionId, amr, at) => markAuthenticated(db, sessionId, amr, at),
  };
}
