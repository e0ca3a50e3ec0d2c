import { defineRoute, type Route } from '@idt/core';
import { z } from 'zod';
import { OIDC_ROUTES } from '../../provider/create-provider.js';

/** The tag of the provider's operations in the API document. */
export const OPENID_TAG = 'OpenID Connect';

/**
 * The extension that marks operations answering OAuth errors (`{error,
 * error_description}`, HTML pages for the browser) rather than problem documents.
 */
export const OAUTH_ERRORS = { 'x-error-format': 'oauth' } as const;

/** Options of {@link createProviderDocsRoutes}. */
export interface ProviderDocsOptions {
  /** The issuer (public base URL, prefix included): the OAuth 2 flows point at it. */
  readonly issuer: string;
  /** Scope name to description, offered by the API viewer's "Authorize". */
  readonly scopes: Readonly<Record<string, string>>;
}

const OAuthError = z
  .object({
    error: z.string().describe('The OAuth error code, e.g. `invalid_grant`'),
    error_description: z.string().optional(),
  })
  .describe('An OAuth 2.0 error response (RFC 6749 section 5.2)');

const oauthError = (description: string) => ({ description, schema: OAuthError });

/** The form of revocation (RFC 7009) and introspection (RFC 7662): a token, its type hint and form client credentials. */
const TokenReferenceForm = z.object({
  token: z.string(),
  token_type_hint: z
    .string()
    .optional()
    .describe('`access_token` or `refresh_token`: a hint only; a token of another type is still found'),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
});

/** The parameters of an authorization request: the query of a GET, the form of a POST. */
/** The parameters of RP-initiated logout (GET query or POST form). */
const LogoutParameters = z.object({
  id_token_hint: z.string().optional(),
  post_logout_redirect_uri: z.string().optional(),
  state: z.string().optional(),
  client_id: z.string().optional(),
});

const AuthorizationParameters = z.object({
  client_id: z.string().describe('The application'),
  response_type: z.enum(['code']),
  redirect_uri: z.string().describe('One of the redirect URIs the application registered, exactly'),
  scope: z.string().describe('Space-separated, with `openid`, e.g. `openid profile email offline_access`'),
  state: z.string().describe('An opaque value the application checks on return'),
  code_challenge: z.string().describe('BASE64URL(SHA-256(code_verifier))'),
  code_challenge_method: z.enum(['S256']),
  nonce: z.string().optional(),
  prompt: z.enum(['none', 'login', 'consent']).optional(),
  login_hint: z.string().optional(),
  organization: z.string().optional().describe('First-party clients: an organization id, `select` (choice page) or `none`'),
});

/** The answer of the introspection endpoint (RFC 7662 section 2.2). */
const IntrospectionResponse = z
  .object({
    active: z.boolean().describe("`false` alone for a token that is not active, or not the asking client's"),
    token_type: z.literal('Bearer').optional().describe('Access tokens'),
    client_id: z.string().optional().describe('The client the token was issued to: the asking client'),
    sub: z.string().optional().describe("The user, or the service account's client id"),
    scope: z.string().optional(),
    org_id: z.string().optional().describe('The organization the token works in (access tokens)'),
    exp: z.number().int().optional(),
    iat: z.number().int().optional(),
    iss: z.string().optional(),
    aud: z.union([z.string(), z.array(z.string())]).optional(),
    jti: z.string().optional(),
    sid: z.string().optional().describe("The single sign-on session of a user's token"),
  })
  .describe('`{"active": false}`, or the members of an active token');

const AUTHORIZE_DESCRIPTION =
  'Opens the sign-in pages in a browser; after sign-in (and consent for third-party applications) the browser returns to `redirect_uri` with `code` and `state` in the query. Errors before the client and redirect URI are known show an error page with the OAuth error code and a trace id.';

const AUTHORIZE_RESPONSES = {
  302: { description: 'To the sign-in pages, or back to `redirect_uri` with `code` (or `error`)' },
  400: {
    description: 'An HTML error page (unknown client, unregistered redirect URI, bad request)',
    contentType: 'text/html',
  },
} as const;

/**
 * The "how to get a token" text of the API reference (the tag's
 * introduction in Scalar and the OAuth 2 scheme's description).
 */
export function tokenHowTo(issuer: string): string {
  return `How to get a token to try this API:

1. **A service account (scripts).** \`npx idt demo\` writes \`service.env\`; then \`npx idt token --from service.env\` prints an access token. Paste it under **Authorize → bearerAuth**.
2. **A user, from the command line.** \`npx idt sign-in --from cli.env\` (the demo's *Command line* application) prints a sign-in URL to open in your browser, then the user's access token.
3. **A user, through the demo application.** \`npx idt demo\` registers the first-party application *Dashboard* and writes \`dashboard.env\` (client id and secret). In **Authorize → oauth2 (authorization code)** enter them, tick \`openid\` (and the API scopes you need) and sign in; PKCE (S256) is used. The redirect URI must be one the application registered: to let this page finish the flow itself, add \`${issuer}/scalar\` to the application's redirect URIs.
4. **Any other client.** Discovery (\`GET /.well-known/openid-configuration\`) names every endpoint; clients are confidential, use PKCE S256 and send their secret to the token endpoint (\`client_secret_basic\` or \`client_secret_post\`).

Access tokens are JWTs for this API (15 minutes by default); refresh tokens rotate.`;
}

/**
 * Documentation-only routes of the provider's endpoints (served by
 * oidc-provider on its own surface, never by the route table): discovery,
 * JWKS, authorize, token, logout, revocation and introspection, tagged
 * "OpenID Connect", with the `oauth2` security scheme (authorization code
 * with PKCE, client credentials) pointing at this issuer so an API viewer
 * can authorize.
 */
export function createProviderDocsRoutes(options: ProviderDocsOptions): Route[] {
  const issuer = options.issuer.replace(/\/$/, '');
  const tokenUrl = `${issuer}${OIDC_ROUTES.token}`;
  const openApi = {
    securitySchemes: {
      oauth2: {
        type: 'oauth2',
        description: tokenHowTo(issuer),
        flows: {
          authorizationCode: {
            authorizationUrl: `${issuer}${OIDC_ROUTES.authorization}`,
            tokenUrl,
            refreshUrl: tokenUrl,
            scopes: { ...options.scopes },
            'x-usePkce': 'SHA-256',
            'x-scalar-redirect-uri': `${issuer}/scalar`,
          },
          clientCredentials: { tokenUrl, scopes: { ...options.scopes } },
        },
      },
      openIdConnect: { type: 'openIdConnect', openIdConnectUrl: `${issuer}/.well-known/openid-configuration` },
      clientBasic: {
        type: 'http',
        scheme: 'basic',
        description: 'Client authentication: the client id and secret (`client_secret_basic`).',
      },
    },
    defaultSecurity: ['oauth2'],
    tagDescriptions: { [OPENID_TAG]: tokenHowTo(issuer) },
    extensions: OAUTH_ERRORS,
  } as const;
  const clientAuth = { security: [{ clientBasic: [] }, {}], extensions: OAUTH_ERRORS } as const;
  const plain = { extensions: OAUTH_ERRORS } as const;
  const common = { tags: [OPENID_TAG], auth: 'anonymous', documentationOnly: true } as const;
  const neverCalled = () => {
    throw new Error('documentation-only route');
  };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/.well-known/openid-configuration',
      operationId: 'oidcDiscovery',
      summary: 'OpenID Connect discovery document',
      description: 'Every endpoint, grant, scope and signing algorithm of this provider. Copy the `issuer` from here.',
      ratePolicy: false,
      openApi,
      responses: { 200: { description: 'The discovery document (OpenID Connect Discovery 1.0)' } },
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: OIDC_ROUTES.jwks,
      operationId: 'oidcJwks',
      summary: 'The public signing keys (JWKS)',
      ratePolicy: false,
      openApi: plain,
      responses: { 200: { description: 'A JSON Web Key Set (ES256 and RS256)' } },
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: OIDC_ROUTES.authorization,
      operationId: 'oidcAuthorize',
      summary: 'Start a sign-in (authorization code with PKCE)',
      openApi: plain,
      description: AUTHORIZE_DESCRIPTION,
      ratePolicy: 'auth',
      request: { query: AuthorizationParameters },
      responses: AUTHORIZE_RESPONSES,
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: OIDC_ROUTES.authorization,
      operationId: 'oidcAuthorizePost',
      summary: 'Start a sign-in with a form-encoded POST (OpenID Connect Core 3.1.2.1)',
      openApi: plain,
      description: `The parameters of a GET, as a form body (the URL's query is not read); every check of a GET applies. ${AUTHORIZE_DESCRIPTION} The single sign-on cookie is \`SameSite=Lax\`: a browser does not send it with a cross-site POST, so a person signed in already signs in again.`,
      ratePolicy: 'auth',
      request: { bodyKind: 'form', body: AuthorizationParameters },
      responses: AUTHORIZE_RESPONSES,
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: OIDC_ROUTES.token,
      operationId: 'oidcToken',
      summary: 'Redeem a code, refresh a token, or get a client-credentials token',
      ratePolicy: 'auth',
      openApi: clientAuth,
      request: {
        bodyKind: 'form',
        body: z.object({
          grant_type: z.enum(['authorization_code', 'refresh_token', 'client_credentials']),
          code: z.string().optional().describe('authorization_code: the code from the redirect'),
          redirect_uri: z.string().optional().describe('authorization_code: the same redirect URI'),
          code_verifier: z.string().optional().describe('authorization_code: the PKCE verifier'),
          refresh_token: z.string().optional().describe('refresh_token: the current refresh token'),
          scope: z.string().optional().describe('client_credentials: the scopes wanted'),
          client_id: z.string().optional().describe('client_secret_post (else HTTP Basic)'),
          client_secret: z.string().optional().describe('client_secret_post (else HTTP Basic)'),
        }),
      },
      responses: {
        200: {
          description: 'Tokens',
          schema: z.object({
            access_token: z.string(),
            token_type: z.literal('Bearer'),
            expires_in: z.number().int(),
            scope: z.string().optional(),
            refresh_token: z.string().optional(),
            id_token: z.string().optional(),
          }),
        },
        400: oauthError(
          '`invalid_grant`, `invalid_request`, `invalid_scope`, `unauthorized_client` (a grant type the client is not registered for), `unsupported_grant_type`, …',
        ),
        401: oauthError('`invalid_client`'),
      },
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: OIDC_ROUTES.end_session,
      operationId: 'oidcLogout',
      summary: 'RP-initiated logout',
      openApi: plain,
      description: 'Shows a confirmation page; confirming ends the sign-in session and every token minted under it.',
      ratePolicy: false,
      request: { query: LogoutParameters },
      responses: { 200: { description: 'The logout confirmation page', contentType: 'text/html' } },
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: OIDC_ROUTES.end_session,
      operationId: 'oidcLogoutPost',
      summary: 'RP-initiated logout with a form-encoded POST (RP-Initiated Logout 1.0 section 2)',
      openApi: plain,
      description:
        "The parameters of a GET, as a form body (the URL's query is not read); shows the same confirmation page, whose confirmation ends the sign-in session and every token minted under it.",
      ratePolicy: false,
      request: { bodyKind: 'form', body: LogoutParameters },
      responses: { 200: { description: 'The logout confirmation page', contentType: 'text/html' } },
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: OIDC_ROUTES.revocation,
      operationId: 'oidcRevoke',
      summary: 'Revoke a refresh token (RFC 7009)',
      description:
        'A refresh token ends its whole token family, its access tokens included. Access tokens are JWTs that are not stored: one is answered `unsupported_token_type`; revoke its refresh token, or end the session.',
      ratePolicy: 'auth',
      openApi: clientAuth,
      request: {
        bodyKind: 'form',
        body: TokenReferenceForm,
      },
      responses: { 200: { description: 'Revoked (or unknown)' }, 401: oauthError('`invalid_client`') },
      handler: neverCalled,
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: OIDC_ROUTES.introspection,
      operationId: 'oidcIntrospect',
      summary: "Introspect one of the client's own tokens (RFC 7662)",
      description:
        'Access tokens (JWTs) and refresh tokens. An access token is active exactly while the API would accept it (signature, expiry without clock skew, logout, family revocation, deactivation, membership); only the client it was issued to sees more than `{active: false}`.',
      ratePolicy: 'auth',
      openApi: clientAuth,
      request: {
        bodyKind: 'form',
        body: TokenReferenceForm,
      },
      responses: {
        200: { description: "`{active: false}` or the token's members", schema: IntrospectionResponse },
        400: oauthError('`invalid_request` (no `token`)'),
        401: oauthError('`invalid_client`'),
      },
      handler: neverCalled,
    }),
  ];
}
