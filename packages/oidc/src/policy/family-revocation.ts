import { type Clock, systemClock } from '@idt/core';
import { GRANT_CLAIM } from '@idt/identity';

/**
 * The access-token claim naming the token's family: the grant its refresh
 * tokens rotate under. The bearer check refuses a token whose family ended
 * (a `grant` revocation watermark), without a per-token row.
 */
export const FAMILY_CLAIM = GRANT_CLAIM;

/** The clock-skew tolerance of bearer validation (SPEC 5.3), in seconds. */
const BEARER_SKEW_SECONDS = 300;

/** Options of {@link createFamilyRevocation}. */
export interface FamilyRevocationOptions {
  /**
   * Persists "every access token of this grant is refused" atomically and
   * spreads it to every instance (a `grant` watermark and a cache eviction).
   */
  readonly refuseAccessTokens: (grantId: string, at: Date) => Promise<void>;
  readonly clock?: Clock;
}

/** Ends token families (SPEC 3.6). */
export interface FamilyRevocation {
  /**
   * Refuses every access token of a family on its next use. oidc-provider
   * deletes the family's refresh tokens, codes and grant itself; this ends
   * the access tokens, which are JWTs it never stores. Called whenever
   * oidc-provider revokes a grant: a refresh token replayed after the leeway,
   * an authorization code redeemed twice, a refresh token revoked at
   * `/connect/revoke`, a grant ended at logout.
   */
  end(grantId: string): Promise<void>;
}

/** Creates the family revocation policy. */
export function createFamilyRevocation(options: FamilyRevocationOptions): FamilyRevocation {
  const clock = options.clock ?? systemClock;
  return {
    end: (grantId) => options.refuseAccessTokens(grantId, clock.now()),
  };
}

/**
 * Family watermarks written before the returned time may be forgotten: every
 * access token they refuse has expired by `now`, clock skew included.
 */
export function familyWatermarksForgettableBefore(now: Date, accessTokenTtlSeconds: number): Date {
  return new Date(now.getTime() - (accessTokenTtlSeconds + BEARER_SKEW_SECONDS) * 1000);
}
