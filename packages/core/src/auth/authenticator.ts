import { ProblemError, UnauthorizedError } from '@idt/problem';
import { isUuid } from '../ids.js';
import type { RequestHead } from '../request-head.js';
import { type JwtClaims, JwtError, type JwtVerifier } from './jwt.js';
import type { AuthenticationInfo, AuthenticationResult, Authenticator, Principal } from './principal.js';

/**
 * Turns verified credentials into principals; implemented by the identity
 * module (it knows users, memberships, API keys and revocations).
 */
export interface CredentialResolver {
  /**
   * The caller of a verified access token working in `tenantId` (the token's
   * `org_id`, or the `X-Tenant-Id` header when the token has none).
   *
   * @throws UnauthorizedError when the token was revoked or its subject is gone.
   * @throws ProblemError `Tenant.Forbidden` when the caller may not work in that tenant.
   */
  resolveToken(claims: JwtClaims, tenantId: string | null): Promise<Principal>;
  /** The caller of an API key, or `null` when the key is unknown, expired or revoked. */
  resolveApiKey(apiKey: string, tenantId: string | null): Promise<Principal | null>;
  /** The caller of a sign-in session cookie, or `null` when the session is gone. */
  resolveSession?(cookieValue: string, tenantId: string | null): Promise<Principal | null>;
}

/** Options of {@link createAuthenticator}. */
export interface AuthenticatorOptions {
  readonly verifier: JwtVerifier;
  readonly resolver: CredentialResolver;
  /** The sign-in session cookie, when the API accepts one. */
  readonly sessionCookie?: {
    readonly name: string;
    /** Origins allowed to send unsafe (non-GET) requests with the cookie. */
    readonly allowedOrigins: readonly string[];
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The `Bearer` scheme and the spaces after it (RFC 6750 2.1). */
const BEARER_SCHEME = /^Bearer +/i;
/** RFC 6750's b64token: checked on tokens not verified before. */
const TOKEN68 = /^[A-Za-z0-9._~+/-]+=*$/;
const BEARER_USAGE = 'Send the access token as Authorization: Bearer <token>';

function invalidToken(description: string): UnauthorizedError {
  return new UnauthorizedError('The access token is invalid or expired.', {
    'www-authenticate': `Bearer error="invalid_token", error_description="${description.replace(/"/g, "'")}"`,
  });
}

/** An access token the API accepts: its verified claims and its caller. */
export interface VerifiedBearerToken extends AuthenticationResult {
  readonly claims: JwtClaims;
}

/**
 * The API's bearer check (SPEC 5.1), for any endpoint that must judge an
 * access token the same way: the token's shape, signature, `typ`, issuer,
 * audience and times (the verifier's), then the revocation watermarks, the
 * user, the client and the membership of the token's organization (the
 * resolver's). The tenant is the token's `org_id`, else `tenantHeader`; a
 * header naming another organization than the token's is refused.
 *
 * @throws UnauthorizedError when the token is malformed, invalid, expired or revoked, or its subject is gone.
 * @throws ProblemError `Tenant.Forbidden` when the caller may not work in the tenant.
 *
 * @example
 * const { claims, principal } = await verifyBearerToken(verifier, resolver, token);
 */
export async function verifyBearerToken(
  verifier: JwtVerifier,
  resolver: CredentialResolver,
  token: string,
  tenantHeader: string | null = null,
): Promise<VerifiedBearerToken> {
  let claims: JwtClaims;
  try {
    // A token verified before needs no promise of its own.
    const cached = verifier.cached(token);
    if (!cached && !TOKEN68.test(token)) throw invalidToken(BEARER_USAGE);
    claims = cached ?? (await verifier.verify(token));
  } catch (error) {
    if (error instanceof JwtError) throw invalidToken(error.message);
    throw error;
  }
  const orgClaim = typeof claims.org_id === 'string' ? claims.org_id : null;
  if (orgClaim && tenantHeader && tenantHeader !== orgClaim.toLowerCase()) {
    throw new ProblemError(
      'Tenant.Forbidden',
      "X-Tenant-Id names another organization than the token's; re-authorize with the organization hint to switch.",
    );
  }
  return { principal: await resolver.resolveToken(claims, orgClaim ?? tenantHeader), claims };
}

/**
 * Reads one cookie from a `Cookie` header: the first one of that name, without
 * the double quotes RFC 6265 allows around a value, percent-decoded when it is.
 */
export function readCookie(header: string | null, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index < 0) continue;
    if (part.slice(0, index).trim() === name) {
      let value = part.slice(index + 1).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      try {
        return decodeURIComponent(value);
      } catch {
        return value;
      }
    }
  }
  return undefined;
}

/**
 * The credential reader of the HTTP pipeline (SPEC 5.1, 5.5): an
 * `X-Api-Key` header, else a `Bearer` access token verified locally
 * ({@link verifyBearerToken}), else (when configured) the sign-in session cookie. The tenant is the token's
 * `org_id`, else the `X-Tenant-Id` header; a header naming another
 * organization than the token's is refused with 403 `Tenant.Forbidden`.
 *
 * @example
 * const authenticator = createAuthenticator({ verifier, resolver: identity.credentials });
 * const app = createHttpApp({ …, authenticator });
 */
export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const { verifier, resolver } = options;

  function requestedTenant(request: RequestHead): string | null {
    const header = request.headers.get('x-tenant-id');
    if (header === null || header.trim() === '') return null;
    if (!isUuid(header.trim())) {
      throw new ProblemError('Tenant.Forbidden', 'X-Tenant-Id must be an organization id.');
    }
    return header.trim().toLowerCase();
  }

  return {
    async authenticate(request: RequestHead, _info: AuthenticationInfo) {
      const tenantHeader = requestedTenant(request);
      const apiKey = request.headers.get('x-api-key');
      if (apiKey !== null && apiKey !== '') {
        const principal = await resolver.resolveApiKey(apiKey.trim(), tenantHeader);
        if (!principal) throw new UnauthorizedError('The API key is invalid, expired or revoked.');
        return { principal };
      }
      const authorization = request.headers.get('authorization');
      if (authorization !== null) {
        const scheme = BEARER_SCHEME.exec(authorization);
        const token = scheme ? authorization.slice(scheme[0].length).trimEnd() : '';
        if (token === '') throw invalidToken(BEARER_USAGE);
        return verifyBearerToken(verifier, resolver, token, tenantHeader);
      }
      if (options.sessionCookie && resolver.resolveSession) {
        const value = readCookie(request.headers.get('cookie'), options.sessionCookie.name);
        if (value) {
          if (!SAFE_METHODS.has(request.method)) {
            const origin = request.headers.get('origin');
            if (!origin || !options.sessionCookie.allowedOrigins.includes(origin)) {
              throw new ProblemError('Auth.Forbidden', 'Cookie-authenticated requests must come from the sign-in origin.');
            }
          }
          const principal = await resolver.resolveSession(value, tenantHeader);
          if (!principal) throw new UnauthorizedError('The sign-in session has ended.');
          return { principal };
        }
      }
      return null;
    },
  };
}
