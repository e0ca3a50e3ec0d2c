import type { JwtClaims, JwtVerifier, Principal, RequestHead } from '@idt/core';
import { JwtError } from '@idt/core';
import { UnauthorizedError } from '@idt/problem';

const BEARER = /^Bearer +(\S+) *$/i;

/** The caller of a hub request and the claims of its access token. */
export interface HubCaller {
  readonly principal: Principal;
  readonly claims: JwtClaims;
}

/**
 * Authenticates a hub request (negotiate or upgrade) by its access token: the
 * `Authorization` header, else the `access_token` query (browsers'
 * WebSockets cannot set headers).
 *
 * @throws UnauthorizedError without a token, with an invalid or expired one, or when the API would refuse its caller.
 */
export type HubAuthentication = (authorization: string | null | undefined, url: URL) => Promise<HubCaller>;

/** The bearer of a request: the Authorization header, else the `access_token` query. */
function bearerOf(authorization: string | null | undefined, url: URL): string | null {
  if (authorization) {
    const match = BEARER.exec(authorization);
    if (!match) throw new UnauthorizedError('Send the access token as Authorization: Bearer <token> or access_token=<token>.');
    return match[1] as string;
  }
  const query = url.searchParams.get('access_token');
  return query === null || query === '' ? null : query;
}

/** Creates the {@link HubAuthentication}: `verifier` checks the token (for `exp`), `authenticate` resolves its caller like the API. */
export function createHubAuthentication(options: {
  readonly verifier: JwtVerifier;
  authenticate(request: RequestHead): Promise<Principal | null>;
  now(): number;
}): HubAuthentication {
  const { verifier, now } = options;
  return async (authorizationHeader, url) => {
    const token = bearerOf(authorizationHeader, url);
    if (token === null)
      throw new UnauthorizedError('The realtime hub needs an access token (Authorization: Bearer, or access_token=).');
    let claims: JwtClaims;
    try {
      claims = await verifier.verify(token);
    } catch (error) {
      if (error instanceof JwtError) throw new UnauthorizedError(`The access token is invalid: ${error.message}.`);
      throw error;
    }
    // The API tolerates clock skew; a connection whose token already expired would be closed at once.
    if (claims.exp * 1000 <= now()) throw new UnauthorizedError('The access token has expired.');
    const authorization = `Bearer ${token}`;
    const principal = await options.authenticate({
      method: 'GET',
      url: url.href,
      headers: { get: (name) => (name.toLowerCase() === 'authorization' ? authorization : null) },
    });
    if (!principal) throw new UnauthorizedError();
    return { principal, claims };
  };
}
