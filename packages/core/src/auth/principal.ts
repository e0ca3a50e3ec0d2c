import type { RequestHead } from '../request-head.js';

/** How a caller authenticated. */
export type PrincipalKind = 'user' | 'service' | 'apiKey';

/**
 * The authenticated caller of a request, with permissions already expanded
 * for the organization the request works in.
 */
export interface Principal {
  /** `user` (interactive token), `service` (client credentials) or `apiKey`. */
  readonly kind: PrincipalKind;
  /** The token subject: a user id, or a client id for service accounts. */
  readonly subject: string;
  /** The user behind the call; `null` for service accounts. */
  readonly userId: string | null;
  /** The OAuth client the token was issued to (`azp`), when there is one. */
  readonly clientId: string | null;
  /** The organization the request works in, or `null` when none resolved. */
  readonly organizationId: string | null;
  /** Permissions in that organization. */
  readonly permissions: ReadonlySet<string>;
  /** Scopes granted to the credential. */
  readonly scopes: ReadonlySet<string>;
  /** The single sign-on session id (`sid`) of an interactive token. */
  readonly sessionId: string | null;
  /** A display name for audit trails and comments. */
  readonly name: string | null;
  /** The id of the credential itself: an API key id or a token `jti`. */
  readonly credentialId: string | null;
}

/** What an {@link Authenticator} found. */
export interface AuthenticationResult {
  readonly principal: Principal;
}

/** Extra facts about a request an authenticator may use. */
export interface AuthenticationInfo {
  readonly clientIp: string;
}

/**
 * Reads the credential of a request. Returns `null` when the request carries
 * none; throws `UnauthorizedError` (401) when it carries an invalid one, or a
 * `ProblemError` (e.g. 403 for an `X-Tenant-Id` the caller may not use).
 */
export interface Authenticator {
  authenticate(request: RequestHead, info: AuthenticationInfo): Promise<AuthenticationResult | null>;
}

/** The outcome of counting one request against a rate-limit policy. */
export interface RateLimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly retryAfterSeconds: number;
}
