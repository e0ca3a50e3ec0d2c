import {
  type AuditEntry,
  type Clock,
  createThrottle,
  type Logger,
  newId,
  randomToken,
  sha256Hex,
  silentLogger,
  systemClock,
} from '@idt/core';
import { UnauthorizedError } from '@idt/problem';
import type { SessionAccess, SessionLookup } from '../access/store.js';
import { AccountAuditActions, type AccountAuditContext, auditActorFor, auditRequestFacts } from '../audit/account-actions.js';
import { formatClearedSessionCookie, formatSessionCookie } from './cookie.js';
import { UserSessionEvictedEvent, UserSessionRevokedEvent } from './events.js';
import { sessionEvictions, sessionsToEvict } from './policy.js';
import type { SessionAuthentication, SessionEndReason, SessionStore, StoredSession } from './store.js';

/** A session as the API shows it (SPEC 2.4). */
export interface SessionRecord {
  readonly id: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC. */
  readonly lastActivityAt: string;
  /** ISO 8601 UTC. */
  readonly expiresAt: string;
}

/** Where a sign-in came from, recorded on the session. */
export interface StartSessionOptions {
  readonly ip?: string;
  readonly userAgent?: string;
  /** Authentication methods, e.g. `['pwd']`, `['otp']`. */
  readonly amr?: readonly string[];
  /**
   * Audit entries to record in the session's own transaction (the sign-in
   * that started it, say), given the new session's id: they exist exactly
   * when the session does.
   */
  readonly audit?: (sessionId: string) => readonly AuditEntry[];
}

/** A started session and the cookie value that names it (shown once, stored only hashed). */
export interface StartedSession {
  readonly session: SessionRecord;
  readonly cookieValue: string;
  /** Sessions of the user revoked to make room (oldest first). */
  readonly evicted: readonly string[];
}

/** Options of {@link createSessionService}. */
export interface SessionServiceOptions {
  readonly store: SessionStore;
  /** The name of the sign-in session cookie. */
  readonly cookieName: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Session lifetime in milliseconds; 24 hours by default (SPEC 8.2). */
  readonly lifetimeMs?: number;
  /** Concurrent active sessions per user; 5 by default (SPEC 8.2). */
  readonly maxActive?: number;
  /** Least time between two activity updates of a session; 60 seconds by default. */
  readonly activityIntervalMs?: number;
}

/**
 * Sign-in sessions (SPEC 3.2): started by the sign-in pages and by
 * passwordless verification, carried by the session cookie, listed and
 * revoked by their owner. Also the {@link SessionLookup} of the credential
 * resolver.
 */
export interface SessionService extends SessionLookup {
  /** The name of the session cookie. */
  readonly cookieName: string;
  /**
   * Starts a session for an active user. When the user already has
   * `maxActive` active sessions, the oldest are revoked (and a
   * `UserSessionEvictedEvent` published and `identity.session.evicted`
   * recorded for each) in the same transaction.
   *
   * @throws UnauthorizedError when the user is missing or deactivated.
   */
  start(userId: string, options?: StartSessionOptions): Promise<StartedSession>;
  /** Records activity, at most once per interval per session; never throws (failures are logged). */
  touch(sessionId: string): void;
  /** The user's active sessions, newest first. */
  list(userId: string): Promise<SessionRecord[]>;
  /**
   * Revokes one of the user's sessions and every token minted under its `sid`.
   * A revocation by its user (`reason` `revoked`: the account API or the
   * account page) records `identity.session.revoked` in the same
   * transaction; a sign-out (`logout`) records nothing.
   *
   * @param context who asked and from where, for the audit record (the user by default).
   * @returns `false` when the user has no unrevoked session with this id.
   */
  revoke(userId: string, sessionId: string, reason?: SessionEndReason, context?: AccountAuditContext): Promise<boolean>;
  /** Revokes every session of a user; returns how many. */
  revokeAllForUser(userId: string): Promise<number>;
  /** Deletes revoked and expired sessions; returns how many. */
  prune(): Promise<number>;
  /** The session a cookie value names (in any state), or `undefined`. */
  findByCookie(cookieValue: string): Promise<SessionAccess | undefined>;
  /** The session a cookie value names while it is neither revoked nor expired, else `undefined`. */
  findLiveByCookie(cookieValue: string): Promise<SessionAccess | undefined>;
  /** The `Set-Cookie` value carrying a session cookie until `expiresAt`. */
  sessionCookieHeader(value: string, expiresAt: string): string;
  /** The `Set-Cookie` value that clears the session cookie (sign-out). */
  clearSessionCookieHeader(): string;
  // C1: recent authentication
  /**
   * Records that the user authenticated again inside an existing session
   * (the sign-in pages call it on a re-authentication): its `amr` and time.
   * With `audit` entries, they are recorded in the same transaction, and
   * only when the session was marked.
   *
   * @returns `false` when the session is missing or revoked.
   */
  markAuthenticated(sessionId: string, amr: readonly string[], at: Date, audit?: readonly AuditEntry[]): Promise<boolean>;
  /** When the user last authenticated in a live session (sign-in or re-authentication), or `undefined`. */
  authentication(sessionId: string): Promise<SessionAuthentication | undefined>;
}

const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;

function toRecord(session: StoredSession): SessionRecord {
  return {
    id: session.id,
    createdAt: session.createdAt,
    lastActivityAt: session.lastActivityAt,
    expiresAt: session.expiresAt,
  };
}

/**
 * Creates the session service.
 *
 * @example
 * const sessions = createSessionService({ store: createKnexSessionStore({ db, outbox, invalidator }), cookieName: 'idt_session' });
 * const { session, cookieValue } = await sessions.start(userId, { ip, userAgent, amr: ['otp'] });
 * return json({ sessionId: session.id }, { headers: { 'set-cookie': sessions.sessionCookieHeader(cookieValue, session.expiresAt) } });
 */
export function createSessionService(options: SessionServiceOptions): SessionService {
  const { store, cookieName } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const lifetimeMs = options.lifetimeMs ?? 86_400_000;
  const maxActive = options.maxActive ?? 5;
  const activityIntervalMs = options.activityIntervalMs ?? 60_000;
  const touches = createThrottle(activityIntervalMs, clock);

  async function findByCookie(cookieValue: string): Promise<SessionAccess | undefined> {
    if (!COOKIE_VALUE.test(cookieValue)) return undefined;
    const session = await store.findByTokenHash(sha256Hex(cookieValue));
    if (!session) return undefined;
    return { id: session.id, userId: session.userId, expiresAt: session.expiresAt, revokedAt: session.revokedAt };
  }

  return {
    cookieName,
    async start(userId, startOptions = {}) {
      const now = clock.now();
      const cookieValue = randomToken(32);
      const session = {
        id: newId(),
        userId,
        tokenHash: sha256Hex(cookieValue),
        createdAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + lifetimeMs).toISOString(),
        ipAddress: startOptions.ip?.slice(0, 64) ?? null,
        userAgent: startOptions.userAgent?.slice(0, 512) ?? null,
        amr: [...(startOptions.amr ?? [])],
      };
      // One transaction: the user's lock serializes concurrent sign-ins of one user, so the cap holds.
      const outcome = await store.transaction(async (tx) => {
        if (!(await tx.lockUser(userId, { activeOnly: true }))) return undefined;
        const evicted = sessionsToEvict(await tx.liveIds(userId, session.createdAt), maxActive);
        await tx.end(evicted, 'evicted', session.createdAt);
        await tx.evict(evicted.flatMap(sessionEvictions));
        await tx.publish(
          evicted.map((sessionId) => ({
            event: UserSessionEvictedEvent,
            payload: { userId, sessionId, evictedAt: session.createdAt },
          })),
        );
        await tx.insert(session);
        // Last, in one statement set: a chain head is locked (Postgres) only from here to the commit.
        await tx.audit?.([
          ...evicted.map((sessionId) => ({
            action: AccountAuditActions.sessionEvicted.action,
            organizationId: null,
            actor: { type: 'system' as const, id: null, display: null },
            target: { type: 'session', id: sessionId, display: null },
            ip: session.ipAddress,
            userAgent: session.userAgent,
            metadata: { userId, maxActive },
          })),
          ...(startOptions.audit?.(session.id) ?? []),
        ]);
        return { evicted };
      });
      if (!outcome) throw new UnauthorizedError('The account is missing or deactivated.');
      touches.note(session.id, now.getTime());
      return {
        session: {
          id: session.id,
          createdAt: session.createdAt,
          lastActivityAt: session.createdAt,
          expiresAt: session.expiresAt,
        },
        cookieValue,
        evicted: outcome.evicted,
      };
    },
    touch(sessionId) {
      if (!touches.take(sessionId)) return;
      const now = clock.now();
      store
        .touch(sessionId, now.toISOString(), new Date(now.getTime() - activityIntervalMs).toISOString())
        .then((lastActivityAt) => {
          // Another instance may have written more recently: wait a full interval from that write.
          if (lastActivityAt) touches.note(sessionId, new Date(lastActivityAt).getTime());
        })
        .catch((error: unknown) => logger.warn('could not record session activity', { sessionId, error }));
    },
    async list(userId) {
      return (await store.listActive(userId, clock.now().toISOString())).map(toRecord);
    },
    revoke(userId, sessionId, reason = 'revoked', context = {}) {
      const now = clock.now().toISOString();
      return store.transaction(async (tx) => {
        if (!(await tx.revoke(userId, sessionId, reason, now))) return false;
        await tx.evict(sessionEvictions(sessionId));
        await tx.publish([{ event: UserSessionRevokedEvent, payload: { userId, sessionId, reason, revokedAt: now } }]);
        if (reason === 'revoked') {
          await tx.audit?.([
            {
              action: AccountAuditActions.sessionRevoked.action,
              organizationId: null,
              actor: auditActorFor(context, userId),
              target: { type: 'session', id: sessionId, display: null },
              ...auditRequestFacts(context),
              metadata: { userId },
            },
          ]);
        }
        return true;
      });
    },
    async revokeAllForUser(userId) {
      const now = clock.now().toISOString();
      const reason = 'revoked-all';
      const ended = await store.transaction(async (tx) => {
        await tx.lockUser(userId);
        const ids = await tx.unrevokedIds(userId);
        await tx.end(ids, reason, now);
        await tx.evict(ids.flatMap(sessionEvictions));
        await tx.publish(
          ids.map((sessionId) => ({ event: UserSessionRevokedEvent, payload: { userId, sessionId, reason, revokedAt: now } })),
        );
        return ids;
      });
      return ended.length;
    },
    prune() {
      return store.prune(clock.now().toISOString());
    },
    findByCookie,
    async findLiveByCookie(cookieValue) {
      const session = await findByCookie(cookieValue);
      if (!session || session.revokedAt !== null || new Date(session.expiresAt).getTime() <= clock.now().getTime())
        return undefined;
      return session;
    },
    sessionCookieHeader(value, expiresAt) {
      return formatSessionCookie(cookieName, value, (new Date(expiresAt).getTime() - clock.now().getTime()) / 1000);
    },
    clearSessionCookieHeader() {
      return formatClearedSessionCookie(cookieName);
    },
    // C1: recent authentication
    markAuthenticated(sessionId, amr, at, audit = []) {
      if (audit.length === 0) return store.markAuthenticated(sessionId, [...amr], at.toISOString());
      return store.transaction(async (tx) => {
        if (!(await tx.markAuthenticated(sessionId, [...amr], at.toISOString()))) return false;
        await tx.audit?.(audit);
        return true;
      });
    },
    authentication(sessionId) {
      return store.authentication(sessionId, clock.now().toISOString());
    },
  };
}
