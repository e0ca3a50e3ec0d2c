import { UpstreamTransportError } from './guarded-fetch.js';

/** The reasons an upstream OpenID sign-in is refused. */
export const UPSTREAM_OIDC_REASONS = [
  'access-denied',
  'upstream-error',
  'state-mismatch',
  'nonce-mismatch',
  'wrong-issuer',
  'wrong-audience',
  'expired-id-token',
  'invalid-id-token',
  'transaction-expired',
  'timeout',
  'unreachable',
  'invalid-response',
] as const;

/**
 * Why an upstream OpenID sign-in was refused, stable for pages, audits and tests:
 *
 * - `access-denied`: the person (or the provider's policy) refused (`error=access_denied`);
 * - `upstream-error`: the provider answered another OAuth error (its code is kept for logs);
 * - `state-mismatch`: the callback does not belong to the transaction (or to this connection);
 * - `nonce-mismatch`: the id token was not issued for this transaction;
 * - `wrong-issuer`: the provider, the callback or the id token names another issuer than the connection;
 * - `wrong-audience`: the id token was issued to another client;
 * - `expired-id-token`: the id token expired, or was issued too long ago, on the injected clock;
 * - `invalid-id-token`: a bad signature, no matching key, or a malformed id token;
 * - `transaction-expired`: the callback came after the transaction's `expiresAt`;
 * - `timeout`: the provider did not answer within the deadline;
 * - `unreachable`: the provider could not be reached, or the outbound guard refused its host;
 * - `invalid-response`: the provider answered something that is not what the protocol says.
 */
export type UpstreamOidcReason = (typeof UPSTREAM_OIDC_REASONS)[number];

/** A refused upstream sign-in. Only `reason` is for people; `detail` and `upstreamError` are for logs. */
export interface UpstreamOidcFailure {
  readonly ok: false;
  readonly reason: UpstreamOidcReason;
  /** What went wrong, for logs and audits only: never show it to the person. */
  readonly detail: string;
  /** The provider's own `error` code, when it sent one (for logs only). */
  readonly upstreamError?: string;
}

/**
 * An upstream sign-in that could not start (discovery failed): its reason
 * is `timeout`, `unreachable`, `wrong-issuer` or `invalid-response`. The
 * message is {@link UpstreamOidcFailure.detail}, for logs only.
 */
export class UpstreamOidcError extends Error {
  readonly reason: UpstreamOidcReason;
  readonly detail: string;

  constructor(failure: UpstreamOidcFailure) {
    super(failure.detail);
    this.name = 'UpstreamOidcError';
    this.reason = failure.reason;
    this.detail = failure.detail;
  }
}

/** Builds a failure. */
export function upstreamFailure(reason: UpstreamOidcReason, detail: string, upstreamError?: string): UpstreamOidcFailure {
  return { ok: false, reason, detail, ...(upstreamError ? { upstreamError } : {}) };
}

interface Coded {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly name?: unknown;
  readonly cause?: unknown;
  readonly error?: unknown;
  readonly error_description?: unknown;
  readonly claim?: unknown;
  readonly attribute?: unknown;
}

/** The error and its causes, outermost first (a chain of at most a few links). */
function chainOf(error: unknown): Coded[] {
  const chain: Coded[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current && typeof current === 'object'; depth++) {
    chain.push(current as Coded);
    current = (current as Coded).cause;
  }
  return chain;
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');

/** The OAuth `error` code of a provider's answer, kept to a short token. */
function errorCode(value: unknown): string | undefined {
  const code = text(value);
  return /^[\x20-\x7E]{1,64}$/.test(code) ? code : undefined;
}

/**
 * Sorts an error of openid-client (or of the transport under it) into a
 * {@link UpstreamOidcReason}. The library's message goes to `detail` only.
 */
export function classifyUpstreamError(error: unknown): UpstreamOidcFailure {
  const chain = chainOf(error);
  const detail = chain
    .map((link) => text(link.message))
    .filter(Boolean)
    .join(': ')
    .slice(0, 500);
  const transport = chain.find((link) => link instanceof UpstreamTransportError) as UpstreamTransportError | undefined;
  if (transport) return upstreamFailure(transport.reason, transport.message);
  if (chain.some((link) => link.name === 'TimeoutError' || link.name === 'AbortError')) {
    return upstreamFailure('timeout', detail || 'The request timed out');
  }
  const codes = chain.map((link) => text(link.code));
  const claim = chain.map((link) => text(link.claim)).find(Boolean) ?? '';
  const attribute = chain.map((link) => text(link.attribute)).find(Boolean) ?? '';
  const has = (code: string) => codes.includes(code);

  if (has('OAUTH_AUTHORIZATION_RESPONSE_ERROR')) {
    const code = errorCode(chain.find((link) => link.error !== undefined)?.error);
    return upstreamFailure(code === 'access_denied' ? 'access-denied' : 'upstream-error', detail, code);
  }
  if (has('OAUTH_RESPONSE_BODY_ERROR') || has('OAUTH_WWW_AUTHENTICATE_CHALLENGE')) {
    return upstreamFailure('upstream-error', detail, errorCode(chain.find((link) => link.error !== undefined)?.error));
  }
  if (has('OAUTH_JWT_CLAIM_COMPARISON_FAILED')) {
    if (claim === 'nonce') return upstreamFailure('nonce-mismatch', detail);
    if (claim === 'iss') return upstreamFailure('wrong-issuer', detail);
    if (claim === 'aud' || claim === 'azp') return upstreamFailure('wrong-audience', detail);
    return upstreamFailure('invalid-id-token', detail);
  }
  if (has('OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED')) {
    return upstreamFailure(attribute === 'issuer' ? 'wrong-issuer' : 'invalid-response', detail);
  }
  if (has('OAUTH_JWT_TIMESTAMP_CHECK_FAILED')) {
    return upstreamFailure(claim === 'exp' || claim === 'iat' ? 'expired-id-token' : 'invalid-id-token', detail);
  }
  if (has('OAUTH_KEY_SELECTION_FAILED')) return upstreamFailure('invalid-id-token', detail);
  if (has('OAUTH_INVALID_RESPONSE') && /\bJWT\b|ID Token/i.test(detail)) return upstreamFailure('invalid-id-token', detail);
  if (chain.some((link) => link instanceof TypeError && /fetch failed/i.test(text(link.message)))) {
    return upstreamFailure('unreachable', detail);
  }
  return upstreamFailure('invalid-response', detail || 'The provider answered something unexpected');
}
