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

/** The password of every upstream user. */
export const UPSTREAM_PASSWORD = 'correct horse battery staple';

/** A second idt as an organization's OpenID provider: its server and the client the downstream signs in with. */
export interface UpstreamIdt {
  readonly server: TestServer;
  readonly client: TestClient;
  readonly organizationId: string;
}

/**
 * Starts a second idt as the upstream OpenID provider, with a client whose
 * redirect URI is `redirectUri` and a member (password {@link UPSTREAM_PASSWORD})
 * for each address of `emails`.
 *
 * @example
 * const upstream = await startUpstreamIdt('http://127.0.0.1:9/sso/oidc/callback', ['ada@alpha.example']);
 */
export async function startUpstreamIdt(redirectUri: string, emails: readonly string[]): Promise<UpstreamIdt> {
  const server = await startTestServer();
  const admin = await bootstrapAdmin(server);
  const client = await registerClient(server, await admin.token(), admin.organizationId, {
    kind: 'application',
    name: 'Downstream idt',
    redirectUris: [redirectUri],
    scopes: ['openid', 'email', 'profile'],
  });
  for (const email of emails) {
    const userId = await registerUser(server, email, UPSTREAM_PASSWORD);
    // idt signs a person in to an organization's application only as a member of it.
    await seedMembership(server.database.db, { userId, organizationId: admin.organizationId });
  }
  return { server, client, organizationId: admin.organizationId };
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
