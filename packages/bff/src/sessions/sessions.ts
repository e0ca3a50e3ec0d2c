import { type Clock, constantTimeEqual, type Logger, randomToken, silentLogger, systemClock } from '@idt/core';
import type { BffCookies } from '../cookies/jar.js';
import type { BffSessions, CurrentSession, HeaderSource } from './current.js';
import { RefreshLockTimeoutError } from './mutex.js';
import type { BffSession, BffSessionStore, BffUser } from './store.js';

/** Refresh the access token when it expires within this many milliseconds (SPEC 5.4: about 60 seconds). */
export const REFRESH_SKEW_MS = 60_000;

/** How long this process remembers that a session ended by a refused refresh, so late callers get the same answer. */
const REFUSED_MEMORY_MS = 60_000;
const REFUSED_MEMORY_MAX = 10_000;

/** Tokens a successful refresh returned. */
export interface RefreshedTokens {
  readonly accessToken: string;
  /** `expires_in` of the response, in seconds. */
  readonly expiresInSeconds: number | undefined;
  /** The rotated refresh token; the old one is kept when the provider sent none. */
  readonly refreshToken: string | undefined;
  readonly idToken: string | undefined;
  /** The new ID token's claims: the session's user is updated from them. */
  readonly claims: Readonly<Record<string, unknown>> | undefined;
}

/**
 * The outcome of a refresh at the provider: `refused` is the provider's
 * `invalid_grant` (revoked, expired or replayed refresh token: the session is
 * over); `unavailable` is anything else (network, 5xx, rate limit).
 */
export type RefreshOutcome =
  | { readonly kind: 'refreshed'; readonly tokens: RefreshedTokens }
  | { readonly kind: 'refused'; readonly error: unknown }
  | { readonly kind: 'unavailable'; readonly error: unknown };

/** Redeems a refresh token at the provider (the BFF's `refresh_token` grant). */
export interface SessionRefresher {
  refresh(refreshToken: string): Promise<RefreshOutcome>;
}

/** What a new session is made of, after a successful code exchange. */
export interface NewSession {
  readonly user: BffUser;
  readonly sid: string | null;
  readonly accessToken: string;
  readonly expiresInSeconds: number | undefined;
  readonly refreshToken: string | null;
  readonly idToken: string | null;
}

/** Options of {@link createBffSessions}. */
export interface BffSessionsOptions {
  readonly store: BffSessionStore;
  readonly cookies: BffCookies;
  readonly refresher: SessionRefresher;
  /** The absolute session lifetime in seconds. */
  readonly sessionTtlSeconds: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/**
 * {@link BffSessions} plus what the BFF's own routes need: reading a session
 * without refreshing it, creating one at sign-in and ending one at logout.
 */
export interface BffSessionService extends BffSessions {
  /** The cookie's session as stored, without refreshing (logout does not need a fresh token). */
  peek(headers: HeaderSource): Promise<CurrentSession>;
  /** Stores a new session and returns it with the `Set-Cookie` value that names it. */
  create(input: NewSession): Promise<{ readonly session: BffSession; readonly setCookie: string }>;
  /** Deletes a session. */
  destroy(id: string): Promise<void>;
}

type Refreshed =
  | { readonly kind: 'ok'; readonly session: BffSession }
  | { readonly kind: 'gone' }
  | { readonly kind: 'refused' }
  | { readonly kind: 'unavailable' };

/** The access token's lifetime when the token response has no `expires_in` and the token is not a JWT with `exp`. */
const FALLBACK_ACCESS_TOKEN_SECONDS = 300;

/** When an access token expires: `expires_in` of the response, else the JWT's `exp`, else 5 minutes from `now`. */
export function accessTokenExpiry(accessToken: string, expiresInSeconds: number | undefined, now: number): number {
  if (typeof expiresInSeconds === 'number' && Number.isFinite(expiresInSeconds)) return now + expiresInSeconds * 1000;
  try {
    const payload = JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown };
    if (typeof payload.exp === 'number' && Number.isFinite(payload.exp)) return payload.exp * 1000;
  } catch {
    // an opaque token
  }
  return now + FALLBACK_ACCESS_TOKEN_SECONDS * 1000;
}

/** The user of a session from ID token claims (`sub`, `name`, `email`, `org_id`, `org_name`, `roles`). */
export function userFromClaims(claims: Readonly<Record<string, unknown>>): BffUser {
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : null);
  const joined = [text(claims.given_name), text(claims.family_name)].filter(Boolean).join(' ');
  return {
    sub: String(claims.sub),
    name: text(claims.name) ?? (joined || null),
    email: text(claims.email),
    orgId: text(claims.org_id),
    orgName: text(claims.org_name),
    roles: Array.isArray(claims.roles) ? claims.roles.filter((role): role is string => typeof role === 'string') : [],
  };
}

/**
 * The BFF's session layer over a {@link BffSessionStore}: reads the sealed
 * cookie, loads the session and keeps its access token fresh.
 *
 * - A token expiring within 60 seconds (or any token, with `forceRefresh`)
 *   is refreshed under the store's per-session lock. Inside the lock the
 *   session is read again: when another caller (or instance) has already
 *   refreshed it, that result is used and the provider is not asked again.
 *   Concurrent callers in one process share one refresh and its outcome.
 * - The rotated tokens are stored before any caller gets them.
 * - `invalid_grant` destroys the session: `Bff.SessionRefreshFailed`, cookies cleared.
 * - A transient failure keeps the session: while the old token is still
 *   valid it is used as is; once it has expired the answer is
 *   `Bff.UpstreamUnavailable` (503).
 * - A cookie sealed under an older key is sealed again under the current one.
 *
 * @example
 * const sessions = createBffSessions({ store, cookies, refresher, sessionTtlSeconds: 86_400, clock });
 * const current = await sessions.current(request.headers);
 */
export function createBffSessions(options: BffSessionsOptions): BffSessionService {
  const { store, cookies, refresher } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const inflight = new Map<string, Promise<Refreshed>>();
  // Session id → until when: callers that arrive just after a refused refresh destroyed the
  // session answer `Bff.SessionRefreshFailed` too, rather than `Bff.SessionMissing`.
  const refused = new Map<string, number>();
  const rememberRefused = (id: string) => {
    if (refused.size >= REFUSED_MEMORY_MAX) refused.delete(refused.keys().next().value as string);
    refused.set(id, clock.now().getTime() + REFUSED_MEMORY_MS);
  };
  const wasRefused = (id: string) => {
    const until = refused.get(id);
    if (until === undefined) return false;
    if (until > clock.now().getTime()) return true;
    refused.delete(id);
    return false;
  };
  const clear = () => [cookies.clearSession()];
  const missing = (setCookie: readonly string[]): CurrentSession => ({ session: null, code: 'Bff.SessionMissing', setCookie });

  async function refreshLocked(seen: BffSession, force: boolean): Promise<Refreshed> {
    return store.withRefreshLock(seen.id, async () => {
      const now = clock.now().getTime();
      const fresh = await store.read(seen.id, now);
      if (!fresh) return { kind: 'gone' };
      // Someone refreshed while this caller waited: use their tokens.
      if (fresh.accessToken !== seen.accessToken) return { kind: 'ok', session: fresh };
      const stillValid = fresh.accessTokenExpiresAt > now;
      if (!force && fresh.accessTokenExpiresAt - now > REFRESH_SKEW_MS) return { kind: 'ok', session: fresh };
      if (!fresh.refreshToken) {
        if (stillValid && !force) return { kind: 'ok', session: fresh };
        await store.destroy(fresh.id);
        rememberRefused(fresh.id);
        return { kind: 'refused' };
      }
      const outcome = await refresher.refresh(fresh.refreshToken);
      if (outcome.kind === 'refused') {
        logger.info('bff.session.refresh_refused', { reason: errorText(outcome.error) });
        await store.destroy(fresh.id);
        rememberRefused(fresh.id);
        return { kind: 'refused' };
      }
      if (outcome.kind === 'unavailable') {
        logger.warn('bff.session.refresh_unavailable', { reason: errorText(outcome.error) });
        return stillValid && !force ? { kind: 'ok', session: fresh } : { kind: 'unavailable' };
      }
      const { tokens } = outcome;
      const at = clock.now().getTime();
      const claims = tokens.claims;
      const user = claims && String(claims.sub) === fresh.user.sub ? userFromClaims(claims) : fresh.user;
      const next: BffSession = {
        ...fresh,
        user,
        accessToken: tokens.accessToken,
        accessTokenExpiresAt: accessTokenExpiry(tokens.accessToken, tokens.expiresInSeconds, at),
        refreshToken: tokens.refreshToken ?? fresh.refreshToken,
        idToken: tokens.idToken ?? fresh.idToken,
      };
      // Stored before anyone uses it: the old refresh token is spent.
      if (!(await store.update(next))) return { kind: 'gone' };
      return { kind: 'ok', session: next };
    });
  }

  function refreshShared(seen: BffSession, force: boolean): Promise<Refreshed> {
    const running = inflight.get(seen.id);
    if (running) return running;
    const started = refreshLocked(seen, force)
      .catch((error: unknown): Refreshed => {
        if (error instanceof RefreshLockTimeoutError) {
          logger.warn('bff.session.refresh_lock_timeout', { reason: error.message });
          return seen.accessTokenExpiresAt > clock.now().getTime() && !force
            ? { kind: 'ok', session: seen }
            : { kind: 'unavailable' };
        }
        throw error;
      })
      .finally(() => inflight.delete(seen.id));
    inflight.set(seen.id, started);
    return started;
  }

  async function load(headers: HeaderSource): Promise<CurrentSession> {
    const cookie = await cookies.readSession(headers);
    if (cookie.state === 'absent') return missing([]);
    if (cookie.state === 'invalid') return missing(clear());
    const now = clock.now().getTime();
    const session = await store.read(cookie.sessionId, now);
    if (!session) {
      if (wasRefused(cookie.sessionId)) return { session: null, code: 'Bff.SessionRefreshFailed', setCookie: clear() };
      return missing(clear());
    }
    const setCookie = cookie.needsReseal
      ? [await cookies.sessionCookie(session.id, Math.ceil((session.expiresAt - now) / 1000))]
      : [];
    return { session, setCookie };
  }

  return {
    async current(headers, currentOptions = {}) {
      const loaded = await load(headers);
      if (!loaded.session) return loaded;
      const force = currentOptions.forceRefresh === true;
      const now = clock.now().getTime();
      if (!force && loaded.session.accessTokenExpiresAt - now > REFRESH_SKEW_MS) return loaded;
      const refreshed = await refreshShared(loaded.session, force);
      switch (refreshed.kind) {
        case 'ok':
          return { session: refreshed.session, setCookie: loaded.setCookie };
        case 'gone':
          return missing(clear());
        case 'refused':
          return { session: null, code: 'Bff.SessionRefreshFailed', setCookie: clear() };
        case 'unavailable':
          return { session: null, code: 'Bff.UpstreamUnavailable', setCookie: loaded.setCookie };
      }
    },
    peek: load,
    csrfMatches(session, presented) {
      if (typeof presented !== 'string' || presented === '' || session.csrfToken === '') return false;
      return constantTimeEqual(presented, session.csrfToken);
    },
    clearCookies: clear,
    async create(input) {
      const now = clock.now().getTime();
      const session: BffSession = {
        id: randomToken(32),
        user: input.user,
        sid: input.sid,
        accessToken: input.accessToken,
        accessTokenExpiresAt: accessTokenExpiry(input.accessToken, input.expiresInSeconds, now),
        refreshToken: input.refreshToken,
        idToken: input.idToken,
        csrfToken: randomToken(32),
        createdAt: now,
        expiresAt: now + options.sessionTtlSeconds * 1000,
      };
      await store.create(session);
      return { session, setCookie: await cookies.sessionCookie(session.id, options.sessionTtlSeconds) };
    },
    async destroy(id) {
      refused.delete(id);
      await store.destroy(id);
    },
  };
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const oauthError = (error as { error?: unknown }).error;
    return typeof oauthError === 'string' ? `${oauthError}: ${error.message}` : error.message;
  }
  return String(error);
}
