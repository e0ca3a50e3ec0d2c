import { createTestDatabase, runSignInFlow, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHonoApp } from '../src/app.js';

const OPERATOR = { userId: null, platformAdmin: true } as const;

describe('Hono on @hono/node-server with idt.fetch under /idt', () => {
  let database: TestDatabase;
  let app: Awaited<ReturnType<typeof startHonoApp>>;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    app = await startHonoApp({
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

  it('runs setup, discovery, sign-in, code + PKCE, userinfo, an API call, refresh and logout over HTTP', async () => {
    const flow = await runSignInFlow({
      baseUrl: app.baseUrl,
      async registerClient(organizationId, redirectUri, postLogoutRedirectUri) {
        const registration = await app.idt.services.oidc.clients.register(OPERATOR, organizationId, {
          kind: 'application',
          name: 'Hono host',
          redirectUris: [redirectUri],
          postLogoutRedirectUris: [postLogoutRedirectUri],
          scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'],
        });
        return { clientId: registration.client.clientId, clientSecret: registration.clientSecret };
      },
    });
    expect(flow.issuer).toBe(app.baseUrl);
  });

  it('leaves the rest of the app to Hono', async () => {
    const home = await fetch(app.baseUrl.replace(/\/idt$/, '/'));
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('/idt/.well-known/openid-configuration');
    const outside = await fetch(app.baseUrl.replace(/\/idt$/, '/v1/identity/setup/status'));
    expect(outside.status).toBe(404);
  });
});
