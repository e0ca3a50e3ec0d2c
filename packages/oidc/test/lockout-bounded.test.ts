import { randomBytes } from 'node:crypto';
import { createLogger, createManualClock } from '@idt/core';
import { createCacheInvalidator, createWindowCounter } from '@idt/core/knex';
import { createKnexClientLockout, UNKNOWN_CLIENT_LIMIT } from '@idt/oidc/knex';
import { bootstrapAdmin, createTestIdt, registerClient, type TestClient, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const FLOOD = 10_000;
const CONCURRENCY = 50;

function clientCredentials(server: TestIdt, clientId: string, clientSecret: string) {
  return server.fetch('/connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      scope: 'users.read',
      client_id: clientId,
      client_secret: clientSecret,
    }).toString(),
  });
}

/** Posts a form through the in-process instance and resolves with the status and body. */
async function postForm(server: TestIdt, url: string, form: Record<string, string>): Promise<{ status: number; body: string }> {
  const response = await server.send(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, body: await response.text() };
}

/** Runs `task(0..count-1)` with at most `limit` in flight; returns the statuses. */
async function runBounded(count: number, limit: number, task: (index: number) => Promise<number>): Promise<number[]> {
  const statuses: number[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      statuses[index] = await task(index);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return statuses;
}

const rowCount = async (server: TestIdt, table: string) =>
  Number((await server.database.db(table).count({ n: '*' }).first())?.n ?? 0);

describe.each(testDialects())('invalid-client lockout state on %s', (dialect) => {
  const clock = createManualClock('2030-01-01T00:00:00.000Z');
  let server: TestIdt;
  let service: TestClient;
  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock, env: { IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: '1000000' } });
    const admin = await bootstrapAdmin(server);
    service = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Lockout',
      scopes: ['users.read'],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it(`adds no row for ${FLOOD} token requests with unknown client ids, and keeps at most ${UNKNOWN_CLIENT_LIMIT} in memory`, async () => {
    const failuresBefore = await rowCount(server, 'oidc_client_auth_failures');
    const countersBefore = await rowCount(server, 'core_rate_limit_counters');
    const statuses = await runBounded(FLOOD, CONCURRENCY, async (index) => {
      // Random ids of 16 to 414 characters, some longer than a client id can be.
      const clientId = randomBytes(8 + (index % 200)).toString('hex');
      const { status, body } = await postForm(server, `${server.url}/connect/token`, {
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: 'guess',
      });
      return (JSON.parse(body) as { error?: string }).error === 'invalid_client' ? status : -status;
    });
    expect(statuses.filter((status) => status !== 401)).toEqual([]);
    expect(await rowCount(server, 'oidc_client_auth_failures')).toBe(failuresBefore);
    // The auth window of the one caller IP may add one counter row; no per-client counter is written.
    expect(await rowCount(server, 'core_rate_limit_counters')).toBeLessThanOrEqual(countersBefore + 1);
    expect(await server.database.db('core_rate_limit_counters').where('key', 'like', 'invalid-client:%')).toEqual([]);
    expect(server.idt.services.oidc.lockout.unknownClientsTracked()).toBe(UNKNOWN_CLIENT_LIMIT);
    // A volume test, not a timed one: 10,000 requests take about 30 s on a slow two-core machine, and
    // twice that while another test file shares the cores.
  }, 240_000);

  it('still locks a registered client out after five failures within five minutes, for five minutes', async () => {
    const wrong = async () => expect((await clientCredentials(server, service.clientId, 'wrong')).status).toBe(401);
    const right = () => clientCredentials(server, service.clientId, service.clientSecret);
    for (let attempt = 0; attempt < 4; attempt++) await wrong();
    // The window ends: four old failures and a new one are not five within five minutes.
    clock.advance(300_001);
    await wrong();
    // A success forgets the failures: four more do not lock, the fifth does.
    expect((await right()).status).toBe(200);
    for (let attempt = 0; attempt < 4; attempt++) await wrong();
    expect(server.idt.services.oidc.lockout.isLocked(service.clientId)).toBe(false);
    await wrong();
    expect(server.idt.services.oidc.lockout.isLocked(service.clientId)).toBe(true);
    const refused = await right();
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: 'invalid_client' });
    const row = await server.database.db('oidc_client_auth_failures').where({ client_id: service.clientId }).first();
    expect(Number(row.total)).toBe(11);
    expect(new Date(row.locked_until).getTime()).toBe(clock.now().getTime() + 300_000);
    clock.advance(299_000);
    expect((await right()).status).toBe(401);
    clock.advance(1_000);
    expect((await right()).status).toBe(200);
  });

  it('audits unknown client ids cut to 64 characters and forgets the least recent beyond its bound', async () => {
    // A second lockout over the server's database, with a small bound and a logger of its own.
    const { db } = server.database;
    const lines: Array<Record<string, unknown>> = [];
    const invalidator = createCacheInvalidator({ db });
    try {
      const lockout = createKnexClientLockout({
        db,
        counter: createWindowCounter({ db, clock }),
        invalidator,
        unknownClientLimit: 2,
        clock,
        logger: createLogger({ level: 'warn', write: (line) => lines.push(JSON.parse(line)) }),
      });
      const details = { ip: '192.0.2.1', route: 'token', reason: 'client not found' };
      const long = 'x'.repeat(500);
      await lockout.recordFailure(long, details);
      await lockout.recordFailure(long, details);
      await lockout.recordFailure('second', details);
      await lockout.recordFailure('third', details);
      expect(lockout.unknownClientsTracked()).toBe(2);
      expect(lines).toHaveLength(4);
      expect(lines[1]).toMatchObject({
        level: 'warn',
        msg: 'audit: invalid_client',
        clientId: 'x'.repeat(64),
        unknownClient: true,
        failures: 2,
        ip: '192.0.2.1',
        route: 'token',
      });
      // The longest-quiet id was forgotten: it counts from one again.
      await lockout.recordFailure(long, details);
      expect(lines[4]).toMatchObject({ clientId: 'x'.repeat(64), failures: 1 });
      expect(await db('oidc_client_auth_failures').whereIn('client_id', [long, 'second', 'third'])).toEqual([]);
      expect(lockout.isLocked(long)).toBe(false);
    } finally {
      await invalidator.close();
    }
  });
});
