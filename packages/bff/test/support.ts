import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Bff, type BffConfig, type BffSession, type BffSessionStore, type CreateBffOptions, createBff } from '@idt/bff';
import { type Clock, signJwt } from '@idt/core';
import {
  Browser,
  type BrowserResponse,
  bootstrapAdmin,
  registerClient,
  startTestServer,
  type TestAdmin,
  type TestClient,
  type TestServer,
} from '@idt/testing';
import { expect } from 'vitest';

/** A cookie secret for tests (at least 32 characters). */
export const TEST_COOKIE_PASSWORD = 'test-cookie-password-0123456789abcdef';

/** The scopes BFF test clients are registered with and ask for. */
export const TEST_BFF_SCOPES = ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'];

/** The reference server as the BFF's provider, with a first administrator; back-channel logout may reach loopback hosts. */
export interface TestProvider {
  readonly server: TestServer;
  readonly admin: TestAdmin;
  close(): Promise<void>;
}

/** Starts the reference server (SQLite) for BFF suites. */
export async function startTestProvider(): Promise<TestProvider> {
  const server = await startTestServer({
    env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' },
    modules: { oidc: { backchannelLimits: { perClientTimeoutMs: 2000, retryDelayMs: 100, overallTimeoutMs: 5000 } } },
  });
  const admin = await bootstrapAdmin(server);
  return { server, admin, close: () => server.close() };
}

/** A BFF listening on a loopback port with a client of its own at the provider. */
export interface TestBff {
  /** Where the BFF listens (`http://127.0.0.1:<port>`). */
  readonly url: string;
  /** The origin of its redirect URI: {@link url}, or the same port on {@link TestBffOptions.redirectHost}. */
  readonly publicUrl: string;
  readonly bff: Bff;
  readonly client: TestClient;
  readonly config: BffConfig;
  readonly http: Server;
  /** Requests the BFF sent to the provider's token endpoint so far. */
  readonly tokenRequests: () => number;
  /** Makes the BFF's calls to the token endpoint fail as a network error would (or work again). */
  failTokenEndpoint(fail: boolean): void;
  close(): Promise<void>;
}

/** A complete BFF configuration for tests that never reach a provider (config, cookies, stores). */
export const OFFLINE_BFF_ENV: Readonly<Record<string, string>> = Object.freeze({
  OIDC_ISSUER: 'https://id.example.com',
  OIDC_CLIENT_ID: 'client',
  OIDC_CLIENT_SECRET: 'secret',
  OIDC_REDIRECT_URI: 'https://app.example.com/bff/callback',
  BFF_API_BASE_URL: 'https://id.example.com',
  COOKIE_PASSWORD: TEST_COOKIE_PASSWORD,
});

/** Options of {@link startTestBff}. */
export interface TestBffOptions {
  readonly clock?: Clock;
  readonly store?: CreateBffOptions['store'];
  /** Register the client's front- and back-channel logout URIs (default true). */
  readonly logoutUris?: boolean;
  /** Settings over the defaults. */
  readonly env?: Record<string, string>;
  /** Where `POST /bff/logs` sends events. */
  readonly logSink?: CreateBffOptions['logSink'];
  /** The host name of the redirect and logout URIs (`localhost`), when not the listening 127.0.0.1. */
  readonly redirectHost?: string;
  readonly logger?: CreateBffOptions['logger'];
}

/**
 * Starts a BFF on 127.0.0.1 with a free port: registers a confidential
 * application at the provider whose redirect and logout URIs point at it,
 * then creates the BFF from environment variables.
 */
export async function startTestBff(provider: TestProvider, options: TestBffOptions = {}): Promise<TestBff> {
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const publicUrl = options.redirectHost ? `http://${options.redirectHost}:${port}` : url;
  const client = await registerClient(provider.server, await provider.admin.token(), provider.admin.organizationId, {
    kind: 'application',
    name: `BFF ${Math.random().toString(36).slice(2, 8)}`,
    redirectUris: [`${publicUrl}/bff/callback`],
    postLogoutRedirectUris: [`${publicUrl}/`],
    ...(options.logoutUris === false
      ? {}
      : {
          backchannelLogoutUri: `${publicUrl}/bff/backchannel-logout`,
          frontchannelLogoutUri: `${publicUrl}/bff/frontchannel-logout`,
        }),
    scopes: TEST_BFF_SCOPES,
  });
  let tokenRequests = 0;
  let failToken = false;
  const countingFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const target = input instanceof Request ? input.url : String(input);
    if (new URL(target).pathname === '/connect/token') {
      tokenRequests += 1;
      if (failToken) throw new TypeError('fetch failed');
    }
    return fetch(input, init);
  }) as typeof fetch;
  const bff = await createBff({
    env: {
      OIDC_ISSUER: provider.server.url,
      OIDC_CLIENT_ID: client.clientId,
      OIDC_CLIENT_SECRET: client.clientSecret,
      OIDC_REDIRECT_URI: `${publicUrl}/bff/callback`,
      OIDC_POST_LOGOUT_REDIRECT_URI: `${publicUrl}/`,
      OIDC_SCOPES: TEST_BFF_SCOPES.join(' '),
      BFF_API_BASE_URL: provider.server.url,
      COOKIE_PASSWORD: TEST_COOKIE_PASSWORD,
      ...options.env,
    },
    fetch: countingFetch,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.store ? { store: options.store } : {}),
    ...(options.logSink ? { logSink: options.logSink } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  http.on('request', (req, res) => void bff.handler(req, res));
  return {
    url,
    publicUrl,
    bff,
    client,
    config: bff.config,
    http,
    tokenRequests: () => tokenRequests,
    failTokenEndpoint(fail) {
      failToken = fail;
    },
    async close() {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
      await bff.close();
    },
  };
}

/** What {@link bffSignIn} observed. */
export interface BffSignIn {
  readonly browser: Browser;
  /** The BFF's answer to the callback. */
  readonly callback: BrowserResponse;
  /** The callback URL the provider redirected to. */
  readonly callbackUrl: string;
}

/**
 * Signs in through the BFF the way a person would: `/bff/login`, the
 * provider's sign-in (and consent) pages, then the callback on the BFF
 * (answered, not followed).
 */
export async function bffSignIn(
  bff: TestBff,
  provider: TestProvider,
  options: { browser?: Browser; returnTo?: string; email?: string; password?: string } = {},
): Promise<BffSignIn> {
  const browser = options.browser ?? new Browser();
  const callbackUrl = await authorizeThroughBff(bff, provider, browser, options);
  const callback = await browser.request(callbackUrl);
  return { browser, callback, callbackUrl };
}

/** Runs `/bff/login` and the provider's pages, and returns the callback URL without visiting it. */
export async function authorizeThroughBff(
  bff: TestBff,
  provider: TestProvider,
  browser: Browser,
  options: { returnTo?: string; email?: string; password?: string } = {},
): Promise<string> {
  const login = await browser.request(
    `${bff.url}/bff/login${options.returnTo === undefined ? '' : `?returnTo=${encodeURIComponent(options.returnTo)}`}`,
  );
  if (login.status !== 302) throw new Error(`/bff/login answered ${login.status}: ${login.body}`);
  return throughProvider(bff, provider, browser, login.headers.get('location') ?? '', options);
}

/** Follows an authorization URL through the provider's pages (sign-in, consent, organization) to the BFF's callback URL, not visited. */
export async function throughProvider(
  bff: TestBff,
  provider: TestProvider,
  browser: Browser,
  authorizationUrl: string,
  options: { email?: string; password?: string } = {},
): Promise<string> {
  let response = await browser.navigate(authorizationUrl);
  for (let step = 0; step < 6; step++) {
    if (response.status >= 300 && response.status < 400) {
      if (!response.url.startsWith(`${bff.publicUrl}/bff/callback`)) throw new Error(`Unexpected redirect to ${response.url}`);
      return response.url;
    }
    if (response.body.includes('/login"')) {
      response = await browser.submit({
        form: '/login',
        fields: { email: options.email ?? provider.admin.email, password: options.password ?? provider.admin.password },
      });
    } else if (response.body.includes('/consent"')) {
      response = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    } else if (response.body.includes('/organization"')) {
      response = await browser.submit({ form: '/organization' });
    } else {
      throw new Error(`Unexpected page ${response.status} at ${response.url}:\n${response.body.slice(0, 2000)}`);
    }
  }
  throw new Error('The sign-in did not finish');
}

/** The `Cookie` header the browser sends to the BFF. */
export function cookieHeader(browser: Browser, bff: TestBff): string {
  return [...browser.cookies(bff.url)].map(([name, value]) => `${name}=${value}`).join('; ');
}

/** The browser's BFF session, read through the session layer (without refreshing). */
export async function sessionOf(browser: Browser, bff: TestBff): Promise<BffSession> {
  const current = await bff.bff.sessions.current(new Headers({ cookie: cookieHeader(browser, bff) }));
  if (!current.session) throw new Error(`No session: ${current.code}`);
  return current.session;
}

/** Whether a session is still in a store at `now`. */
export async function isStored(store: BffSessionStore, id: string, now: number): Promise<boolean> {
  return (await store.read(id, now)) !== undefined;
}

/** Signs a logout token with the provider's active RS256 key (as the provider does), over `claims`. */
export async function signLogoutToken(
  provider: TestProvider,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = { typ: 'logout+jwt' },
): Promise<string> {
  const keys = await provider.server.idt.infrastructure.keys.listKeys();
  const key = keys.find((candidate) => candidate.status === 'active' && candidate.alg === 'RS256');
  if (!key) throw new Error('The provider has no active RS256 key');
  return signJwt(header, claims, key.privateJwk);
}

/** POSTs a logout token to the BFF's back-channel endpoint. */
export function postLogoutToken(bff: TestBff, token: string): Promise<Response> {
  return fetch(`${bff.url}/bff/backchannel-logout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ logout_token: token }).toString(),
  });
}

/** Parses a `Set-Cookie` value into its name, value and attributes (names lower-cased). */
export function parseSetCookie(value: string): { name: string; value: string; attributes: Map<string, string> } {
  const [pair = '', ...rest] = value.split(';');
  const index = pair.indexOf('=');
  const attributes = new Map<string, string>();
  for (const part of rest) {
    const [key = '', ...val] = part.trim().split('=');
    attributes.set(key.toLowerCase(), val.join('='));
  }
  return { name: pair.slice(0, index).trim(), value: pair.slice(index + 1).trim(), attributes };
}

/** Asserts a problem document answered to the scripted browser. */
export function expectBrowserProblem(response: BrowserResponse, status: number, code: string): Record<string, unknown> {
  const body = JSON.parse(response.body) as Record<string, unknown>;
  expect({ status: response.status, code: body.code }).toEqual({ status, code });
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  return body;
}
