/** The user a BFF session belongs to: what `GET /bff/user` shows (never a token). */
export interface BffUser {
  readonly sub: string;
  readonly name: string | null;
  readonly email: string | null;
  /** The organization the session was signed in to (`org_id`), if any. */
  readonly orgId: string | null;
  readonly orgName: string | null;
  readonly roles: readonly string[];
}

/**
 * One signed-in browser session, held server-side. The browser only ever
 * holds a sealed cookie naming {@link id}.
 */
export interface BffSession {
  /** Random, unguessable (at least 128 bits), base64url. */
  readonly id: string;
  readonly user: BffUser;
  /** The provider's session id (`sid` of the ID token): logout by `sid` ends this session. */
  readonly sid: string | null;
  readonly accessToken: string;
  /** Epoch milliseconds when the access token expires. */
  readonly accessTokenExpiresAt: number;
  readonly refreshToken: string | null;
  /** The ID token, kept for `id_token_hint` at logout. */
  readonly idToken: string | null;
  /** The synchronizer token state-changing requests must echo in `x-csrf-token`. */
  readonly csrfToken: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /** Epoch milliseconds; the session is gone after this (default lifetime 86,400 s). */
  readonly expiresAt: number;
}

/**
 * Where BFF sessions live: persistence only, no policy. Adapters: memory
 * (tests, one process) and knex (SQLite, Postgres; several instances).
 */
export interface BffSessionStore {
  /** Stores a new session. */
  create(session: BffSession): Promise<void>;
  /** The session, or `undefined` when missing or expired at `now` (epoch ms). */
  read(id: string, now: number): Promise<BffSession | undefined>;
  /**
   * Replaces the tokens of a session after a refresh; `false` when the
   * session is gone (revoked meanwhile), in which case nothing is written.
   */
  update(session: BffSession): Promise<boolean>;
  /** Deletes one session; `false` when there was none. */
  destroy(id: string): Promise<boolean>;
  /** Deletes every session with this provider `sid`; returns how many. */
  revokeBySid(sid: string): Promise<number>;
  /** Deletes every session of this subject; returns how many. */
  revokeBySubject(sub: string): Promise<number>;
  /**
   * Runs `fn` holding the session's refresh lock: concurrent callers for one
   * session (on any instance sharing the store) run one at a time, so a
   * rotating refresh token is redeemed once. `fn` re-reads the session.
   */
  withRefreshLock<T>(id: string, fn: () => Promise<T>): Promise<T>;
  /** Deletes expired sessions; returns how many. */
  prune(now: number): Promise<number>;
}
