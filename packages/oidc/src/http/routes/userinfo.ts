import {
  type CredentialResolver,
  defineRoute,
  type HeaderReader,
  type JwtClaims,
  type JwtVerifier,
  json,
  type LightResponse,
  type Route,
  verifyBearerToken,
} from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import type { AccountDirectory } from '../../interactions/directory.js';
import { LOGIN_SCOPE_CLAIMS, USERINFO_PATH } from '../../provider/create-provider.js';
import { OAUTH_ERRORS, OPENID_TAG } from './provider-docs.js';

function bearerError(status: 401 | 403, error: 'invalid_token' | 'insufficient_scope', description: string): LightResponse {
  return json(
    { error, error_description: description },
    {
      status,
      headers: { 'www-authenticate': `Bearer error="${error}", error_description="${description}"`, 'cache-control': 'no-store' },
    },
  );
}

/**
 * `GET|POST /connect/userinfo` (SPEC 4.3): the claims the access token's
 * scopes release (SPEC 2.3). Access tokens are JWTs for the API, so idt
 * serves userinfo itself: the token passes the API's own bearer check
 * (`verifyBearerToken`: signature, times, revocation, user, client, membership); claims follow the token's organization.
 */
export function createUserinfoRoutes(verifier: JwtVerifier, resolver: CredentialResolver, directory: AccountDirectory): Route[] {
  const handler = async ({ headers }: { headers: HeaderReader }) => {
    const header = headers.get('authorization') ?? '';
    const match = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header);
    if (!match?.[1]) return bearerError(401, 'invalid_token', 'Send the access token as Authorization: Bearer');
    let claims: JwtClaims;
    try {
      ({ claims } = await verifyBearerToken(verifier, resolver, match[1]));
    } catch (error) {
      if (!(error instanceof UnauthorizedError || error instanceof ProblemError)) throw error;
      return bearerError(401, 'invalid_token', error.message.replace(/"/g, "'"));
    }
    const scopes = new Set(String(claims.scope ?? '').split(' '));
    if (!scopes.has('openid') || claims.sub === claims.client_id) {
      return bearerError(403, 'insufficient_scope', 'The userinfo endpoint needs a user token with the openid scope');
    }
    const account = await directory.accountClaims(claims.sub, typeof claims.org_id === 'string' ? claims.org_id : null);
    if (!account) return bearerError(401, 'invalid_token', 'The user is deactivated or unknown');
    const released: Record<string, unknown> = { sub: account.sub };
    for (const [scope, names] of Object.entries(LOGIN_SCOPE_CLAIMS)) {
      if (!scopes.has(scope)) continue;
      for (const name of names) {
        const value = (account as unknown as Record<string, unknown>)[name];
        if (value !== undefined) released[name] = value;
      }
    }
    return json(released, { headers: { 'cache-control': 'no-store' } });
  };
  return (['GET', 'POST'] as const).map((method) =>
    defineRoute({
      method,
      path: USERINFO_PATH,
      operationId: method === 'GET' ? 'getUserinfo' : 'postUserinfo',
      summary: 'OpenID Connect userinfo',
      description: "The claims of the signed-in user that the access token's scopes release (`profile`, `email`, `roles`).",
      tags: [OPENID_TAG],
      auth: 'anonymous',
      ratePolicy: false,
      openApi: { security: [{ bearerAuth: [] }, { oauth2: ['openid'] }], extensions: OAUTH_ERRORS },
      responses: {
        200: { description: 'Claims by scope' },
        401: { description: '`invalid_token` (in `WWW-Authenticate`)' },
        403: { description: '`insufficient_scope`: no `openid` scope, or a service token' },
      },
      handler,
    }),
  );
}
