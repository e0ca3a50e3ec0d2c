import {
  connectTestDatabase,
  createTestDatabase,
  referenceMigrationSets as migrationSets,
  startTestServer,
  type TestDatabase,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** Small windows so a handful of requests reaches them. */
const smallLimits = {
  IDT_RATE_LIMIT_GLOBAL_PERMIT_LIMIT: '3',
  IDT_RATE_LIMIT_GLOBAL_WINDOW_SECONDS: '60',
  IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: '2',
  IDT_RATE_LIMIT_AUTH_WINDOW_SECONDS: '60',
};

function postSetup(server: TestServer, body: string, headers: Record<string, string> = {}) {
  return server.fetch('/v1/identity/setup/admin', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

async function expectRateLimited(response: Response, windowSeconds = 60) {
  expect(response.status).toBe(429);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ type: 'about:blank', status: 429, title: 'Too Many Requests', code: 'RateLimit.Exceeded' });
  expect(body.detail).toBe(`Too many requests; retry in ${retryAfter} seconds.`);
  expect(body.traceId).toMatch(/^[0-9a-f]{32}$/);
}

describe.each(testDialects())('rate limiting over HTTP on %s', (dialect) => {
  describe('in Testing', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ dialect, env: { ...smallLimits, IDT_TRUST_PROXY: 'true' } });
    });
    afterAll(async () => {
      await server.close();
    });

    it('answers 429 RateLimit.Exceeded with Retry-After past the global limit', async () => {
      for (let i = 0; i < 3; i++) expect((await server.fetch('/v1/identity/setup/status')).status).toBe(200);
      await expectRateLimited(await server.fetch('/v1/identity/setup/status'));
      await expectRateLimited(await server.fetch('/v1/identity/setup/status'));
    });

    it('partitions anonymous callers by client IP', async () => {
      const from = (ip: string) => server.fetch('/v1/identity/setup/status', { headers: { 'x-forwarded-for': ip } });
      for (let i = 0; i < 3; i++) expect((await from('203.0.113.7')).status).toBe(200);
      await expectRateLimited(await from('203.0.113.7'));
      expect((await from('203.0.113.8')).status).toBe(200);
    });

    it('counts every request whatever its outcome, under the policy of its route', async () => {
      const headers = { 'x-forwarded-for': '198.51.100.1' };
      expect((await postSetup(server, '{"email":"not-an-email"}', headers)).status).toBe(400);
      expect((await postSetup(server, '{"email":', headers)).status).toBe(400);
      // Two failed requests used the auth window: even a valid body is now refused, and nothing is written.
      const valid = JSON.stringify({
        email: 'ada@example.com',
        password: 'correct horse battery staple',
        firstName: 'Ada',
        lastName: 'Lovelace',
        organizationName: 'Acme Platform',
      });
      await expectRateLimited(await postSetup(server, valid, headers));
      expect(await (await server.fetch('/v1/identity/setup/status', { headers })).json()).toEqual({ setupRequired: true });
      const rows = await server.database.db('core_rate_limit_counters').where('key', 'like', '%198.51.100.1').orderBy('key');
      expect(rows.map((row) => [row.key, Number(row.count)])).toEqual([
        ['auth:ip:198.51.100.1', 3],
        ['global:ip:198.51.100.1', 1],
      ]);
    });

    it('does not limit health routes', async () => {
      for (let i = 0; i < 8; i++) {
        expect((await server.fetch('/health')).status).toBe(200);
        expect((await server.fetch('/health/ready')).status).toBe(200);
      }
    });
  });

  describe('in Development', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ dialect, env: smallLimits, config: { environment: 'Development' } });
    });
    afterAll(async () => {
      await server.close();
    });

    it('limits nothing and keeps no counters', async () => {
      for (let i = 0; i < 8; i++) expect((await server.fetch('/v1/identity/setup/status')).status).toBe(200);
      for (let i = 0; i < 4; i++) expect((await postSetup(server, '{}')).status).toBe(400);
      const [{ n }] = (await server.database.db('core_rate_limit_counters').count({ n: '*' })) as [{ n: unknown }];
      expect(Number(n)).toBe(0);
    });
  });
});

describe.skipIf(!testDialects().includes('postgres'))('rate limiting across two instances on one Postgres database', () => {
  let database: TestDatabase;
  let secondPool: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    database = await createTestDatabase('postgres', migrationSets);
    // The second instance gets its own connection pool, as a separate process would.
    secondPool = connectTestDatabase(database);
    const env = { IDT_RATE_LIMIT_GLOBAL_PERMIT_LIMIT: '5', IDT_RATE_LIMIT_GLOBAL_WINDOW_SECONDS: '60' };
    a = await startTestServer({ database, env });
    b = await startTestServer({ database: secondPool, env });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await secondPool?.destroy();
    await database?.destroy();
  });

  it('shares one window between the instances', async () => {
    expect(a.url).not.toBe(b.url);
    const status = (server: TestServer) => server.fetch('/v1/identity/setup/status');
    for (let i = 0; i < 3; i++) expect((await status(a)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await status(b)).status).toBe(200);
    await expectRateLimited(await status(a));
    await expectRateLimited(await status(b));
    const rows = await database.db('core_rate_limit_counters').select('key', 'count');
    expect(rows).toEqual([{ key: 'global:ip:127.0.0.1', count: 7 }]);
  });
});
