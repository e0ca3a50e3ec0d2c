import { type JWTVerifyGetKey, jwtVerify } from 'jose';

/** The event a back-channel logout token carries (OpenID Connect Back-Channel Logout 1.0). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** Clock tolerance for logout tokens: 5 minutes (SPEC 5.3, 8.2). */
export const LOGOUT_TOKEN_CLOCK_TOLERANCE_SECONDS = 300;

/** Signature algorithms a logout token may use: asymmetric only (a symmetric one would be signed with the client secret). */
export const LOGOUT_TOKEN_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

/** What a verified logout token names. */
export interface LogoutTarget {
  readonly sid: string | undefined;
  readonly sub: string | undefined;
}

/** Options of {@link verifyLogoutToken}. */
export interface VerifyLogoutTokenOptions {
  readonly jwks: JWTVerifyGetKey;
  readonly issuer: string;
  readonly clientId: string;
  /** The instant to check `iat` and `exp` against. */
  readonly now: Date;
}

/**
 * Verifies a back-channel logout token (SPEC 4.3): signature by the
 * provider's keys with an asymmetric algorithm, `iss`, `aud` = the client
 * id, `iat` and `exp` (5 minutes' tolerance), header `typ: logout+jwt`, the
 * back-channel logout event, no `nonce`, and a `sid` or `sub`.
 *
 * @throws Error on any failure (the route answers every one the same way).
 */
export async function verifyLogoutToken(token: string, options: VerifyLogoutTokenOptions): Promise<LogoutTarget> {
  const { payload } = await jwtVerify(token, options.jwks, {
    issuer: options.issuer,
    audience: options.clientId,
    algorithms: [...LOGOUT_TOKEN_ALGORITHMS],
    typ: 'logout+jwt',
    clockTolerance: LOGOUT_TOKEN_CLOCK_TOLERANCE_SECONDS,
    currentDate: options.now,
    requiredClaims: ['iat', 'exp'],
  });
  const events = payload.events;
  if (typeof events !== 'object' || events === null || Array.isArray(events)) throw new Error('events claim missing');
  const event = (events as Record<string, unknown>)[BACKCHANNEL_LOGOUT_EVENT];
  if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new Error('back-channel logout event missing');
  if ('nonce' in payload) throw new Error('a logout token must not carry a nonce');
  const sid = typeof payload.sid === 'string' && payload.sid !== '' ? payload.sid : undefined;
  const sub = typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : undefined;
  if (!sid && !sub) throw new Error('a logout token names a sid or a sub');
  return { sid, sub };
}
