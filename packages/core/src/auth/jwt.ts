import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject, sign, verify } from 'node:crypto';
import { type Clock, systemClock } from '../clock.js';

/** Registered and idt claims of an access token (RFC 9068 plus `org_id`, `sid`). */
export interface JwtClaims {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string | string[];
  readonly exp: number;
  readonly iat: number;
  readonly nbf?: number;
  readonly jti?: string;
  readonly client_id?: string;
  readonly azp?: string;
  readonly scope?: string;
  readonly org_id?: string;
  readonly sid?: string;
  readonly [claim: string]: unknown;
}

/** Why a token was refused. */
export type JwtErrorReason =
  | 'malformed'
  | 'unsupported_algorithm'
  | 'wrong_type'
  | 'unknown_key'
  | 'bad_signature'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'expired'
  | 'not_yet_valid';

/** A token failed verification; `reason` says which check. */
export class JwtError extends Error {
  readonly reason: JwtErrorReason;
  constructor(reason: JwtErrorReason, message: string) {
    super(message);
    this.name = 'JwtError';
    this.reason = reason;
  }
}

/** A public JWK with the members verification needs. */
export type VerificationJwk = JsonWebKey & { kid?: string; alg?: string; kty?: string };

/** Options of {@link createJwtVerifier}. */
export interface JwtVerifierOptions {
  /** The current public keys (the provider's JWKS); called again on an unknown `kid`. */
  readonly keys: () => Promise<readonly VerificationJwk[]>;
  readonly issuer: string;
  /** Accepted audiences; the token's `aud` must contain one. */
  readonly audience: string | readonly string[];
  /** The required `typ` header; `at+jwt` (RFC 9068) by default, so id tokens are never accepted as access tokens. */
  readonly type?: string;
  /** Clock-skew tolerance in seconds; 300 (five minutes) by default. */
  readonly clockToleranceSeconds?: number;
  readonly clock?: Clock;
  /** How many verified tokens are remembered; 10,000 by default. */
  readonly cacheSize?: number;
  /** Minimum milliseconds between key reloads triggered by unknown key ids; 5,000 by default. */
  readonly keyReloadIntervalMs?: number;
}

/** Verifies access tokens locally against the provider's signing keys. */
export interface JwtVerifier {
  /** @throws JwtError */
  verify(token: string): Promise<JwtClaims>;
  /**
   * The claims of a token this verifier already verified, checked against
   * the clock again, without waiting; `undefined` when it is not cached.
   *
   * @throws JwtError when the cached token has expired
   */
  cached(token: string): JwtClaims | undefined;
  /** Forgets loaded keys and cached tokens (after a key rotation). */
  reset(): void;
}

const ALGORITHMS = new Set(['ES256', 'RS256']);

function decodeSegment(segment: string | undefined): Record<string, unknown> {
  if (!segment || !/^[A-Za-z0-9_-]+$/.test(segment))
    throw new JwtError('malformed', 'The token is not a JWS compact serialization');
  try {
    const value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch {
    throw new JwtError('malformed', 'The token header or payload is not a JSON object');
  }
}

// node:crypto rather than jose (issue 48: jose unless it costs bearer reads more than 5 %).
// `node --import tsx bench/jwt-verify.ts` verifies the same distinct access tokens with both in one
// process (keys imported once; jose 6.2.17 `importJWK` + `jwtVerify`, node 20; three runs, medians):
// jose took 55–110 % longer per ES256 token one at a time and 77–161 % longer per RS256 token, and
// 52–85 % longer for RS256 with 32 in flight; only ES256 with 32 in flight was a wash (−31 % to +21 %,
// the thread pool's WebCrypto). Tokens seen before are answered by the cache below on either path.
function verifySignature(alg: string, key: KeyObject, data: Buffer, signature: Buffer): boolean {
  if (alg === 'ES256') return verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
  return verify('sha256', data, key, signature);
}

/**
 * A JWT verifier on node:crypto: checks signature (ES256 or RS256), `typ`,
 * issuer, audience, expiry and not-before with a five-minute skew. Verified
 * tokens are cached until they expire, so a token is verified once.
 *
 * @example
 * const verifier = createJwtVerifier({ keys: async () => publicJwks(await store.listKeys()).keys, issuer, audience: apiBaseUrl });
 * const claims = await verifier.verify(token);
 */
export function createJwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  const clock = options.clock ?? systemClock;
  const tolerance = options.clockToleranceSeconds ?? 300;
  const audiences = new Set(typeof options.audience === 'string' ? [options.audience] : options.audience);
  const type = options.type ?? 'at+jwt';
  const cacheSize = options.cacheSize ?? 10_000;
  const reloadInterval = options.keyReloadIntervalMs ?? 5000;
  const cache = new Map<string, JwtClaims>();
  let keys = new Map<string, { alg: string; key: KeyObject }>();
  let loadedAt = 0;
  let loading: Promise<void> | undefined;

  async function loadKeys(): Promise<void> {
    loading ??= (async () => {
      try {
        const next = new Map<string, { alg: string; key: KeyObject }>();
        for (const jwk of await options.keys()) {
          if (!jwk.kid || !jwk.alg || !ALGORITHMS.has(jwk.alg)) continue;
          next.set(jwk.kid, { alg: jwk.alg, key: createPublicKey({ key: jwk, format: 'jwk' }) });
        }
        keys = next;
        loadedAt = Date.now();
      } finally {
        loading = undefined;
      }
    })();
    return loading;
  }

  async function keyFor(kid: string) {
    let found = keys.get(kid);
    if (!found && Date.now() - loadedAt >= reloadInterval) {
      await loadKeys();
      found = keys.get(kid);
    }
    return found;
  }

  function checkTimes(claims: JwtClaims): void {
    const now = Math.floor(clock.now().getTime() / 1000);
    if (typeof claims.exp !== 'number' || now - tolerance >= claims.exp) throw new JwtError('expired', 'The token has expired');
    if (typeof claims.nbf === 'number' && claims.nbf > now + tolerance)
      throw new JwtError('not_yet_valid', 'The token is not valid yet');
    if (typeof claims.iat === 'number' && claims.iat > now + tolerance)
      throw new JwtError('not_yet_valid', 'The token was issued in the future');
  }

  async function verifyUncached(token: string): Promise<JwtClaims> {
    const parts = token.split('.');
    if (parts.length !== 3) throw new JwtError('malformed', 'The token is not a JWS compact serialization');
    const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
    const header = decodeSegment(headerPart);
    const alg = header.alg;
    if (typeof alg !== 'string' || !ALGORITHMS.has(alg))
      throw new JwtError('unsupported_algorithm', 'The token algorithm is not accepted');
    if (typeof header.typ !== 'string' || header.typ.toLowerCase().replace(/^application\//, '') !== type) {
      throw new JwtError('wrong_type', `The token is not of type ${type}`);
    }
    if (header.crit !== undefined) throw new JwtError('malformed', 'Critical header parameters are not supported');
    if (typeof header.kid !== 'string') throw new JwtError('unknown_key', 'The token names no key');
    const key = await keyFor(header.kid);
    if (!key || key.alg !== alg) throw new JwtError('unknown_key', 'The token was signed by an unknown key');
    if (!/^[A-Za-z0-9_-]*$/.test(signaturePart)) throw new JwtError('malformed', 'The token signature is malformed');
    const data = Buffer.from(`${headerPart}.${payloadPart}`, 'ascii');
    if (!verifySignature(alg, key.key, data, Buffer.from(signaturePart, 'base64url'))) {
      throw new JwtError('bad_signature', 'The token signature is invalid');
    }
    const claims = decodeSegment(payloadPart) as unknown as JwtClaims;
    if (claims.iss !== options.issuer) throw new JwtError('wrong_issuer', 'The token was issued by another issuer');
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.some((value) => typeof value === 'string' && audiences.has(value))) {
      throw new JwtError('wrong_audience', 'The token is not meant for this API');
    }
    if (typeof claims.sub !== 'string' || claims.sub === '') throw new JwtError('malformed', 'The token has no subject');
    checkTimes(claims);
    return claims;
  }

  return {
    cached(token) {
      const cached = cache.get(token);
      if (cached) checkTimes(cached);
      return cached;
    },
    async verify(token) {
      const cached = cache.get(token);
      if (cached) {
        checkTimes(cached);
        return cached;
      }
      const claims = await verifyUncached(token);
      if (cache.size >= cacheSize) {
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
      cache.set(token, claims);
      return claims;
    },
    reset() {
      cache.clear();
      keys = new Map();
      loadedAt = 0;
    },
  };
}

/**
 * Signs a JWT with a private JWK (ES256 or RS256) on node:crypto. The
 * provider signs its own tokens; this serves logout tokens, tests and tools.
 *
 * @example
 * const token = signJwt({ typ: 'at+jwt' }, { iss, sub, aud, iat, exp }, activeKey.privateJwk);
 */
export function signJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  privateJwk: JsonWebKey & { kid: string; alg: string },
): string {
  const fullHeader = { ...header, alg: privateJwk.alg, kid: privateJwk.kid };
  const encoded = `${Buffer.from(JSON.stringify(fullHeader)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const key = createPrivateKey({ key: privateJwk, format: 'jwk' });
  const signature =
    privateJwk.alg === 'ES256'
      ? sign('sha256', Buffer.from(encoded), { key, dsaEncoding: 'ieee-p1363' })
      : sign('sha256', Buffer.from(encoded), key);
  return `${encoded}.${signature.toString('base64url')}`;
}
