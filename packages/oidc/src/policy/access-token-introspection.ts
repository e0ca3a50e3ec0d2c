import { type Clock, type JwtClaims, systemClock } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { ownsToken } from './token-ownership.js';

/** The RFC 7662 answer for a token that is not active, or that the asking client may not see. */
export interface InactiveToken {
  readonly active: false;
}

/** The RFC 7662 (section 2.2) answer for an active access token. */
export interface ActiveAccessToken {
  readonly active: true;
  /** Always `Bearer`: the token type of RFC 6749 7.1, as the token response gave it. */
  readonly token_type: 'Bearer';
  readonly client_id: string;
  /** The user, or for a service account's token its client id. */
  readonly sub: string;
  readonly scope?: string;
  /** The organization the token works in. */
  readonly org_id?: string;
  readonly exp: number;
  readonly iat: number;
  readonly iss: string;
  readonly aud: string | string[];
  readonly jti?: string;
  /** The single sign-on session of a user's token. */
  readonly sid?: string;
}

/** What the introspection endpoint answers for an access token. */
export type AccessTokenIntrospection = InactiveToken | ActiveAccessToken;

/** Options of {@link createAccessTokenIntrospection}. */
export interface AccessTokenIntrospectionOptions {
  /**
   * The API's bearer check (`verifyBearerToken` of `@idt/core` with the
   * server's verifier and credential resolver): throws `UnauthorizedError`
   * or a `ProblemError` for a token the API refuses.
   */
  readonly check: (token: string) => Promise<{ readonly claims: JwtClaims }>;
  readonly clock?: Clock;
}

const INACTIVE: InactiveToken = Object.freeze({ active: false });

/**
 * Introspection of idt's JWT access tokens (RFC 7662), which oidc-provider
 * refuses (`unsupported_token_type`) because it never stores them.
 *
 * A token is active exactly when the API would accept it now: the same
 * check decides (signature, `typ`, issuer, audience; the user, client,
 * session and family watermarks; the user's and client's status; the
 * membership of the token's organization), so a token ended by logout,
 * family revocation, deactivation or suspension is `active: false` at once.
 * Two rules are stricter than the API's: only the client the token was
 * issued to learns anything about it (`policy/token-ownership.ts`), and the
 * expiry is read against the issuer's own clock, without the five minutes
 * of skew a resource server allows. Every refusal answers `{ active: false }`
 * alone; a failure of the store (a database outage) is thrown.
 *
 * @example
 * const introspect = createAccessTokenIntrospection({ check: (token) => verifyBearerToken(verifier, resolver, token), clock });
 * await introspect({ clientId: 'app-1' }, accessToken); // { active: true, client_id: 'app-1', sub, scope, org_id, exp, … }
 */
export function createAccessTokenIntrospection(
  options: AccessTokenIntrospectionOptions,
): (client: { readonly clientId: string }, token: string) => Promise<AccessTokenIntrospection> {
  const clock = options.clock ?? systemClock;
  return async (client, token) => {
    let claims: JwtClaims;
    try {
      ({ claims } = await options.check(token));
    } catch (error) {
      if (error instanceof UnauthorizedError || error instanceof ProblemError) return INACTIVE;
      throw error;
    }
    const clientId = typeof claims.client_id === 'string' ? claims.client_id : claims.azp;
    if (typeof clientId !== 'string' || !ownsToken(client, { clientId })) return INACTIVE;
    if (claims.exp <= Math.floor(clock.now().getTime() / 1000)) return INACTIVE;
    return {
      active: true,
      token_type: 'Bearer',
      client_id: clientId,
      sub: claims.sub,
      ...(typeof claims.scope === 'string' ? { scope: claims.scope } : {}),
      ...(typeof claims.org_id === 'string' ? { org_id: claims.org_id } : {}),
      exp: claims.exp,
      iat: claims.iat,
      iss: claims.iss,
      aud: claims.aud,
      ...(typeof claims.jti === 'string' ? { jti: claims.jti } : {}),
      ...(typeof claims.sid === 'string' ? { sid: claims.sid } : {}),
    };
  };
}
