import { hkdfSync } from 'node:crypto';
import { type Clock, systemClock } from '@idt/core';
import type { SigningKey } from '@idt/core/knex';
import type Provider from 'oidc-provider';
import type { AccessToken, ClientCredentials, JWTStructured, KoaContextWithOIDC } from 'oidc-provider';
import type { StoredClient } from '../clients/store.js';
import { renderProviderError } from '../interactions/pages.js';
import { ACR_VALUES, authenticationPolicy } from '../policy/authentication-context.js';
import { FAMILY_CLAIM, type FamilyRevocation } from '../policy/family-revocation.js';
import { FIRST_PARTY_REFRESH_LIFETIME_SECONDS, remainingRefreshLifetime } from '../policy/refresh-lifetime.js';
import { ownsToken } from '../policy/token-ownership.js';
import { CookieSigner } from './cookie-signer.js';
import type { OidcProviderModule } from './load.js';
import { patchProvider } from './patches.js';
import { providerSigningKeys } from './signing-keys.js';
import type { OidcAdapter } from './store.js';

/** Login scopes (OpenID Connect) and the claims each releases (SPEC 2.3). */
export const LOGIN_SCOPE_CLAIMS = {
  openid: ['sub'],
  profile: ['name', 'given_name', 'family_name', 'org_id', 'org_name'],
  email: ['email', 'email_verified'],
  roles: ['roles'],
} as const;

/** Login scopes; every other scope is an API scope of the resource server. */
export const LOGIN_SCOPES = new Set(['openid', 'profile', 'email', 'roles', 'offline_access']);

/**
 * Extra client metadata idt keeps on oidc-provider client instances: only
 * what the provider's hooks read (the rest of a client record is read from
 * the client store). Each key is a property of every cached instance, and
 * V8 keeps an instance of 20 or more properties in a dictionary twice the
 * size (10,000 clients: 21 MiB against 13 MiB).
 */
export const CLIENT_EXTRA = {
  organizationId: 'idt_organization_id',
  apiScopes: 'idt_api_scopes',
} as const;

/** The grant context: the organization a token chain works in, and its refresh-token lifetime. */
export interface GrantContext {
  readonly organizationId: string | null;
  readonly refreshTokenLifetime: number;
}

/** What claims the provider releases for an account (SPEC 2.3). */
export interface AccountClaims {
  readonly sub: string;
  readonly name?: string;
  readonly given_name?: string;
  readonly family_name?: string;
  readonly email?: string;
  readonly email_verified?: boolean;
  readonly org_id?: string;
  readonly org_name?: string;
  readonly roles?: string[];
}

/** Hooks the provider calls into the rest of idt. */
export interface ProviderHooks {
  /** The claims of an active user working in `organizationId` (or none), or `undefined` when the user cannot sign in. */
  accountClaims(userId: string, organizationId: string | null): Promise<AccountClaims | undefined>;
  /** The context of a grant (cached). */
  grantContext(grantId: string): Promise<GrantContext | undefined>;
  /**
   * The context of a grant if already cached (token lifetimes are computed
   * synchronously; `findAccount` loads the context earlier in the same request).
   */
  cachedGrantContext(grantId: string): GrantContext | undefined;
  /**
   * Whether an existing grant still applies to this authorization request
   * (the organization requested and, for bound clients, an active membership).
   */
  grantStillApplies(ctx: KoaContextWithOIDC, context: GrantContext | undefined): Promise<boolean>;
  /** The refresh-token lifetime of a new login for a client (SPEC 5.3 precedence). */
  refreshTokenLifetime(client: StoredClient | undefined, firstParty: boolean): number;
  /** Validates the `organization` authorization parameter (SPEC 5.2). */
  validateOrganizationParameter(ctx: KoaContextWithOIDC, value: string | undefined, clientId: string): Promise<void>;
}

/** Options of {@link createOidcProvider}. */
export interface OidcProviderOptions {
  /** The loaded oidc-provider module (see `loadOidcProvider`). */
  readonly oidc: OidcProviderModule;
  /** The issuer: the public base URL, prefix included. */
  readonly issuer: string;
  /** The resource indicator and audience of access tokens for the API (the public base URL). */
  readonly apiResource: string;
  /** Where the sign-in pages live (absolute, no trailing slash): interactions go to `${authUrl}/interaction/<uid>`. */
  readonly authUrl: string;
  /** Signing keys: active first. */
  readonly keys: readonly SigningKey[];
  /** Secret the cookie-signing keys are derived from. */
  readonly secret: string;
  readonly adapter: new (name: string) => OidcAdapter;
  readonly hooks: ProviderHooks;
  /** Looks a client record up for policy decisions (cached by the caller). */
  readonly findClient: (clientId: string) => Promise<StoredClient | undefined>;
  /** Access-token lifetime in seconds (default 900). */
  readonly accessTokenTtlSeconds?: number;
  /** Honour `x-forwarded-*` from a trusted proxy. */
  readonly trustProxy?: boolean;
  /** Renders the RP-initiated logout confirmation page. */
  readonly logoutSource: (ctx: KoaContextWithOIDC, form: string) => Promise<void> | void;
  /** Renders the page shown after logout without a post-logout redirect. */
  readonly postLogoutSuccessSource: (ctx: KoaContextWithOIDC) => Promise<void> | void;
  /** A locked-out client id gets `invalid_client` even with the right secret (SPEC 8.2). */
  readonly isLocked?: (clientId: string) => boolean;
  /** Subscribes to client changes (id, or `*`); with it, client instances are cached per id (see `patchProvider`). */
  readonly onClientChange?: (listener: (clientId: string) => void) => void;
  /** The reuse leeway of redeemed refresh tokens in seconds (SPEC 3.6). */
  readonly refreshReuseLeewaySeconds: number;
  /** The successor value of a rotated refresh token (`createSuccessorDerivation`). */
  readonly successorOf: (predecessor: string) => string;
  /** Ends the access tokens of revoked grants (token families). */
  readonly familyRevocation: FamilyRevocation;
  /** Renders the errors shown to the user agent; `renderProviderError` (no logger) by default. */
  readonly renderError?: (
    ctx: KoaContextWithOIDC,
    out: { error?: string; error_description?: string },
    error: unknown,
  ) => Promise<void>;
  /**
   * The clock the adapter stores expiries by: a refresh token's remaining
   * lifetime is computed against it, so its absolute expiry stays `iiat` +
   * lifetime whatever clock the adapter adds it to. The system clock by default.
   */
  readonly clock?: Clock;
}

/** Maps a client record to oidc-provider client metadata. */
export function clientMetadata(client: StoredClient): Record<string, unknown> {
  const isApplication = client.kind === 'application';
  const loginScopes = client.scopes.filter((scope) => LOGIN_SCOPES.has(scope));
  const apiScopes = client.scopes.filter((scope) => !LOGIN_SCOPES.has(scope));
  return {
    client_id: client.clientId,
    client_secret: client.secretHash,
    client_name: client.name,
    grant_types: isApplication ? ['authorization_code', 'refresh_token'] : ['client_credentials'],
    response_types: isApplication ? ['code'] : [],
    redirect_uris: isApplication ? client.redirectUris : [],
    post_logout_redirect_uris: isApplication ? client.postLogoutRedirectUris : [],
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'RS256',
    // Login scopes are OpenID scopes of the provider; API scopes belong to the API resource server.
    ...(loginScopes.length ? { scope: loginScopes.join(' ') } : {}),
    [CLIENT_EXTRA.apiScopes]: apiScopes.join(' '),
    [CLIENT_EXTRA.organizationId]: client.organizationId,
  };
}

/** The signer of the provider's cookies, with a key derived from the server's secret. */
function cookieSigner(secret: string): CookieSigner {
  return new CookieSigner([
    Buffer.from(hkdfSync('sha256', Buffer.from(secret), Buffer.from('idt-oidc-cookies'), Buffer.from('v1'), 32)).toString(
      'base64url',
    ),
  ]);
}

/** Paths of the provider's endpoints, relative to the issuer. */
export const OIDC_ROUTES = {
  authorization: '/connect/authorize',
  token: '/connect/token',
  end_session: '/connect/logout',
  jwks: '/.well-known/jwks.json',
  revocation: '/connect/revoke',
  introspection: '/connect/introspect',
  pushed_authorization_request: '/connect/par',
} as const;

/** The userinfo endpoint, served by idt itself (access tokens are JWTs for the API). */
export const USERINFO_PATH = '/connect/userinfo';

/**
 * Creates the oidc-provider instance with idt's policy: exactly the
 * authorization_code (PKCE S256 required, confidential clients),
 * refresh_token (rotating) and client_credentials grants; JWT access tokens
 * for the API; hashed client secrets; `sid` in every id token; codes only in
 * the query of a top-level redirect.
 */
export function createOidcProvider(options: OidcProviderOptions): Provider {
  const accessTtl = options.accessTokenTtlSeconds ?? 900;
  const secure = options.issuer.startsWith('https://');
  const { hooks } = options;
  const clock = options.clock ?? systemClock;
  const { Provider: ProviderClass, errors } = options.oidc;

  const provider = new ProviderClass(options.issuer, {
    adapter: options.adapter,
    jwks: { keys: providerSigningKeys(options.oidc, options.keys) },
    cookies: {
      // A keygrip-like signer, which oidc-provider hands to koa as is.
      keys: cookieSigner(options.secret),
      long: { httpOnly: true, sameSite: 'lax', secure, signed: true },
      short: { httpOnly: true, sameSite: 'lax', secure, signed: true },
      names: { session: 'idt_sso', interaction: 'idt_interaction', resume: 'idt_interaction_resume' },
    },
    claims: {
      ...LOGIN_SCOPE_CLAIMS,
      // Every id token says how and when the user signed in: `acr`, `amr` (RFC 8176) and `auth_time`.
      openid: [...LOGIN_SCOPE_CLAIMS.openid, 'acr', 'amr', 'auth_time'],
      profile: [...LOGIN_SCOPE_CLAIMS.profile],
      email: [...LOGIN_SCOPE_CLAIMS.email],
      roles: [...LOGIN_SCOPE_CLAIMS.roles],
      sid: null,
      auth_time: null,
      acr: null,
      // RFC 8176 methods of the sign-in (`pwd`, `otp`, `hwk`/`swk`, `mfa`), from the login result.
      amr: null,
    },
    // `urn:idt:acr:1fa` or `urn:idt:acr:mfa` (policy/authentication-context.ts), from the login result.
    acrValues: [...ACR_VALUES],
    scopes: ['openid', 'offline_access', 'profile', 'email', 'roles'],
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256', 'ES256'],
      authorizationSigningAlgValues: ['RS256', 'ES256'],
      clientAuthSigningAlgValues: [],
      requestObjectSigningAlgValues: [],
    },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
    extraClientMetadata: { properties: Object.values(CLIENT_EXTRA) },
    allowOmittingSingleRegisteredRedirectUri: false,
    pkce: { required: () => true },
    routes: OIDC_ROUTES,
    features: {
      devInteractions: { enabled: false },
      // Signing on the calling thread (provider/signing-keys.ts); the ack pins the experiment's version.
      externalSigningSupport: { enabled: true, ack: 'experimental-01' },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        allowedPolicy: async (_ctx: KoaContextWithOIDC, client: { clientId: string }, token: { clientId?: string }) =>
          ownsToken(client, token),
      },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: KoaContextWithOIDC, client: { clientId: string }, token: { clientId?: string }) => {
          if (!ownsToken(client, token))
            throw new errors.InvalidRequest('client is not authorized to revoke the presented token');
          return true;
        },
      },
      userinfo: { enabled: false },
      backchannelLogout: { enabled: false },
      registration: { enabled: false },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: options.logoutSource,
        postLogoutSuccessSource: options.postLogoutSuccessSource,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => options.apiResource,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: KoaContextWithOIDC, resource: string, client: Record<string, unknown>) => {
          if (resource !== options.apiResource) throw new errors.InvalidTarget();
          // The API accepts the login scopes too, so access tokens carry them and userinfo can honour them.
          const scope = [String(client.scope ?? ''), String(client[CLIENT_EXTRA.apiScopes] ?? '')].join(' ').trim();
          return {
            scope,
            audience: options.apiResource,
            accessTokenTTL: accessTtl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    ttl: {
      AccessToken: accessTtl,
      ClientCredentials: accessTtl,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 3600,
      Session: 86_400,
      Grant: 31_622_400,
      RefreshToken: (_ctx: KoaContextWithOIDC, token: { iiat?: number; iat?: number; grantId?: string }) => {
        const context = token.grantId ? hooks.cachedGrantContext(token.grantId) : undefined;
        const lifetime = context?.refreshTokenLifetime ?? FIRST_PARTY_REFRESH_LIFETIME_SECONDS;
        const now = Math.floor(clock.now().getTime() / 1000);
        return remainingRefreshLifetime(token.iiat ?? token.iat ?? now, lifetime, now);
      },
    },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx: KoaContextWithOIDC, client: { grantTypeAllowed(type: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
    expiresWithSession: async () => false,
    conformIdTokenClaims: false,
    interactions: {
      // `max_age` on the injected clock, and `acr_values` asking MFA of a one-factor session.
      policy: authenticationPolicy(options.oidc, clock),
      url: async (_ctx: KoaContextWithOIDC, interaction: { uid: string }) =>
        `${options.authUrl}/connect/interaction/${interaction.uid}`,
    },
    extraParams: {
      organization: async (ctx: KoaContextWithOIDC, value: string | undefined, client: { clientId: string }) => {
        await hooks.validateOrganizationParameter(ctx, value, client.clientId);
      },
    },
    findAccount: async (ctx: KoaContextWithOIDC, id: string, token?: { grantId?: string }) => {
      const grantId = token?.grantId ?? (ctx.oidc.entities as { Grant?: { jti?: string } }).Grant?.jti;
      const context = grantId ? await hooks.grantContext(grantId) : undefined;
      const claims = await hooks.accountClaims(id, context?.organizationId ?? null);
      if (!claims) return undefined;
      return { accountId: id, claims: async () => ({ ...claims }) };
    },
    // `azp`, `org_id` and `sid` join the access token's claims here rather than through
    // `extraTokenClaims`: oidc-provider spreads those into a new object and adds the standard
    // claims after it, which V8 (Node 20) makes about 6 µs slower per token than adding ours last.
    formats: {
      customizers: {
        jwt: async (ctx: KoaContextWithOIDC, token: AccessToken | ClientCredentials, jwt: JWTStructured) => {
          const { payload } = jwt;
          payload.azp = token.clientId;
          if (token.kind === 'ClientCredentials') {
            const client = ctx.oidc.client as unknown as Record<string, unknown> | undefined;
            const organizationId = client?.[CLIENT_EXTRA.organizationId];
            if (typeof organizationId === 'string') payload.org_id = organizationId;
            return;
          }
          const context = token.grantId ? await hooks.grantContext(token.grantId) : undefined;
          if (context?.organizationId) payload.org_id = context.organizationId;
          if (token.sid) payload.sid = token.sid;
          if (token.grantId) payload[FAMILY_CLAIM] = token.grantId;
        },
      },
    },
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const fromInteraction = (ctx.oidc.result as { consent?: { grantId?: string } } | undefined)?.consent?.grantId;
      const grantId = fromInteraction ?? ctx.oidc.session?.grantIdFor(ctx.oidc.client?.clientId ?? '');
      if (!grantId) return undefined;
      const grant = await ctx.oidc.provider.Grant.find(grantId);
      if (!grant) return undefined;
      // The sign-in pages just made this grant for this very request (organization chosen, membership
      // checked); re-checking it against `organization=select` would prompt again, forever.
      if (fromInteraction) return grant;
      const context = await hooks.grantContext(grantId);
      return (await hooks.grantStillApplies(ctx, context)) ? grant : undefined;
    },
    renderError: options.renderError ?? renderProviderError,
    discovery: {
      frontchannel_logout_supported: true,
      frontchannel_logout_session_supported: true,
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
    },
  });
  provider.proxy = options.trustProxy ?? false;

  patchProvider(provider, options.oidc, {
    ...(options.isLocked ? { isLocked: options.isLocked } : {}),
    refreshReuseLeewayMs: options.refreshReuseLeewaySeconds * 1000,
    successorOf: options.successorOf,
    familyRevocation: options.familyRevocation,
    clock,
    ...(options.onClientChange ? { onClientChange: options.onClientChange } : {}),
  });

  return provider;
}

/** Re-exported for hooks. */
export type { KoaContextWithOIDC };
