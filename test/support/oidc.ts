import * as oidcClient from 'openid-client';
import { Browser, type BrowserResponse } from './browser.js';
import type { TestHost } from './test-idt.js';
import { mintAccessToken } from './tokens.js';

/** The platform administrator created by {@link bootstrapAdmin}. */
export interface TestAdmin {
  readonly userId: string;
  readonly organizationId: string;
  readonly email: string;
  readonly password: string;
  /** A freshly minted access token of the admin in the platform organization. */
  token(): Promise<string>;
}

/** Runs setup over HTTP and returns the first administrator. */
export async function bootstrapAdmin(
  server: TestHost,
  email = 'admin@example.com',
  password = 'correct horse battery staple',
): Promise<TestAdmin> {
  const response = await server.fetch('/v1/identity/setup/admin', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password, firstName: 'Ada', lastName: 'Admin', organizationName: 'Platform' }),
  });
  if (response.status !== 201) throw new Error(`setup failed: ${response.status} ${await response.text()}`);
  const { userId, organizationId } = (await response.json()) as { userId: string; organizationId: string };
  return {
    userId,
    organizationId,
    email,
    password,
    token: () => mintAccessToken(server, { sub: userId, org_id: organizationId }),
  };
}

/** Registers a user over HTTP (self-registration) and returns its id. */
export async function registerUser(server: TestHost, email: string, password = 'correct horse battery staple'): Promise<string> {
  const response = await server.fetch('/v1/identity/auth/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password, firstName: 'Test', lastName: email.split('@')[0] }),
  });
  if (response.status !== 201) throw new Error(`register failed: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { userId: string }).userId;
}

/** A registered client with its secret. */
export interface TestClient {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly record: Record<string, unknown>;
}

/** Registers a client on an organization's surface with a bearer token. */
export async function registerClient(
  server: TestHost,
  token: string,
  organizationId: string,
  body: Record<string, unknown>,
): Promise<TestClient> {
  const response = await server.fetch(`/v1/identity/organizations/${organizationId}/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`client registration failed: ${response.status} ${await response.text()}`);
  const registration = (await response.json()) as { client: Record<string, unknown>; clientSecret: string };
  return { clientId: String(registration.client.clientId), clientSecret: registration.clientSecret, record: registration.client };
}

/** What reaches the server of a configuration {@link discover} made: {@link signIn}'s browser sends through it too. */
const senders = new WeakMap<oidcClient.Configuration, typeof fetch>();

/**
 * openid-client configuration for a confidential client of the test server,
 * sending through the server's `send` (in-process for a test instance).
 */
export async function discover(server: TestHost, client: TestClient, auth: 'post' | 'basic' = 'post') {
  const config = await oidcClient.discovery(
    new URL(server.url),
    client.clientId,
    { id_token_signed_response_alg: 'RS256' },
    auth === 'post' ? oidcClient.ClientSecretPost(client.clientSecret) : oidcClient.ClientSecretBasic(client.clientSecret),
    { execute: [oidcClient.allowInsecureRequests], [oidcClient.customFetch]: server.send },
  );
  senders.set(config, server.send);
  return config;
}

/** The outcome of a browser sign-in: the callback URL with the code, and the PKCE/state values. */
export interface SignInResult {
  readonly callback: URL;
  readonly codeVerifier: string;
  readonly state: string;
  readonly browser: Browser;
  readonly pages: BrowserResponse[];
}

/** Options of {@link signIn}. */
export interface SignInOptions {
  readonly redirectUri: string;
  readonly scope: string;
  readonly email: string;
  readonly password: string;
  /** Extra authorization parameters, e.g. `{ organization }`. */
  readonly parameters?: Record<string, string>;
  /** Consent decision when the consent page appears (default approve). */
  readonly consent?: 'approve' | 'deny';
  /** Reuse a browser (single sign-on). */
  readonly browser?: Browser;
  /** Choose this organization on the choice page. */
  readonly chooseOrganization?: string;
}

/**
 * Drives the authorization code flow with PKCE through the real sign-in
 * pages over HTTP, the way a person would: open the authorization URL, fill
 * in the sign-in form, allow on the consent page, and stop at the redirect to
 * the relying party.
 */
export async function signIn(config: oidcClient.Configuration, options: SignInOptions): Promise<SignInResult> {
  const browser = options.browser ?? new Browser({}, senders.get(config) ?? fetch);
  const codeVerifier = oidcClient.randomPKCECodeVerifier();
  const state = oidcClient.randomState();
  const url = oidcClient.buildAuthorizationUrl(config, {
    redirect_uri: options.redirectUri,
    scope: options.scope,
    code_challenge: await oidcClient.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    ...options.parameters,
  });
  const pages: BrowserResponse[] = [];
  let response = await browser.navigate(url.href);
  for (let step = 0; step < 6; step++) {
    pages.push(response);
    if (response.status >= 300 && response.status < 400) {
      return { callback: new URL(response.url), codeVerifier, state, browser, pages };
    }
    if (response.body.includes('action="') && response.body.includes('/login"')) {
      response = await browser.submit({ form: '/login', fields: { email: options.email, password: options.password } });
    } else if (response.body.includes('/consent"')) {
      response = await browser.submit({ form: '/consent', fields: { decision: options.consent ?? 'approve' } });
    } else if (response.body.includes('/organization"')) {
      response = await browser.submit({
        form: '/organization',
        ...(options.chooseOrganization ? { fields: { organization: options.chooseOrganization } } : {}),
      });
    } else {
      throw new Error(`Unexpected page ${response.status} at ${response.url}:\n${response.body.slice(0, 3000)}`);
    }
  }
  throw new Error('The sign-in did not finish');
}

/** Options of {@link signInApplication}. */
export interface SignInApplicationOptions {
  /** The application's redirect URI (default `http://127.0.0.1:9/callback`, where nothing listens). */
  readonly redirectUri?: string;
  /** The scopes it is registered for and asks for (default `openid offline_access users.read`). */
  readonly scopes?: readonly string[];
  /** More registration fields, e.g. `{ refreshTokenLifetime }`. */
  readonly registration?: Record<string, unknown>;
}

/**
 * Registers a new application in the administrator's organization and signs
 * the administrator in to it through the real pages ({@link signIn}),
 * stopping at the redirect with the code, not redeemed yet.
 */
export async function signInApplication(server: TestHost, admin: TestAdmin, options: SignInApplicationOptions = {}) {
  const redirectUri = options.redirectUri ?? 'http://127.0.0.1:9/callback';
  const scopes = options.scopes ?? ['openid', 'offline_access', 'users.read'];
  const client = await registerClient(server, await admin.token(), admin.organizationId, {
    kind: 'application',
    name: `App ${Math.random().toString(36).slice(2, 8)}`,
    redirectUris: [redirectUri],
    scopes,
    ...options.registration,
  });
  const config = await discover(server, client);
  const result = await signIn(config, { redirectUri, scope: scopes.join(' '), email: admin.email, password: admin.password });
  return { client, config, result };
}

/** Redeems the code of a finished {@link signIn} (with its PKCE verifier and state) through `openid-client`. */
export function redeemCode(
  config: oidcClient.Configuration,
  result: SignInResult,
): Promise<oidcClient.TokenEndpointResponse & oidcClient.TokenEndpointResponseHelpers> {
  return oidcClient.authorizationCodeGrant(config, result.callback, {
    pkceCodeVerifier: result.codeVerifier,
    expectedState: result.state,
  });
}

/**
 * Redeems a sign-in's code at the token endpoint by hand (the client's
 * secret in the body), with `extra` parameters, and answers the raw
 * response: for the answers openid-client turns into exceptions.
 */
export function codeTokenRequest(
  server: TestHost,
  client: TestClient,
  signedIn: { readonly callback: URL; readonly codeVerifier: string },
  extra: Record<string, string> = {},
): Promise<Response> {
  const { callback } = signedIn;
  return server.fetch('/connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code') ?? '',
      redirect_uri: `${callback.origin}${callback.pathname}`,
      code_verifier: signedIn.codeVerifier,
      client_id: client.clientId,
      client_secret: client.clientSecret,
      ...extra,
    }).toString(),
  });
}

/** A raw `refresh_token` grant request with the client's credentials in the body (the answer is not checked). */
export function refreshTokenRequest(server: TestHost, client: TestClient, refreshToken: string): Promise<Response> {
  return server.fetch('/connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }).toString(),
  });
}

export { oidcClient };
