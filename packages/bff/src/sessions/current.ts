import type { BffSession } from './store.js';

/**
 * The request's session as the API proxy and the hub proxy need it. Every
 * outcome carries the `Set-Cookie` values to append to the response: a
 * cookie unsealed under an older key is re-sealed with the current one, and
 * a missing or ended session clears the cookies.
 */
export type CurrentSession =
  | { readonly session: BffSession; readonly setCookie: readonly string[] }
  | {
      readonly session: null;
      /** `Bff.SessionMissing` (no or unknown cookie, expired session) or `Bff.SessionRefreshFailed` (the provider refused the refresh: the session was destroyed). */
      readonly code: 'Bff.SessionMissing' | 'Bff.SessionRefreshFailed';
      readonly setCookie: readonly string[];
    };

/** Request headers, as a Fetch `Headers` or node's `IncomingHttpHeaders`. */
export type HeaderSource = Headers | Readonly<Record<string, string | string[] | undefined>>;

/**
 * Session access shared by the BFF's routes and its proxies (implemented by
 * the session layer, consumed by `/api/*` and the realtime proxy).
 */
export interface BffSessions {
  /**
   * The session named by the request's cookie. Its access token is
   * refreshed first when it expires within 60 seconds, or always with
   * `forceRefresh` (after the API answered 401), under the store's
   * per-session lock: concurrent callers wait and then read the refreshed
   * session, so one refresh happens however many requests arrive together.
   * A refused refresh destroys the session (`Bff.SessionRefreshFailed`).
   */
  current(headers: HeaderSource, options?: { readonly forceRefresh?: boolean }): Promise<CurrentSession>;
  /** Constant-time comparison of a presented CSRF token with the session's; an empty or missing token never matches. */
  csrfMatches(session: BffSession, presented: string | null | undefined): boolean;
  /** `Set-Cookie` values that remove the session and CSRF cookies. */
  clearCookies(): readonly string[];
}
