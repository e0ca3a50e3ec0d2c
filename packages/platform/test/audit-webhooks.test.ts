import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AuditEntry, createManualClock, defineAuditActions } from '@idt/core';
import { mintAccessToken, startTestServer, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, seedWorld, type World } from './helpers.js';

const JOB = 'platform.webhooks.deliver';
const Actions = defineAuditActions('tests', {
  renamed: { action: 'tests.thing.renamed', description: 'A thing was renamed.' },
});

/** A local receiver that records what it is sent and answers 200. */
async function startReceiver() {
  const received: Array<{ headers: IncomingHttpHeaders; body: Record<string, any> }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Audit records as webhook messages (`audit.event`): published through the
 * outbox in the recording transaction, delivered to the endpoints that name
 * the type (of that organization, or of every one), never for a change that
 * rolled back, and never to a catch-all endpoint unasked.
 */
describe.each(testDialects())('audit.event webhooks on %s', (dialect) => {
  const clock = createManualClock(Date.now());
  let server: TestServer;
  let world: World;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let catchAll: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      clock,
      modules: { platform: { webhooks: { allowPrivateHosts: true, jobIntervalMs: 3_600_000 } } },
    });
    server.idt.infrastructure.audit.register(Object.values(Actions));
    world = await seedWorld(server);
    receiver = await startReceiver();
    catchAll = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    await catchAll?.close();
  });

  it('delivers each committed record of the organization to the endpoints subscribed to audit.event', async () => {
    const call = caller(server);
    const token = await mintAccessToken(server, { sub: world.platformAdmin.id, org_id: world.platform.id });
    const types = (await expectJson(await call('GET', '/v1/webhooks/event-types', { token }))).map(
      (entry: { type: string }) => entry.type,
    );
    expect(types).toContain('audit.event');
    const a = world.a.organization.id;
    const create = async (url: string, body: Record<string, unknown>) =>
      expectJson(await call('POST', '/v1/webhooks/endpoints', { token, body: { url, ...body } }), 201);
    await create(receiver.url, { eventTypes: ['audit.event'], organizationId: a });
    await create(catchAll.url, {});

    const entry = (organizationId: string | null, display: string): AuditEntry => ({
      action: Actions.renamed.action,
      organizationId,
      actor: { type: 'user', id: 'actor-1', display: 'ada@example.com' },
      target: { type: 'thing', id: 'thing-1', display },
    });
    const { db } = server.database;
    const audit = server.idt.infrastructure.audit;
    await db.transaction((trx) => audit.record([entry(a, 'committed'), entry(world.b.organization.id, 'other org')], trx));
    await db
      .transaction(async (trx) => {
        await audit.record([entry(a, 'rolled back')], trx);
        throw new Error('the change failed');
      })
      .catch(() => undefined);
    await server.idt.infrastructure.events.dispatchPending();
    await server.idt.runJobs(JOB);

    expect(receiver.received).toHaveLength(1);
    const [message] = receiver.received;
    expect(message?.body).toMatchObject({
      type: 'audit.event',
      data: { organizationId: a, action: 'tests.thing.renamed', target: { display: 'committed' }, sequence: 1 },
    });
    expect(message?.body.data).not.toHaveProperty('hash');
    expect(catchAll.received).toHaveLength(0);
  });
});
