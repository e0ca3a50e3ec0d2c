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
      /**
       * - `Bff.SessionMissing` (401): no or unknown cookie, expired session; the cookies are cleared.
       * - `Bff.SessionRefreshFailed` (401): the provider refused the refresh (`invalid_grant`); the session was destroyed and the cookies are cleared.
       * - `Bff.UpstreamUnavailable` (503): the access token is due and the provider could not be reached (network, 5xx, a refresh lock held too long elsewhere); the session is kept, so a retry may succeed. `setCookie` clears nothing.
       */
      readonly code: 'Bff.SessionMissing' | 'Bff.SessionRefreshFailed' | 'Bff.UpstreamUnavailable';
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
