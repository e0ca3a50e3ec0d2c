import { registerFlowClient, runSignInFlow, startTestServer, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe.each(testDialects())('the reference server under a path prefix on %s', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { IDT_PATH_PREFIX: '/idt' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('runs setup, discovery, sign-in, code + PKCE, userinfo, an API call, refresh and logout over HTTP', async () => {
    expect(server.url).toMatch(/\/idt$/);
    const flow = await runSignInFlow({
      baseUrl: server.url,
      registerClient: (...args) => registerFlowClient(server.idt, 'Reference server', ...args),
    });
    expect(flow.issuer).toBe(server.url);
  });
});
