/**
 * `@idt/bff`: a backend-for-frontend that keeps tokens off the browser.
 * @packageDocumentation
 */

export { BACKCHANNEL_LOGOUT_EVENT, LOGOUT_TOKEN_CLOCK_TOLERANCE_SECONDS } from './auth/backchannel.js';
export { safeReturnTo } from './auth/return-to.js';
export type { Bff, BffStoreContext, CreateBffOptions } from './bff.js';
export { createBff } from './bff.js';
export type { BffConfig, BffOptions, CookieKeyring } from './config.js';
export {
  bffConfigFromEnv,
  DEFAULT_BFF_COOKIE_NAME,
  DEFAULT_BFF_INSECURE_COOKIE_NAME,
  DEFAULT_BFF_SCOPES,
  DEFAULT_BFF_SESSION_TTL_SECONDS,
  resolveBffConfig,
} from './config.js';
export type { BffCookies, LoginTransaction, SessionCookie } from './cookies/jar.js';
export { createBffCookies, LOGIN_TRANSACTION_TTL_SECONDS } from './cookies/jar.js';
export type { Sealer, Unsealed } from './cookies/seal.js';
export { createSealer } from './cookies/seal.js';
export { BffCodes } from './problems.js';
export type { BffSessions, CurrentSession, HeaderSource } from './sessions/current.js';
export { createMemoryBffSessionStore } from './sessions/memory.js';
export { RefreshLockTimeoutError } from './sessions/mutex.js';
export type {
  BffSessionService,
  BffSessionsOptions,
  NewSession,
  RefreshedTokens,
  RefreshOutcome,
  SessionRefresher,
} from './sessions/sessions.js';
export { createBffSessions, REFRESH_SKEW_MS, userFromClaims } from './sessions/sessions.js';
export type { BffSession, BffSessionStore, BffUser } from './sessions/store.js';
