/**
 * Helpers shared by the clients, organizations-at-authorize-time and
 * authorize-context suites of `@idt/oidc`.
 */
import {
  Browser,
  type BrowserResponse,
  discover,
  mintAccessToken,
  oidcClient,
  registerUser,
  seedMembership,
  seedOrganization,
  seedUser,
  type TestClient,
  type TestHost,
  tenantWithTokens,
} from '@idt/testing';
import { expect } from 'vitest';

/** Options of one API call. */
export interface CallOptions {
  readonly token?: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/** Calls the API of a test server as JSON. */
export function caller(server: TestHost) {
  return (method: string, path: string, options: CallOptions = {}) =>
    server.fetch(path, {
      method,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...options.headers,
      },
      ...(options.body !== undefined
        ? { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }
        : {}),
    });
}

/** Asserts a problem document and returns it. */
export async function expectProblem(response: Response, status: number, code: string): Promise<Record<string, any>> {
  const text = await response.text();
  const body = JSON.parse(text) as Record<string, any>;
  expect({ status: response.status, code: body.code }, text).toEqual({ status, code });
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  return body;
}

/** Asserts a JSON success response and returns its body. */
export async function expectJson(response: Response, status = 200): Promise<any> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return text === '' ? undefined : JSON.parse(text);
}

/** The payload of a JWT, unverified. */
export function jwtPayload(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, any>;
}

/**
 * The platform organization (with an owner), and two tenants A and B with a
 * token per role. Seeding an owner ends setup mode.
 */
export async function seedWorld(server: TestHost) {
  const db = server.database.db;
  const platform = await seedOrganization(db, { name: 'Platform', isPlatform: true });
  const platformAdmin = await seedUser(db, { firstName: 'Pat', lastName: 'Platform' });
  await seedMembership(db, { userId: platformAdmin.id, organizationId: platform.id, roles: ['owner'] });
  const platformUser = await seedUser(db, { firstName: 'Pia', lastName: 'Platform' });
  await seedMembership(db, { userId: platformUser.id, organizationId: platform.id, roles: ['user'] });
  const a = await tenantWithTokens(server, 'Alpha');
  const b = await tenantWithTokens(server, 'Beta');
  return {
    platform,
    platformAdmin,
    platformToken: await mintAccessToken(server, { sub: platformAdmin.id, org_id: platform.id }),
    platformUserToken: await mintAccessToken(server, { sub: platformUser.id, org_id: platform.id }),
    a,
    b,
  };
}

/** The stored row of a client. */
export function clientRow(server: TestHost, clientId: string): Promise<Record<string, any> | undefined> {
  return server.database.db('oidc_clients').where({ client_id: clientId }).first();
}

let counter = 0;
/** A unique suffix for client names, so every test gets fresh client ids (the lockout counts per id). */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix} ${Date.now().toString(36)}${counter}`;
}

/** Registers a client over the organization surface and returns the registration (asserting 201). */
export async function register(
  server: TestHost,
  token: string,
  organizationId: string,
  body: Record<string, unknown>,
): Promise<{ client: Record<string, any>; clientSecret: string; issuer: string; apiBaseUrl: string } & TestClient> {
  const response = await caller(server)('POST', `/v1/identity/organizations/${organizationId}/clients`, { token, body });
  const registration = await expectJson(response, 201);
  return {
    ...registration,
    clientId: registration.client.clientId,
    clientSecret: registration.clientSecret,
    record: registration.client,
  };
}

/** The openid-client configuration of a registered client (client_secret_basic). */
export function configFor(server: TestHost, client: { clientId: string; clientSecret: string }) {
  return discover(server, { clientId: client.clientId, clientSecret: client.clientSecret, record: {} }, 'basic');
}

/** What a failed grant answered: the OAuth error code and HTTP status. */
export async function grantError(attempt: Promise<unknown>): Promise<{ status: number | undefined; error: string | undefined }> {
  try {
    await attempt;
  } catch (caught) {
    const error = caught as {
      error?: string;
      status?: number;
      cause?: unknown;
      response?: Response;
    };
    if (typeof error.error === 'string') return { status: error.status, error: error.error };
    const challenges = Array.isArray(error.cause) ? (error.cause as Array<{ parameters?: { error?: string } }>) : [];
    const fromChallenge = challenges.find((challenge) => challenge.parameters?.error)?.parameters?.error;
    if (fromChallenge) return { status: error.status ?? error.response?.status, error: fromChallenge };
    if (error.response && !error.response.bodyUsed) {
      const body = (await error.response.json().catch(() => ({}))) as { error?: string };
      return { status: error.response.status, error: body.error };
    }
    throw caught;
  }
  throw new Error('The grant succeeded');
}

/** A client-credentials grant of a service account. */
export async function serviceToken(server: TestHost, client: { clientId: string; clientSecret: string }, scope: string) {
  const config = await configFor(server, client);
  return oidcClient.clientCredentialsGrant(config, { scope });
}

/**
 * Waits until the wall clock is in a later whole second than `since`, the
 * instant a revocation watermark was written at (watermarks are whole
 * seconds: tokens issued up to the end of that second are refused).
 */
export async function nextSecond(since = Date.now()): Promise<void> {
  const target = (Math.floor(since / 1000) + 1) * 1000 + 50;
  const wait = target - Date.now();
  // Not one of our time rules: a token newer than the watermark must come from oidc-provider, which stamps
  // `iat` from its own Date.now(); no injected clock reaches it, so only the wall clock's next second does (≤ 1 s).
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

/** A user who can sign in with a password (registered over HTTP). */
export async function passwordUser(server: TestHost, label: string) {
  const email = `${label}-${Date.now().toString(36)}${++counter}@example.com`.toLowerCase();
  const password = 'correct horse battery staple';
  const id = await registerUser(server, email, password);
  return { id, email, password };
}

/** The redirect URI every sign-in test client uses (nothing listens there: the Browser stops at the redirect). */
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** Whether a page of a sign-in was the consent page. */
export function sawConsent(pages: readonly BrowserResponse[]): boolean {
  return pages.some((page) => page.body.includes('/consent"'));
}

export { Browser };
