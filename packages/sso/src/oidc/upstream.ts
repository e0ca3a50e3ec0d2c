import { createHash, timingSafeEqual } from 'node:crypto';
import { type Clock, type OutboundResolver, systemClock } from '@idt/core';
import * as client from 'openid-client';
import type { AttributeMapping, OidcConnectionConfig } from '../connections/records.js';
import { classifyUpstreamError, UpstreamOidcError, type UpstreamOidcFailure, upstreamFailure } from './failure.js';
import { createGuardedFetch, type GuardedFetch } from './guarded-fetch.js';

/** How long a discovered provider (its metadata and keys) is kept: fifteen minutes on the injected clock. */
export const DEFAULT_DISCOVERY_TTL_MS = 15 * 60_000;
/** How long an authorization transaction waits for its callback: ten minutes. */
export const DEFAULT_OIDC_TRANSACTION_TTL_MS = 10 * 60_000;
/** The clock skew accepted on id token timestamps: five minutes, as for SAML and idt's own tokens. */
export const DEFAULT_OIDC_CLOCK_TOLERANCE_S = 300;
/** At most this many providers are kept in the discovery cache; the oldest entry goes first. */
const MAX_CACHED_PROVIDERS = 500;

/** The id token claims that come from the id token even when userinfo also names them. */
const PROTOCOL_CLAIMS = new Set([
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'nbf',
  'nonce',
  'azp',
  'auth_time',
  'at_hash',
  'c_hash',
  'acr',
  'amr',
  'sid',
  'jti',
]);

/** What the relying party needs of an `oidc` connection (a {@link ConnectionRecord} fits). */
export interface UpstreamOidcConnection {
  readonly id: string;
  readonly oidc: Pick<OidcConnectionConfig, 'issuer' | 'clientId' | 'scopes'> | null;
  /** The opened client secret. */
  readonly clientSecret: string | null;
  /** Which claim says the e-mail is verified (`emailVerified`, default `email_verified`). */
  readonly attributeMapping?: AttributeMapping;
}

/** Options of {@link createUpstreamOidc}. */
export interface UpstreamOidcOptions {
  /** The clock that decides transaction expiry, cache lifetimes and id token time checks. */
  readonly clock?: Clock;
  /** Accept issuers on loopback and private hosts over http (local demos and tests). */
  readonly allowPrivateHosts: boolean;
  /** The deadline of each request to the provider, in milliseconds (5,000). */
  readonly timeoutMs?: number;
  /** The largest answer read from the provider, in bytes (1 MiB). */
  readonly maxBytes?: number;
  /** Resolves host names for the outbound guard; the system resolver by default. */
  readonly resolve?: OutboundResolver;
  /**
   * The transport; {@link createGuardedFetch} over the options above by
   * default. Tests wrap it to play a misbehaving provider.
   */
  readonly fetch?: GuardedFetch;
  /** How long discovery results are kept ({@link DEFAULT_DISCOVERY_TTL_MS}). */
  readonly discoveryTtlMs?: number;
  /** How long a transaction waits for its callback ({@link DEFAULT_OIDC_TRANSACTION_TTL_MS}). */
  readonly transactionTtlMs?: number;
  /** Accepted skew on id token timestamps, in seconds ({@link DEFAULT_OIDC_CLOCK_TOLERANCE_S}). */
  readonly clockToleranceSeconds?: number;
}

/** What {@link UpstreamOidc.startAuthorization} is asked. */
export interface UpstreamAuthorizationRequest {
  readonly connection: UpstreamOidcConnection;
  /** idt's callback, registered at the provider: `{publicBaseUrl}/sso/oidc/callback`. */
  readonly redirectUri: string;
  /** The address the person typed, passed on as `login_hint`. */
  readonly loginHint?: string;
}

/**
 * What the caller keeps server-side (never in the browser) until the
 * callback: everything {@link UpstreamOidc.completeAuthorization} checks the
 * callback against.
 */
export interface UpstreamTransaction {
  readonly connectionId: string;
  /** The connection's issuer when the authorization started. */
  readonly issuer: string;
  readonly redirectUri: string;
  readonly state: string;
  readonly nonce: string;
  /** The PKCE verifier (S256). */
  readonly codeVerifier: string;
  /** After this instant the callback is refused (`transaction-expired`); a stored ISO string is accepted. */
  readonly expiresAt: Date | string;
}

/** A started authorization: send the browser to `url`, keep the rest as the transaction. */
export interface UpstreamAuthorization extends UpstreamTransaction {
  /** The provider's authorization endpoint with the request in its query. */
  readonly url: string;
  readonly expiresAt: Date;
}

/** What {@link UpstreamOidc.completeAuthorization} is given. */
export interface UpstreamCallback {
  readonly connection: UpstreamOidcConnection;
  readonly transaction: UpstreamTransaction;
  /** The URL the browser came back to, with its query (`code`, `state`, `iss` or `error`). */
  readonly callbackUrl: string | URL;
}

/** A verified upstream sign-in. */
export interface UpstreamOidcSuccess {
  readonly ok: true;
  /** The provider's `sub`: with the connection, the key of the identity (never the e-mail alone). */
  readonly subject: string;
  /** The issuer of the id token. */
  readonly issuer: string;
  /**
   * The id token's claims, with userinfo's merged over the profile claims
   * (the protocol claims such as `iss`, `sub`, `aud` and `nonce` stay the
   * id token's; userinfo's `sub` must match).
   */
  readonly claims: Readonly<Record<string, unknown>>;
  /** Whether the provider asserts the e-mail verified (the connection's `emailVerified` claim is `true`). */
  readonly emailVerified: boolean;
}

/** The outcome of a callback. */
export type UpstreamOidcResult = UpstreamOidcSuccess | UpstreamOidcFailure;

/**
 * The OpenID Connect relying party of `oidc` connections, over
 * `openid-client`: authorization code with PKCE (S256), state and nonce;
 * the id token validated (signature, issuer, audience, nonce, expiry on the
 * injected clock); userinfo merged. Every request goes through the outbound
 * guard with a deadline and a size limit.
 */
export interface UpstreamOidc {
  /**
   * Discovers the connection's provider (cached) and builds the
   * authorization URL.
   *
   * @throws UpstreamOidcError when discovery fails (`timeout`, `unreachable`, `wrong-issuer`, `invalid-response`)
   */
  startAuthorization(request: UpstreamAuthorizationRequest): Promise<UpstreamAuthorization>;
  /** Checks the callback against the transaction, redeems the code and validates what comes back. Never throws. */
  completeAuthorization(callback: UpstreamCallback): Promise<UpstreamOidcResult>;
  /** Drops the cached discovery of an issuer (all of them without one), e.g. after a connection changed. */
  forget(issuer?: string): void;
}

interface CachedProvider {
  readonly server: client.ServerMetadata;
  jwks: client.ExportedJWKSCache | undefined;
  readonly expiresAt: number;
}

function sameSecret(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

function isBrowserUrl(value: unknown, allowHttp: boolean): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || (allowHttp && url.protocol === 'http:');
  } catch {
    return false;
  }
}

/**
 * Creates the OpenID Connect relying party for `oidc` connections.
 *
 * @example
 * const upstream = createUpstreamOidc({ clock, allowPrivateHosts: false });
 * const started = await upstream.startAuthorization({ connection, redirectUri: `${publicBaseUrl}/sso/oidc/callback` });
 * // keep `started` (without `url`) server-side, redirect to started.url; then, on the callback:
 * const result = await upstream.completeAuthorization({ connection, transaction, callbackUrl: request.url });
 * if (!result.ok) log.warn({ reason: result.reason, detail: result.detail });
 */
export function createUpstreamOidc(options: UpstreamOidcOptions): UpstreamOidc {
  const clock = options.clock ?? systemClock;
  const allowHttp = options.allowPrivateHosts;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const transport =
    options.fetch ??
    createGuardedFetch({
      allowPrivateHosts: options.allowPrivateHosts,
      timeoutMs,
      ...(options.maxBytes !== undefined ? { maxBytes: options.maxBytes } : {}),
      ...(options.resolve ? { resolve: options.resolve } : {}),
    });
  const customFetch = transport as unknown as client.CustomFetch;
  const discoveryTtlMs = options.discoveryTtlMs ?? DEFAULT_DISCOVERY_TTL_MS;
  const transactionTtlMs = options.transactionTtlMs ?? DEFAULT_OIDC_TRANSACTION_TTL_MS;
  const tolerance = options.clockToleranceSeconds ?? DEFAULT_OIDC_CLOCK_TOLERANCE_S;
  // openid-client reads the wall clock; it is told how far the injected clock is from it.
  const skewSeconds = () => Math.round((clock.now().getTime() - Date.now()) / 1000);
  const timeoutSeconds = Math.max(1, Math.ceil(timeoutMs / 1000));

  const cache = new Map<string, CachedProvider>();
  const pending = new Map<string, Promise<CachedProvider>>();

  function issuerUrl(issuer: string): URL {
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw new UpstreamOidcError(upstreamFailure('unreachable', `The issuer is not an absolute URL: ${issuer}`));
    }
    if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
      throw new UpstreamOidcError(upstreamFailure('unreachable', `The issuer must be an https URL: ${url.origin}`));
    }
    return url;
  }

  async function discover(issuer: string): Promise<CachedProvider> {
    const url = issuerUrl(issuer);
    let discovered: client.Configuration;
    try {
      // The client id does not matter to discovery; the configuration is rebuilt per use.
      discovered = await client.discovery(url, 'discovery', undefined, undefined, {
        [client.customFetch]: customFetch,
        timeout: timeoutSeconds,
        ...(allowHttp && url.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : {}),
      });
    } catch (error) {
      throw new UpstreamOidcError(classifyUpstreamError(error));
    }
    const server = discovered.serverMetadata();
    const missing = (['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const).filter((field) => !server[field]);
    if (missing.length > 0) {
      throw new UpstreamOidcError(
        upstreamFailure('invalid-response', `The discovery document of ${issuer} has no ${missing.join(', ')}`),
      );
    }
    // The browser is sent there: never a javascript: or data: URL.
    if (!isBrowserUrl(server.authorization_endpoint, allowHttp)) {
      throw new UpstreamOidcError(
        upstreamFailure('invalid-response', `The authorization endpoint of ${issuer} is not an https URL`),
      );
    }
    return { server, jwks: undefined, expiresAt: clock.now().getTime() + discoveryTtlMs };
  }

  async function providerOf(issuer: string): Promise<CachedProvider> {
    const cached = cache.get(issuer);
    if (cached && cached.expiresAt > clock.now().getTime()) return cached;
    const inFlight = pending.get(issuer);
    if (inFlight) return inFlight;
    const attempt = discover(issuer)
      .then((provider) => {
        cache.delete(issuer);
        cache.set(issuer, provider);
        while (cache.size > MAX_CACHED_PROVIDERS) {
          const oldest = cache.keys().next().value;
          if (oldest === undefined) break;
          cache.delete(oldest);
        }
        return provider;
      })
      .finally(() => pending.delete(issuer));
    pending.set(issuer, attempt);
    return attempt;
  }

  function oidcOf(connection: UpstreamOidcConnection) {
    if (!connection.oidc) throw new UpstreamOidcError(upstreamFailure('invalid-response', 'Not an oidc connection'));
    return connection.oidc;
  }

  function configurationOf(connection: UpstreamOidcConnection, provider: CachedProvider): client.Configuration {
    const { clientId } = oidcOf(connection);
    const secret = connection.clientSecret ?? '';
    const methods = provider.server.token_endpoint_auth_methods_supported;
    // client_secret_basic is the default of RFC 8414 when a provider lists nothing.
    const auth =
      !methods || methods.includes('client_secret_basic') ? client.ClientSecretBasic(secret) : client.ClientSecretPost(secret);
    const config = new client.Configuration(
      provider.server,
      clientId,
      { client_secret: secret, [client.clockSkew]: skewSeconds(), [client.clockTolerance]: tolerance },
      auth,
    );
    config[client.customFetch] = customFetch;
    config.timeout = timeoutSeconds;
    if (allowHttp && new URL(provider.server.issuer).protocol === 'http:') client.allowInsecureRequests(config);
    if (provider.jwks) client.setJwksCache(config, provider.jwks);
    return config;
  }

  return {
    async startAuthorization({ connection, redirectUri, loginHint }) {
      const { issuer, scopes } = oidcOf(connection);
      const provider = await providerOf(issuer);
      const config = configurationOf(connection, provider);
      const state = client.randomState();
      const nonce = client.randomNonce();
      const codeVerifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: (scopes.includes('openid') ? scopes : ['openid', ...scopes]).join(' '),
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
        ...(loginHint ? { login_hint: loginHint } : {}),
      });
      return {
        url: url.href,
        connectionId: connection.id,
        issuer,
        redirectUri,
        state,
        nonce,
        codeVerifier,
        expiresAt: new Date(clock.now().getTime() + transactionTtlMs),
      };
    },

    async completeAuthorization({ connection, transaction, callbackUrl }) {
      try {
        const { issuer } = oidcOf(connection);
        if (connection.id !== transaction.connectionId) {
          return upstreamFailure('state-mismatch', 'The transaction belongs to another connection');
        }
        if (issuer !== transaction.issuer) {
          return upstreamFailure('wrong-issuer', 'The connection changed its issuer during the sign-in');
        }
        if (new Date(transaction.expiresAt).getTime() <= clock.now().getTime()) {
          return upstreamFailure('transaction-expired', 'The callback came after the transaction expired');
        }
        let callback: URL;
        try {
          callback = new URL(callbackUrl);
        } catch {
          return upstreamFailure('invalid-response', 'The callback URL is not a URL');
        }
        const params = callback.searchParams;
        const state = params.get('state');
        if (state === null || params.getAll('state').length !== 1 || !sameSecret(state, transaction.state)) {
          return upstreamFailure('state-mismatch', 'The callback state is missing or not the transaction’s');
        }
        const provider = await providerOf(issuer);
        const returnedIssuer = params.get('iss');
        if (returnedIssuer !== null && returnedIssuer !== provider.server.issuer) {
          return upstreamFailure('wrong-issuer', `The callback names the issuer ${returnedIssuer.slice(0, 200)}`);
        }
        const error = params.get('error');
        if (error !== null) {
          const code = /^[\x20-\x7E]{1,64}$/.test(error) ? error : 'invalid';
          const description = (params.get('error_description') ?? '').slice(0, 300);
          return upstreamFailure(
            code === 'access_denied' ? 'access-denied' : 'upstream-error',
            `The provider answered ${code}${description ? `: ${description}` : ''}`,
            code,
          );
        }
        const config = configurationOf(connection, provider);
        // The token request's redirect_uri is the one the authorization was made with, whatever the host saw.
        const current = new URL(transaction.redirectUri);
        current.search = callback.search;
        const tokens = await client.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: transaction.codeVerifier,
          expectedState: transaction.state,
          expectedNonce: transaction.nonce,
          idTokenExpected: true,
        });
        const idToken = tokens.claims();
        if (!idToken) return upstreamFailure('invalid-id-token', 'The token response carries no id token');
        let claims: Record<string, unknown> = { ...idToken };
        if (provider.server.userinfo_endpoint && tokens.access_token) {
          const userinfo = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
          const profile = Object.fromEntries(Object.entries(userinfo).filter(([name]) => !PROTOCOL_CLAIMS.has(name)));
          claims = { ...claims, ...profile };
        }
        provider.jwks = client.getJwksCache(config) ?? provider.jwks;
        const verifiedClaim = connection.attributeMapping?.emailVerified ?? 'email_verified';
        const verified = claims[verifiedClaim];
        return {
          ok: true,
          subject: idToken.sub,
          issuer: idToken.iss,
          claims,
          emailVerified: verified === true || verified === 'true',
        };
      } catch (error) {
        if (error instanceof UpstreamOidcError) return upstreamFailure(error.reason, error.detail);
        return classifyUpstreamError(error);
      }
    },

    forget(issuer) {
      if (issuer === undefined) cache.clear();
      else cache.delete(issuer);
    },
  };
}
