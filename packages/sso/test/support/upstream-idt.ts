import {
  type Browser,
  bootstrapAdmin,
  registerClient,
  registerUser,
  seedMembership,
  startTestServer,
  type TestClient,
  type TestServer,
} from '@idt/testing';
import { afterAll, beforeAll } from 'vitest';

/** The password of every upstream user. */
export const UPSTREAM_PASSWORD = 'correct horse battery staple';

/** The origin of the downstream idt: it answers in-process; the upstream's redirect URI names it. */
export const DOWNSTREAM = 'http://127.0.0.1:9';

/** The downstream's OpenID callback, the redirect URI of the upstream's client (nothing listens there). */
export const DOWNSTREAM_CALLBACK = `${DOWNSTREAM}/sso/oidc/callback`;

/** A second idt as an organization's OpenID provider: its server and the client the downstream signs in with. */
export interface UpstreamIdt {
  readonly server: TestServer;
  readonly client: TestClient;
  readonly organizationId: string;
  /** Registers one more client of the organization, named `name`, with the same redirect URI and scopes. */
  registerClient(name: string): Promise<TestClient>;
}

/**
 * Starts a second idt as the upstream OpenID provider, with a client named
 * `Downstream idt` whose redirect URI is `redirectUri` and a member
 * (password {@link UPSTREAM_PASSWORD}) for each address of `emails`.
 *
 * @example
 * const upstream = await startUpstreamIdt(DOWNSTREAM_CALLBACK, ['ada@alpha.example']);
 */
export async function startUpstreamIdt(redirectUri: string, emails: readonly string[]): Promise<UpstreamIdt> {
  const server = await startTestServer();
  const admin = await bootstrapAdmin(server);
  const register = async (name: string) =>
    registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name,
      redirectUris: [redirectUri],
      scopes: ['openid', 'email', 'profile'],
    });
  const upstream = {
    server,
    client: await register('Downstream idt'),
    organizationId: admin.organizationId,
    registerClient: register,
  };
  for (const email of emails) await addUpstreamMember(upstream, email);
  return upstream;
}

/**
 * Registers `email` at the upstream (password {@link UPSTREAM_PASSWORD}) as a
 * member of its organization: idt signs a person in to an organization's
 * application only as a member of it.
 *
 * @returns the upstream user id.
 */
export async function addUpstreamMember(upstream: Pick<UpstreamIdt, 'server' | 'organizationId'>, email: string) {
  const userId = await registerUser(upstream.server, email, UPSTREAM_PASSWORD);
  await seedMembership(upstream.server.database.db, { userId, organizationId: upstream.organizationId });
  return userId;
}

/**
 * The upstream idt of a test file: started before its tests (a client for
 * {@link DOWNSTREAM_CALLBACK} and a member for each address of `emails`),
 * closed after them. Read its fields in tests and hooks, once it started.
 *
 * @example
 * const upstream = useUpstreamIdt(['grace@alpha.example']);
 * it('signs in', () => expect(upstream.server.url).toMatch(/^http/));
 */
export function useUpstreamIdt(emails: readonly string[]): UpstreamIdt {
  const upstream = {} as UpstreamIdt;
  beforeAll(async () => {
    Object.assign(upstream, await startUpstreamIdt(DOWNSTREAM_CALLBACK, emails));
  }, 60_000);
  afterAll(async () => {
    await upstream.server?.close();
  });
  return upstream;
}

/** The `oidc` settings of a downstream connection to `upstream`: its issuer and the client of the downstream. */
export function upstreamOidcOf(upstream: UpstreamIdt) {
  return { issuer: upstream.server.url, clientId: upstream.client.clientId, clientSecret: upstream.client.clientSecret };
}

/** Follows the upstream's sign-in pages (password, consent, organization) to the redirect back; the URL it leads to. */
export async function signInAtUpstream(url: string, browser: Browser, email: string): Promise<URL> {
  let response = await browser.navigate(url);
  for (let step = 0; step < 6; step++) {
    if (response.status >= 300 && response.status < 400) return new URL(response.url);
    if (response.body.includes('action="') && response.body.includes('/login"')) {
      response = await browser.submit({ form: '/login', fields: { email, password: UPSTREAM_PASSWORD } });
    } else if (response.body.includes('/consent"')) {
      response = await browser.submit({ form: '/consent', fields: { decision: 'approve' } });
    } else if (response.body.includes('/organization"')) {
      response = await browser.submit({ form: '/organization' });
    } else {
      throw new Error(`Unexpected page ${response.status} at ${response.url}:\n${response.body.slice(0, 2000)}`);
    }
  }
  throw new Error('The upstream sign-in did not finish');
}
