import type { Clock } from '@idt/core';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { OidcProviderModule } from '../provider/load.js';

/** The `acr` of a sign-in with one factor (a password, a mailed code or link). */
export const ACR_ONE_FACTOR = 'urn:idt:acr:1fa';
/** The `acr` of a sign-in with two factors (`amr` holds `mfa`). */
export const ACR_MFA = 'urn:idt:acr:mfa';
/** The `acr` values the provider supports (discovery `acr_values_supported`), weakest first. */
export const ACR_VALUES: readonly string[] = Object.freeze([ACR_ONE_FACTOR, ACR_MFA]);

/**
 * The `amr` method RFC 8176 names for two factors: added once a second
 * factor joins the first (or a passkey verified the user, which is two).
 */
export const AMR_MFA = 'mfa';

/** The `acr` of a sign-in whose methods are `amr`. */
export function acrOf(amr: readonly string[]): string {
  return amr.includes(AMR_MFA) ? ACR_MFA : ACR_ONE_FACTOR;
}

/** The union of two `amr` lists in order, each method once. */
export function mergeAmr(first: readonly string[], second: readonly string[]): string[] {
  return [...new Set([...first, ...second])];
}

/** What an authorization request asks of the authentication: its `acr_values` and `claims` parameters. */
export interface AcrRequest {
  readonly acr_values?: unknown;
  readonly claims?: unknown;
}

/**
 * Whether a request asks the MFA `acr`: among its `acr_values`, or as the
 * `acr` (`value` or `values`) the `claims` parameter asks of the id token.
 * A client asking it gets a second step even inside a single sign-on
 * session; `acr_values` are voluntary in OpenID Connect, so a client that
 * needs two factors still checks the `acr` of the id token it gets.
 */
export function asksMfa(params: AcrRequest): boolean {
  if (typeof params.acr_values === 'string' && params.acr_values.split(' ').includes(ACR_MFA)) return true;
  if (typeof params.claims !== 'string' && typeof params.claims !== 'object') return false;
  let claims: unknown = params.claims;
  if (typeof claims === 'string') {
    try {
      claims = JSON.parse(claims);
    } catch {
      return false;
    }
  }
  const acr = (claims as { id_token?: { acr?: { value?: unknown; values?: unknown } } } | null)?.id_token?.acr;
  if (!acr) return false;
  return acr.value === ACR_MFA || (Array.isArray(acr.values) && acr.values.includes(ACR_MFA));
}

/** The login-prompt check that asks the MFA `acr` of a session without it. */
export const MFA_ACR_CHECK = 'idt_mfa_acr';

/**
 * The provider's interaction policy: oidc-provider's own prompts, with two
 * checks of the login prompt decided by idt.
 *
 * - `max_age` against the injected clock (oidc-provider reads `Date.now()`,
 *   while the sign-in pages stamp `auth_time` with the clock): a session
 *   older than `max_age` seconds, or any session with `max_age=0`, signs in
 *   again, and `auth_time` moves.
 * - {@link MFA_ACR_CHECK}: a request asking the MFA `acr` ({@link asksMfa})
 *   of a session signed in with one factor prompts for login, which the
 *   sign-in pages answer with the second step only (the session's account
 *   stays). The login just done in this authorization never prompts again.
 */
export function authenticationPolicy(oidc: OidcProviderModule, clock: Clock) {
  const { base, Check } = oidc.interactionPolicy;
  const policy = base();
  const login = policy.get('login');
  if (!login) throw new Error('oidc-provider has no login prompt');
  const maxAge = new Check('max_age', 'End-User authentication could not be obtained', (ctx: KoaContextWithOIDC) => {
    const { oidc: request } = ctx;
    const limit = request.params?.max_age;
    if (limit === undefined || limit === null) return Check.NO_NEED_TO_PROMPT;
    if (!request.session?.accountId) return Check.REQUEST_PROMPT;
    if ((request.result as { login?: unknown } | undefined)?.login) return Check.NO_NEED_TO_PROMPT;
    const seconds = Number(limit);
    const loginTs = request.session.authTime() ?? 0;
    const elapsed = Math.floor(clock.now().getTime() / 1000) - loginTs;
    return seconds === 0 || elapsed > seconds ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT;
  });
  const index = login.checks.findIndex((check) => check.reason === 'max_age');
  login.checks.splice(index === -1 ? login.checks.length : index, index === -1 ? 0 : 1, maxAge);
  login.checks.push(
    new Check(MFA_ACR_CHECK, 'the requested acr needs a second factor', (ctx: KoaContextWithOIDC) => {
      const { oidc: request } = ctx;
      if (!request.session?.accountId) return Check.NO_NEED_TO_PROMPT;
      if ((request.result as { login?: unknown } | undefined)?.login) return Check.NO_NEED_TO_PROMPT;
      if (!asksMfa(request.params as AcrRequest)) return Check.NO_NEED_TO_PROMPT;
      return request.session.acr === ACR_MFA ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
    }),
  );
  return policy;
}
