import { ConfigError } from '@idt/core';
import { createRemoteJWKSet, type JWTVerifyGetKey, customFetch as joseCustomFetch } from 'jose';
import * as oidc from 'openid-client';
import type { BffConfig } from '../config.js';
import type { LoginTransaction } from '../cookies/jar.js';
import type { RefreshOutcome, SessionRefresher } from '../sessions/sessions.js';

/** Seconds the BFF waits on one call to the provider. */
const PROVIDER_TIMEOUT_SECONDS = 10;

/** The tokens of a code exchange. */
export interface CodeExchange {
  readonly accessToken: string;
  readonly expiresInSeconds: number | undefined;
  readonly refreshToken: string | null;
  readonly idToken: string;
  readonly claims: Readonly<Record<string, unknown>>;
}

/** Thrown when the provider refused the code exchange or its answer did not validate (the sign-in must start again). */
export class CodeExchangeRefusedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'CodeExchangeRefusedError';
  }
}

/** The BFF's view of its OpenID provider: one confidential client of it. */
export interface ProviderClient extends SessionRefresher {
  /** The issuer, exactly as advertised (and configured). */
  readonly issuer: string;
  /** The server metadata from discovery. */
  readonly metadata: Readonly<oidc.ServerMetadata>;
  /** The authorization URL for a login transaction (PKCE S256, state, nonce). */
  authorizationUrl(
    transaction: LoginTransaction,
    extra: { readonly organization?: string | undefined; readonly prompt?: string | undefined },
  ): Promise<URL>;
  /**
   * Redeems the code of a callback. `callbackParams` is the callback's query;
   * the `redirect_uri` sent is the configured one, never the request's URL.
   *
   * @throws CodeExchangeRefusedError when refused or invalid; other errors when the provider could not be reached.
   */
  exchangeCode(callbackParams: URLSearchParams, transaction: LoginTransaction): Promise<CodeExchange>;
  /** The RP-initiated logout URL (`id_token_hint`, `post_logout_redirect_uri`, `client_id`). */
  endSessionUrl(idTokenHint: string | null): string | undefined;
  /** Best-effort RFC 7009 revocation of a refresh token. */
  revokeRefreshToken(refreshToken: string): Promise<void>;
  /** The provider's signing keys (JWKS from discovery), for logout tokens. */
  readonly jwks: JWTVerifyGetKey;
}

/** Options of {@link connectProvider}. */
export interface ConnectProviderOptions {
  /** What the BFF sends server-to-server requests with (the global `fetch` by default). */
  readonly fetch?: typeof fetch;
}

/**
 * Discovers the provider and checks that it advertises exactly the
 * configured issuer (SPEC 5.4: path prefix included, no trailing-slash
 * leniency), then returns the client the BFF signs users in with
 * (`client_secret_basic`).
 *
 * With {@link BffConfig.metadataUrl} (split horizon) the discovery document
 * is read there; endpoints it names by the internal origin are rewritten to
 * the public issuer's origin (the browser only ever sees public URLs), and
 * the BFF's own calls to the public origin (token, JWKS, revocation) are
 * sent to the internal origin instead.
 *
 * @throws ConfigError naming `OIDC_ISSUER` when the advertised issuer differs; Error when discovery fails.
 */
export async function connectProvider(config: BffConfig, options: ConnectProviderOptions = {}): Promise<ProviderClient> {
  const baseFetch = options.fetch ?? fetch;
  const publicOrigin = new URL(config.issuer).origin;
  const internalOrigin = config.metadataUrl ? new URL(config.metadataUrl).origin : publicOrigin;
  const route = (url: string): string =>
    internalOrigin !== publicOrigin && (url === publicOrigin || url.startsWith(`${publicOrigin}/`))
      ? `${internalOrigin}${url.slice(publicOrigin.length)}`
      : url;
  const send = ((url: string | URL | Request, init?: RequestInit) => {
    const target = url instanceof Request ? url.url : String(url);
    return baseFetch(route(target), init);
  }) as typeof fetch;

  const discoveryUrl = config.metadataUrl ?? `${config.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let metadata: oidc.ServerMetadata;
  try {
    const response = await send(discoveryUrl, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_SECONDS * 1000),
    });
    if (!response.ok) throw new Error(`it answered HTTP ${response.status}`);
    metadata = (await response.json()) as oidc.ServerMetadata;
  } catch (error) {
    throw new Error(
      `The BFF could not read the identity provider's discovery document at ${discoveryUrl}: ${(error as Error).message}. Check OIDC_ISSUER${config.metadataUrl ? ' and OIDC_METADATA_URL' : ''} and that the provider is running.`,
      { cause: error },
    );
  }
  if (typeof metadata?.issuer !== 'string' || metadata.issuer !== config.issuer) {
    throw new ConfigError([
      `OIDC_ISSUER: is "${config.issuer}" but the provider at ${discoveryUrl} advertises "${String(metadata?.issuer)}"; set OIDC_ISSUER to exactly the advertised issuer (path prefix included)`,
    ]);
  }
  if (internalOrigin !== publicOrigin) metadata = publicMetadata(metadata, internalOrigin, publicOrigin);
  if (!metadata.authorization_endpoint || !metadata.token_endpoint || !metadata.jwks_uri) {
    throw new Error(`The discovery document at ${discoveryUrl} lacks an authorization, token or JWKS endpoint`);
  }

  const configuration = new oidc.Configuration(
    metadata,
    config.clientId,
    { client_secret: config.clientSecret },
    oidc.ClientSecretBasic(config.clientSecret),
  );
  configuration[oidc.customFetch] = (url, init) => send(url, init as RequestInit);
  configuration.timeout = PROVIDER_TIMEOUT_SECONDS;
  if (config.issuer.startsWith('http:') || internalOrigin.startsWith('http:')) oidc.allowInsecureRequests(configuration);

  const jwks = createRemoteJWKSet(new URL(route(metadata.jwks_uri)), {
    timeoutDuration: PROVIDER_TIMEOUT_SECONDS * 1000,
    [joseCustomFetch]: (url: string, init: RequestInit) => baseFetch(url, init),
  });

  return {
    issuer: metadata.issuer,
    metadata,
    jwks,
    async authorizationUrl(transaction, extra) {
      return oidc.buildAuthorizationUrl(configuration, {
        redirect_uri: config.redirectUri,
        scope: config.scopes.join(' '),
        state: transaction.state,
        nonce: transaction.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(transaction.codeVerifier),
        code_challenge_method: 'S256',
        ...(extra.organization ? { organization: extra.organization } : {}),
        ...(extra.prompt ? { prompt: extra.prompt } : {}),
      });
    },
    async exchangeCode(callbackParams, transaction) {
      const currentUrl = new URL(config.redirectUri);
      currentUrl.search = callbackParams.toString();
      let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
      try {
        tokens = await oidc.authorizationCodeGrant(configuration, currentUrl, {
          pkceCodeVerifier: transaction.codeVerifier,
          expectedState: transaction.state,
          expectedNonce: transaction.nonce,
          idTokenExpected: true,
        });
      } catch (error) {
        if (isTransient(error)) throw error;
        throw new CodeExchangeRefusedError(`The code exchange failed: ${(error as Error).message}`, { cause: error });
      }
      const claims = tokens.claims();
      if (!claims || !tokens.id_token) throw new CodeExchangeRefusedError('The token response carried no ID token');
      return {
        accessToken: tokens.access_token,
        expiresInSeconds: tokens.expiresIn(),
        refreshToken: tokens.refresh_token ?? null,
        idToken: tokens.id_token,
        claims: claims as Record<string, unknown>,
      };
    },
    async refresh(refreshToken): Promise<RefreshOutcome> {
      try {
        const tokens = await oidc.refreshTokenGrant(configuration, refreshToken);
        return {
          kind: 'refreshed',
          tokens: {
            accessToken: tokens.access_token,
            expiresInSeconds: tokens.expiresIn(),
            refreshToken: tokens.refresh_token,
            idToken: tokens.id_token,
            claims: tokens.claims() as Record<string, unknown> | undefined,
          },
        };
      } catch (error) {
        // Only invalid_grant ends a session (SPEC 7.5: a revoked or replayed refresh token). An
        // invalid_client may be a temporary lockout (SPEC 8.2); network and 5xx are transient.
        if (error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant') return { kind: 'refused', error };
        return { kind: 'unavailable', error };
      }
    },
    endSessionUrl(idTokenHint) {
      if (!metadata.end_session_endpoint) return undefined;
      return oidc
        .buildEndSessionUrl(configuration, {
          ...(idTokenHint ? { id_token_hint: idTokenHint } : {}),
          ...(config.postLogoutRedirectUri ? { post_logout_redirect_uri: config.postLogoutRedirectUri } : {}),
        })
        .toString();
    },
    async revokeRefreshToken(refreshToken) {
      if (!metadata.revocation_endpoint) return;
      await oidc.tokenRevocation(configuration, refreshToken, { token_type_hint: 'refresh_token' });
    },
  };
}

/**
 * Discovery read at an internal address may name endpoints by that address
 * (a provider that builds them from the request's host): they are written
 * with the public origin, so the browser is always sent to public URLs; the
 * BFF's own calls are routed back to the internal origin when sent.
 */
function publicMetadata(metadata: oidc.ServerMetadata, internalOrigin: string, publicOrigin: string): oidc.ServerMetadata {
  const rewritten: Record<string, unknown> = { ...metadata };
  for (const [key, value] of Object.entries(metadata)) {
    if ((key.endsWith('_endpoint') || key === 'jwks_uri') && typeof value === 'string') {
      if (value === internalOrigin || value.startsWith(`${internalOrigin}/`)) {
        rewritten[key] = `${publicOrigin}${value.slice(internalOrigin.length)}`;
      }
    }
  }
  return rewritten as oidc.ServerMetadata;
}

/** Whether a failed call to the provider may succeed later: no answer, a 5xx, a rate limit or an answer that is not OAuth JSON. */
export function isTransient(error: unknown): boolean {
  if (error instanceof oidc.ResponseBodyError) return error.status >= 500 || error.status === 429;
  if (error instanceof oidc.AuthorizationResponseError) return false;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || code === 'OAUTH_RESPONSE_IS_NOT_JSON') return true;
  // fetch failures and timeouts
  return (
    error instanceof TypeError ||
    (error as Error | null)?.name === 'TimeoutError' ||
    (error as Error | null)?.name === 'AbortError'
  );
}
