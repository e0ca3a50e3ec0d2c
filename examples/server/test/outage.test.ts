import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { databaseConfig, RECONNECT_MAX_DELAY_MS } from '@idt/core/knex';
import {
  bearer,
  bootstrapAdmin,
  connectTestDatabase,
  createTestDatabase,
  mintAccessToken,
  referenceMigrationSets,
  registerClient,
  seedUser,
  startTestServer,
  type TestAdmin,
  type TestClient,
  type TestDatabase,
  type TestServer,
  testDialects,
} from '@idt/testing';
import knexFactory from 'knex';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/** A TCP proxy in front of Postgres that can be cut (every connection dropped, new ones refused) and restored. */
interface FaultProxy {
  readonly port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const { port } = server.address() as { port: number };
  const cut = async () => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await closed;
  };
  return { port, cut, restore: () => listen(port), close: cut };
}

interface Outcome {
  readonly kind: 'token' | 'me' | 'warm';
  readonly startedAt: number;
  readonly endedAt: number;
  readonly status: number | 'network-error';
  readonly contentType: string | null;
  readonly retryAfter: string | null;
  readonly body: string;
}

const postgres = testDialects().includes('postgres');

describe.skipIf(!postgres)('reference server through a database outage (Postgres)', () => {
  let proxy: FaultProxy;
  let database: TestDatabase;
  let proxied: TestDatabase;
  let server: TestServer;
  /** A second instance on a direct connection: its changes reach `server` only over LISTEN/NOTIFY. */
  let other: TestServer;
  let service: TestClient;
  let warmToken: string;
  let admin: TestAdmin;
  const freshTokens: string[] = [];
  /** What knex logged on the proxied pool. */
  const poolLog: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('postgres', referenceMigrationSets);
    const direct = new URL(database.url);
    proxy = await startFaultProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    const viaProxy = new URL(database.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    // The pool's own complaints during the outage (an "Acquire connection error" with a stack per attempt) are
    // the expected noise of this test: kept here, and printed only for a test that fails.
    const db = knexFactory({
      ...databaseConfig(viaProxy.href),
      log: {
        warn: (message: string) => void poolLog.push(`warn: ${message}`),
        error: (message: string) => void poolLog.push(`error: ${message}`),
        deprecate: (message: string) => void poolLog.push(`deprecate: ${message}`),
        debug: () => undefined,
      },
    });
    proxied = { dialect: database.dialect, url: viaProxy.href, dataDir: database.dataDir, db, destroy: () => db.destroy() };
    server = await startTestServer({ database: proxied });
    other = await startTestServer({ database: connectTestDatabase(database) });
    admin = await bootstrapAdmin(server);
    warmToken = await admin.token();
    service = await registerClient(server, warmToken, admin.organizationId, {
      kind: 'service-account',
      name: 'Outage robot',
      scopes: ['users.read'],
    });
    // Users whose tokens are used once each: their revocation watermarks are never cached.
    for (let index = 0; index < 120; index++) {
      const user = await seedUser(database.db);
      freshTokens.push(await mintAccessToken(server, { sub: user.id }));
    }
  }, 30_000);

  beforeEach((context) => {
    const from = poolLog.length;
    context.onTestFailed(() => {
      const lines = poolLog.slice(from);
      if (lines.length > 0)
        console.error(`The proxied pool logged ${lines.length} line(s) during this test:\n${lines.join('\n')}`);
    });
  });

  afterAll(async () => {
    await server?.close();
    await other?.close();
    await other?.database.destroy();
    await proxied?.destroy();
    await proxy?.close();
    await database?.destroy();
  });

  const tokenRequest = (client: TestClient, target: TestServer = server) =>
    target.fetch('/connect/token', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'users.read' }).toString(),
    });

  async function send(kind: Outcome['kind']): Promise<Outcome> {
    const startedAt = Date.now();
    try {
      const response =
        kind === 'token'
          ? await tokenRequest(service)
          : kind === 'warm'
            ? await server.fetch('/v1/identity/auth/whoami', { headers: bearer(warmToken) })
            : await server.fetch('/v1/identity/users/me', { headers: bearer(freshTokens.shift() ?? warmToken) });
      return {
        kind,
        startedAt,
        endedAt: Date.now(),
        status: response.status,
        contentType: response.headers.get('content-type'),
        retryAfter: response.headers.get('retry-after'),
        body: await response.text(),
      };
    } catch (error) {
      return {
        kind,
        startedAt,
        endedAt: Date.now(),
        status: 'network-error',
        contentType: null,
        retryAfter: null,
        body: String(error),
      };
    }
  }

  it('answers 503 during the outage, never exits, and recovers by itself', async () => {
    const crashes: unknown[] = [];
    const record = (reason: unknown) => crashes.push(reason);
    process.on('unhandledRejection', record);
    process.on('uncaughtException', record);
    try {
      // Warm the caches the in-memory path needs (the warm token's principal, the service client).
      expect((await send('warm')).status).toBe(200);
      expect((await send('token')).status).toBe(200);

      const outcomes: Promise<Outcome>[] = [];
      const kinds: Outcome['kind'][] = ['token', 'me', 'warm', 'me'];
      let tick = 0;
      // Real time: a steady load of about 20 requests a second against real sockets.
      const load = setInterval(() => outcomes.push(send(kinds[tick++ % kinds.length] as Outcome['kind'])), 50);
      try {
        // Real I/O: a second of load before the cut.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const cutAt = Date.now();
        await proxy.cut();

        const live = await server.fetch('/health');
        expect(live.status).toBe(200);
        const readyStarted = Date.now();
        const ready = await server.fetch('/health/ready');
        expect(ready.status).toBe(503);
        expect(Date.now() - readyStarted).toBeLessThan(2500);
        expect(ready.headers.get('content-type')).toContain('application/problem+json');

        // Real I/O: the outage lasts three seconds of wall time (the pool's own timers run on it).
        await new Promise((resolve) => setTimeout(resolve, 3000 - (Date.now() - cutAt)));
        const restoredAt = Date.now();
        await proxy.restore();

        let recoveredAt: number | undefined;
        while (Date.now() - restoredAt < 5000) {
          const probe = await server.fetch('/v1/identity/users/me', { headers: bearer(freshTokens.shift() ?? warmToken) });
          const readiness = await server.fetch('/health/ready');
          if (probe.status === 200 && readiness.status === 200) {
            recoveredAt = Date.now();
            break;
          }
          // Real I/O: the pool reconnects on its own schedule.
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(recoveredAt, 'requests answer 200 again within 5 s of the restore').toBeDefined();
        clearInterval(load);
        const settled = await Promise.all(outcomes);

        // Never a reset, never a 500: every answer is a success or a 503 that says to retry.
        const bad = settled.filter((outcome) => outcome.status !== 200 && outcome.status !== 503);
        expect(bad).toEqual([]);
        const during = settled.filter((outcome) => outcome.startedAt >= cutAt && outcome.endedAt <= restoredAt);
        expect(during.length).toBeGreaterThan(20);
        const unavailable = settled.filter((outcome) => outcome.status === 503);
        expect(unavailable.length).toBeGreaterThan(0);
        for (const outcome of unavailable) {
          expect(outcome.retryAfter).toMatch(/^\d+$/);
          if (outcome.kind === 'token') {
            expect(JSON.parse(outcome.body)).toMatchObject({ error: 'temporarily_unavailable' });
          } else {
            expect(outcome.contentType).toContain('application/problem+json');
            expect(JSON.parse(outcome.body)).toMatchObject({ status: 503, code: 'Database.Unavailable' });
          }
        }
        // Fresh users need the database: refused while it is gone.
        expect(during.filter((outcome) => outcome.kind === 'me').every((outcome) => outcome.status === 503)).toBe(true);
        // Tokens whose revocation data is cached are not asserted to pass: while the LISTEN connection is down the
        // cache invalidator empties every cache (it cannot hear other instances' revocations), so they need the
        // database too; they answer 503 like the rest, never 500.
        expect(during.filter((outcome) => outcome.kind === 'warm').length).toBeGreaterThan(0);
      } finally {
        clearInterval(load);
        await Promise.allSettled(outcomes);
      }
      expect(crashes).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
      process.off('uncaughtException', record);
    }
  }, 30_000);

  it('hears other instances again after the outage: a secret rotated elsewhere stops working within 1 s', async () => {
    // The LISTEN connection comes back by itself, at most RECONNECT_MAX_DELAY_MS after the database.
    const invalidator = server.idt.infrastructure.invalidator;
    const deadline = Date.now() + RECONNECT_MAX_DELAY_MS + 3000;
    while (!invalidator.isLive() && Date.now() < deadline) {
      // Real I/O: the reconnect is a new database connection.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(invalidator.isLive(), 'the LISTEN connection is back').toBe(true);
    expect((await tokenRequest(service)).status).toBe(200);
    const rotated = await other.fetch(
      `/v1/identity/organizations/${admin.organizationId}/clients/${service.clientId}/rotate-secret`,
      {
        method: 'POST',
        // Tokens name their issuer: the other instance needs one of its own.
        headers: bearer(await mintAccessToken(other, { sub: admin.userId, org_id: admin.organizationId })),
      },
    );
    expect(rotated.status).toBe(200);
    const rotatedAt = Date.now();
    let refusedAfter: number | undefined;
    while (Date.now() - rotatedAt < 1000) {
      if ((await tokenRequest(service)).status === 401) {
        refusedAfter = Date.now() - rotatedAt;
        break;
      }
      // Real I/O: the eviction travels over LISTEN/NOTIFY.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(refusedAfter, 'the old secret is refused within 1 s (the LISTEN connection is back)').toBeDefined();
  });
});
