import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from './browser.js';
import { createTestDatabase, type TestDatabase, type TestDialect } from './database.js';
import { oidcClient, redeemCode, signIn } from './oidc.js';

/** What {@link runSignInFlow} needs of a running idt, however it is mounted. */
export interface FlowTarget {
  /** The base URL idt answers under (the issuer), mount path included. */
  readonly baseUrl: string;
  /** Sends a request: the global `fetch` over HTTP, or an in-process Fetch handler. */
  readonly fetch?: typeof fetch;
  /**
   * Registers a confidential application client in the first administrator's
   * organization (through the host's services, the way an operator's CLI does)
   * and returns its credentials.
   */
  registerClient(
    organizationId: string,
    redirectUri: string,
    postLogoutRedirectUri: string,
  ): Promise<{ clientId: string; clientSecret: string }>;
}

/** What the flow observed, for further checks. */
export interface FlowResult {
  readonly userId: string;
  readonly organizationId: string;
  readonly clientId: string;
  readonly issuer: string;
  readonly accessToken: string;
}

/**
 * Drives a whole session the way a relying party and a person would, with
 * `openid-client`: setup of the first administrator, discovery, authorize,
 * the sign-in form, code + PKCE exchange, userinfo, an API call with the
 * access token, refresh, and RP-initiated logout (after which the refresh
 * token no longer works).
 */
export async function runSignInFlow(target: FlowTarget): Promise<FlowResult> {
  const send = target.fetch ?? fetch;
  const base = target.baseUrl.replace(/\/+$/, '');
  const email = 'admin@example.com';
  const password = 'correct horse battery staple';
  const setup = await send(`${base}/v1/identity/setup/admin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password, firstName: 'Ada', lastName: 'Admin', organizationName: 'Platform' }),
  });
  expect(setup.status, await setup.clone().text()).toBe(201);
  const { userId, organizationId } = (await setup.json()) as { userId: string; organizationId: string };

  const redirectUri = 'https://rp.example.com/callback';
  const signedOut = 'https://rp.example.com/signed-out';
  const client = await target.registerClient(organizationId, redirectUri, signedOut);

  const config = await oidcClient.discovery(
    new URL(base),
    client.clientId,
    { id_token_signed_response_alg: 'RS256' },
    oidcClient.ClientSecretPost(client.clientSecret),
    { execute: [oidcClient.allowInsecureRequests], [oidcClient.customFetch]: send as never },
  );
  const issuer = config.serverMetadata().issuer;
  expect(issuer).toBe(base);
  expect(config.serverMetadata().authorization_endpoint).toBe(`${base}/connect/authorize`);

  const browser = new Browser({}, send);
  const result = await signIn(config, {
    redirectUri,
    scope: 'openid profile email roles offline_access users.read',
    email,
    password,
    browser,
  });
  const tokens = await redeemCode(config, result);
  expect(tokens.claims()).toMatchObject({ sub: userId, iss: base });
  expect(tokens.refresh_token).toBeTruthy();

  const userinfo = await oidcClient.fetchUserInfo(config, tokens.access_token, userId);
  expect(userinfo).toMatchObject({ sub: userId, email, org_id: organizationId, roles: ['owner'] });

  const me = await send(`${base}/v1/identity/users/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(me.status).toBe(200);
  expect(await me.json()).toMatchObject({ id: userId, email });

  const refreshed = await oidcClient.refreshTokenGrant(config, tokens.refresh_token ?? '');
  expect(refreshed.refresh_token).toBeTruthy();
  expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

  // RP-initiated logout through the confirmation page: the session and its tokens end.
  const logoutUrl = oidcClient.buildEndSessionUrl(config, {
    id_token_hint: tokens.id_token ?? '',
    post_logout_redirect_uri: signedOut,
  });
  const confirmation = await browser.navigate(logoutUrl.href);
  expect(confirmation.status).toBe(200);
  const done = await browser.submit({ form: 'logout', fields: { logout: 'yes' } });
  expect(done.url.startsWith(signedOut) || done.body.includes(signedOut) || done.status === 200).toBe(true);
  await expect(oidcClient.refreshTokenGrant(config, refreshed.refresh_token ?? '')).rejects.toThrow();

  return { userId, organizationId, clientId: client.clientId, issuer, accessToken: tokens.access_token };
}

/** What {@link registerFlowClient} needs: a composed idt with the OpenID provider module. */
export interface IdtWithClients {
  readonly services: {
    readonly oidc: {
      readonly clients: {
        register(
          actor: { userId: null; platformAdmin: true },
          organizationId: string,
          input: unknown,
        ): Promise<{ client: { clientId: string }; clientSecret: string }>;
      };
    };
  };
}

/**
 * Registers a confidential application client for {@link runSignInFlow}
 * through the host's services, as the platform operator (the way `idt
 * register-client` does).
 */
export async function registerFlowClient(
  idt: IdtWithClients,
  name: string,
  organizationId: string,
  redirectUri: string,
  postLogoutRedirectUri: string,
): Promise<{ clientId: string; clientSecret: string }> {
  const registration = await idt.services.oidc.clients.register({ userId: null, platformAdmin: true }, organizationId, {
    kind: 'application',
    name,
    redirectUris: [redirectUri],
    postLogoutRedirectUris: [postLogoutRedirectUri],
    scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'],
  });
  return { clientId: registration.client.clientId, clientSecret: registration.clientSecret };
}

/** An example app started by its own `start…App` function. */
export interface StartedExampleApp {
  /** idt's base URL under the app's mount, e.g. `http://127.0.0.1:1234/idt`. */
  readonly baseUrl: string;
  readonly idt: IdtWithClients;
  close(): Promise<void>;
}

/** How a framework example starts: on a port and host, over a database, with environment variables. */
export type StartExampleApp<App extends StartedExampleApp> = (options: {
  port: number;
  host: string;
  database: Knex;
  env: Record<string, string>;
}) => Promise<App>;

/**
 * Starts a framework example for the enclosing suite: before its tests, on
 * a free loopback port over a throwaway database of `dialect`, in the
 * Testing environment; after them, closes it and drops the database.
 * Returns the started app (call it inside tests).
 */
export function startExampleAppForSuite<App extends StartedExampleApp>(
  start: StartExampleApp<App>,
  dialect: TestDialect,
): () => App {
  let database: TestDatabase | undefined;
  let app: App | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    app = await start({
      port: 0,
      host: '127.0.0.1',
      database: database.db,
      env: { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent', IDT_DATA_DIR: database.dataDir },
    });
  });
  afterAll(async () => {
    await app?.close();
    await database?.destroy();
  });
  return () => {
    if (!app) throw new Error('The example app has not started');
    return app;
  };
}

/**
 * The suite every framework example passes: started on a loopback port over
 * a throwaway database, idt signs a user in through its mount with
 * openid-client, and the host keeps the paths outside the mount.
 */
export function describeExampleApp<App extends StartedExampleApp>(
  title: string,
  start: StartExampleApp<App>,
  dialects: readonly TestDialect[] = ['sqlite'],
  more?: (started: { app(): App; flow(): FlowResult }) => void,
): void {
  describe.each(dialects)(`${title} on %s`, (dialect) => {
    const started = startExampleAppForSuite(start, dialect);
    let flow: FlowResult;

    it('runs setup, discovery, sign-in, code + PKCE, userinfo, an API call, refresh and logout over HTTP', async () => {
      expect(started().baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/idt$/);
      flow = await runSignInFlow({
        baseUrl: started().baseUrl,
        registerClient: (...args) => registerFlowClient(started().idt, title, ...args),
      });
      expect(flow.issuer).toBe(started().baseUrl);
    });

    it('leaves the rest of the app to the host', async () => {
      const home = await fetch(started().baseUrl.replace(/\/idt$/, '/'));
      expect(home.status).toBe(200);
      expect(await home.text()).toContain('/idt/.well-known/openid-configuration');
      const outside = await fetch(started().baseUrl.replace(/\/idt$/, '/v1/identity/setup/status'));
      expect(outside.status).toBe(404);
    });

    more?.({ app: started, flow: () => flow });
  });
}
