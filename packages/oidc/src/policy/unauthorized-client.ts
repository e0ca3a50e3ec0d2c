/**
 * What oidc-provider answers (400 `invalid_request`) when an authenticated
 * client asks the token endpoint for a grant type it is not registered for,
 * or the pushed authorization request endpoint for a response type it may
 * not use. `patches.test.ts` checks that the provider still words them so.
 */
export const NOT_ALLOWED_FOR_CLIENT = {
  grantType: 'requested grant type is not allowed for this client',
  responseType: 'requested response_type is not allowed for this client',
} as const;

/** The grant types idt serves (SPEC 1): the only ones an answer names. */
const GRANT_TYPES = new Set(['authorization_code', 'refresh_token', 'client_credentials']);

/** An OAuth error response body. */
export interface OAuthErrorBody {
  readonly error: string;
  readonly error_description?: string;
}

/**
 * The answer to a client asking for what its registration does not allow:
 * `unauthorized_client` (RFC 6749 5.2 at the token endpoint, 4.1.2.1 for a
 * pushed authorization request), not oidc-provider's `invalid_request`. An
 * application asking for `client_credentials` and a service account asking
 * for `authorization_code` or `refresh_token` are answered alike, with the
 * same 400 status. Any other body is answered `undefined` (kept as it is).
 *
 * @example
 * unauthorizedClient({ error: 'invalid_request', error_description: 'requested grant type is not allowed for this client' }, 'client_credentials');
 * // { error: 'unauthorized_client', error_description: 'This client is not registered for the client_credentials grant.' }
 */
export function unauthorizedClient(body: unknown, grantType: unknown): OAuthErrorBody | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { error, error_description: description } = body as Partial<OAuthErrorBody>;
  if (error !== 'invalid_request') return undefined;
  if (description === NOT_ALLOWED_FOR_CLIENT.grantType) {
    return {
      error: 'unauthorized_client',
      error_description:
        typeof grantType === 'string' && GRANT_TYPES.has(grantType)
          ? `This client is not registered for the ${grantType} grant.`
          : 'This client is not registered for the requested grant type.',
    };
  }
  if (description === NOT_ALLOWED_FOR_CLIENT.responseType) {
    return {
      error: 'unauthorized_client',
      error_description: 'This client may not ask for an authorization code: it has no authorization_code grant.',
    };
  }
  return undefined;
}
