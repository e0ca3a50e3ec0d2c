import { type Clock, readCookie, systemClock } from '@idt/core';
import type { BffConfig } from '../config.js';
import type { HeaderSource } from '../sessions/current.js';
import { type CookieAttributes, cookieNames, expiredCookie, headerOf, serializeCookie } from './cookie.js';
import { createSealer } from './seal.js';

/** How long a login may take from `/bff/login` to `/bff/callback`: 10 minutes (SPEC 5.4, 8.2). */
export const LOGIN_TRANSACTION_TTL_SECONDS = 600;

/**
 * The suffix of the login-transaction cookies' names: `__Host-idt_bff` →
 * `__Host-idt_bff_tx_<first 16 characters of the state>`, one per sign-in in
 * progress, so two tabs that start signing in together both finish.
 */
export const TRANSACTION_COOKIE_SUFFIX = '_tx';

/** How many sign-ins may be in progress in one browser; starting another clears them all. */
export const MAX_PENDING_TRANSACTIONS = 4;

/** The part of a state that names its transaction cookie (states are base64url). */
function stateKey(state: string): string | undefined {
  const key = state.slice(0, 16);
  return /^[A-Za-z0-9_-]{16}$/.test(key) ? key : undefined;
}

/** What `/bff/login` remembers for `/bff/callback`, sealed in the login-transaction cookie. */
export interface LoginTransaction {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** A same-origin path to land on after sign-in. */
  readonly returnTo: string;
  /** The organization hint the login asked for, if any. */
  readonly organization?: string;
}

/** The session cookie as read from a request. */
export type SessionCookie =
  | { readonly state: 'absent' }
  /** Present but unusable (tampered with, expired, sealed under a retired key): clear it. */
  | { readonly state: 'invalid' }
  | { readonly state: 'valid'; readonly sessionId: string; readonly needsReseal: boolean };

/**
 * The BFF's cookies (SPEC 5.4):
 *
 * - the session cookie (`__Host-idt_bff` by default): the sealed session id
 *   and nothing else; `HttpOnly; Secure; SameSite=Strict; Path=/`, `Max-Age`
 *   the session's remaining lifetime, and the seal itself expires with it;
 * - a login-transaction cookie per sign-in in progress (`<name>_tx_<state key>`): sealed state, nonce, PKCE
 *   verifier, return path and organization hint; `SameSite=Lax` (it must
 *   come back on the provider's top-level redirect), `Max-Age=600`, and a
 *   600-second seal, so an old one is refused even if a browser kept it.
 *
 * There is no JavaScript-readable CSRF cookie: the page reads its CSRF token
 * from `GET /bff/user`.
 */
export interface BffCookies {
  readonly sessionCookieName: string;
  /** The prefix of the login-transaction cookies' names (each adds `_<state key>`). */
  readonly transactionCookieName: string;
  /** The `Set-Cookie` value of a session cookie naming `sessionId`, living `maxAgeSeconds`. */
  sessionCookie(sessionId: string, maxAgeSeconds: number): Promise<string>;
  readSession(headers: HeaderSource): Promise<SessionCookie>;
  /** Removes the session cookie. */
  clearSession(): string;
  /**
   * The `Set-Cookie` values that start a sign-in: its transaction cookie, and
   * the removal of the other pending ones when the browser already holds
   * {@link MAX_PENDING_TRANSACTIONS} (abandoned sign-ins do not pile up).
   */
  transactionCookie(transaction: LoginTransaction, headers?: HeaderSource): Promise<string[]>;
  /**
   * The transaction of the sign-in `state` names, or `undefined` when
   * missing, tampered with, older than 10 minutes or of another state.
   */
  readTransaction(headers: HeaderSource, state: string | null): Promise<LoginTransaction | undefined>;
  /** Removes the transaction cookie of `state` (nothing without a usable state). */
  clearTransaction(state: string | null): string[];
}

/**
 * The BFF's cookie codec over the configured names and key ring.
 *
 * @example
 * const cookies = createBffCookies(config, clock);
 * response.headers.append('set-cookie', await cookies.sessionCookie(session.id, config.sessionTtlSeconds));
 */
export function createBffCookies(config: Pick<BffConfig, 'cookie'>, clock: Clock = systemClock): BffCookies {
  const sealer = createSealer(config.cookie.keyring, clock);
  const sessionName = config.cookie.name;
  const transactionName = `${sessionName}${TRANSACTION_COOKIE_SUFFIX}`;
  const secure = config.cookie.secure;
  const session: Omit<CookieAttributes, 'maxAgeSeconds'> = { sameSite: 'Strict', secure };
  const transaction: Omit<CookieAttributes, 'maxAgeSeconds'> = { sameSite: 'Lax', secure };

  return {
    sessionCookieName: sessionName,
    transactionCookieName: transactionName,
    async sessionCookie(sessionId, maxAgeSeconds) {
      const seconds = Math.max(1, Math.floor(maxAgeSeconds));
      const sealed = await sealer.seal({ id: sessionId }, seconds * 1000);
      return serializeCookie(sessionName, sealed, { ...session, maxAgeSeconds: seconds });
    },
    async readSession(headers) {
      const value = readCookie(headerOf(headers, 'cookie'), sessionName);
      if (!value) return { state: 'absent' };
      const unsealed = await sealer.unseal<{ id?: unknown }>(value);
      const id = unsealed?.value?.id;
      if (!unsealed || typeof id !== 'string' || id === '') return { state: 'invalid' };
      return { state: 'valid', sessionId: id, needsReseal: unsealed.needsReseal };
    },
    clearSession: () => expiredCookie(sessionName, session),
    async transactionCookie(tx, headers) {
      const key = stateKey(tx.state);
      if (!key) throw new TypeError('A login state must be base64url, at least 16 characters');
      const sealed = await sealer.seal(tx, LOGIN_TRANSACTION_TTL_SECONDS * 1000);
      const pending = cookieNames(headers ? headerOf(headers, 'cookie') : null).filter((name) =>
        name.startsWith(`${transactionName}_`),
      );
      const stale = pending.length >= MAX_PENDING_TRANSACTIONS ? pending.map((name) => expiredCookie(name, transaction)) : [];
      return [
        ...stale,
        serializeCookie(`${transactionName}_${key}`, sealed, { ...transaction, maxAgeSeconds: LOGIN_TRANSACTION_TTL_SECONDS }),
      ];
    },
    async readTransaction(headers, state) {
      const key = state ? stateKey(state) : undefined;
      if (!key) return undefined;
      const value = readCookie(headerOf(headers, 'cookie'), `${transactionName}_${key}`);
      if (!value) return undefined;
      const unsealed = await sealer.unseal<Partial<LoginTransaction>>(value);
      const tx = unsealed?.value;
      if (
        !tx ||
        typeof tx.state !== 'string' ||
        typeof tx.nonce !== 'string' ||
        typeof tx.codeVerifier !== 'string' ||
        typeof tx.returnTo !== 'string' ||
        (tx.organization !== undefined && typeof tx.organization !== 'string')
      ) {
        return undefined;
      }
      return {
        state: tx.state,
        nonce: tx.nonce,
        codeVerifier: tx.codeVerifier,
        returnTo: tx.returnTo,
        ...(tx.organization ? { organization: tx.organization } : {}),
      };
    },
    clearTransaction(state) {
      const key = state ? stateKey(state) : undefined;
      return key ? [expiredCookie(`${transactionName}_${key}`, transaction)] : [];
    },
  };
}
