/** What the refresh-token lifetime of a client depends on. */
export interface RefreshLifetimeClient {
  /** The client's own lifetime in seconds, when set. */
  readonly refreshTokenLifetime: number | null;
  /** Defined by seeding (first-party). */
  readonly firstParty: boolean;
  readonly kind: 'application' | 'service-account';
}

/** The kind default of a seeded first-party client (SPEC 5.3): 7 days. */
export const FIRST_PARTY_REFRESH_LIFETIME_SECONDS = 604_800;
/** The kind default of any other application (SPEC 5.3): 1 day. */
export const APPLICATION_REFRESH_LIFETIME_SECONDS = 86_400;

/**
 * The refresh-token lifetime of a new login, most specific first (SPEC 5.3):
 * the client's `refreshTokenLifetime`, else its kind default (7 days for a
 * seeded first-party client, 1 day for any other application), else the
 * global fallback (7 days unless configured). The lifetime is fixed for the
 * whole chain when the login happens: a later change to the client applies to
 * new logins only.
 */
export function refreshTokenLifetime(client: RefreshLifetimeClient | undefined, fallbackSeconds: number): number {
  if (client?.refreshTokenLifetime != null) return client.refreshTokenLifetime;
  if (client?.firstParty) return FIRST_PARTY_REFRESH_LIFETIME_SECONDS;
  if (client?.kind === 'application') return APPLICATION_REFRESH_LIFETIME_SECONDS;
  return fallbackSeconds;
}

/**
 * Seconds left to a refresh token of a chain that started at `chainStartSeconds`
 * (the first token's `iat`): sliding expiration is off, so every rotated token
 * keeps the chain's absolute expiry. At least 1, as oidc-provider needs a
 * positive lifetime; an expired chain is refused by the expiry check.
 */
export function remainingRefreshLifetime(chainStartSeconds: number, lifetimeSeconds: number, nowSeconds: number): number {
  return Math.max(1, chainStartSeconds + lifetimeSeconds - nowSeconds);
}
