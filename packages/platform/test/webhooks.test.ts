import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createManualClock, type ManualClock } from '@idt/core';
import {
  METADATA_URLS,
  mintAccessToken,
  mintServiceToken,
  RESOLVES_TO_METADATA,
  startTestServer,
  type TestDialect,
  type TestServer,
  tableResolver,
  testDialects,
  watchConnections,
} from '@idt/testing';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { WEBHOOK_ENDPOINTS_CACHE } from '../src/index.js';
import { caller, expectJson, expectProblem, seedWorld, type World } from './helpers.js';

const JOB = 'platform.webhooks.deliver';

/** What the test servers' resolver answers, by host name (other names do not resolve); tests add names as they go. */
const { resolve, answers: dnsAnswers } = tableResolver(RESOLVES_TO_METADATA);

/**
 * A test server's options: deliveries to local receivers allowed, host names
 * resolved by {@link dnsAnswers}, the delivery job run by the tests alone.
 */
function webhookServer(dialect: TestDialect, clock: ManualClock) {
  return {
    dialect,
    clock,
    modules: { platform: { webhooks: { allowPrivateHosts: true, jobIntervalMs: 3_600_000, resolve } } },
  };
}

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A local receiver answering with the queued statuses (200 once the queue is empty). */
async function startReceiver() {
  const received: Received[] = [];
  const replies: Array<{ status: number; headers?: Record<string, string> }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const reply = replies.shift() ?? { status: 200 };
      res.writeHead(reply.status, reply.headers ?? {});
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    replies,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Verifies a delivery with the `standardwebhooks` package, as a receiver whose
 * clock reads `at` (the server's manual clock, which the tests move hours past
 * the wall clock the package reads): the package's ±5 min timestamp check
 * runs against the server's time. Returns the parsed body; throws
 * {@link WebhookVerificationError} when no signature matches.
 */
function verify(secret: string, request: Received, at: Date): unknown {
  vi.setSystemTime(at);
  try {
    return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  } finally {
    vi.useRealTimers();
  }
}

describe.each(testDialects())('webhooks over HTTP on %s', (dialect) => {
  const clock = createManualClock(Date.now());
  let server: TestServer;
  let call: ReturnType<typeof caller>;
  let world: World;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const admin = () => mintAccessToken(server, { sub: world.platformAdmin.id, org_id: world.platform.id });

  beforeAll(async () => {
    server = await startTestServer(webhookServer(dialect, clock));
    call = caller(server);
    world = await seedWorld(server);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server.close();
    await receiver.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.replies.length = 0;
  });

  async function createEndpoint(body: Record<string, unknown> = {}) {
    const response = await call('POST', '/v1/webhooks/endpoints', { token: await admin(), body: { url: receiver.url, ...body } });
    return expectJson(response, 201) as Promise<{ endpoint: { id: string }; secret: string }>;
  }

  it('creates an endpoint (201) whose secret is shown once, and lists the event types', async () => {
    const response = await call('POST', '/v1/webhooks/endpoints', {
      token: await admin(),
      body: { url: receiver.url, description: 'CRM', eventTypes: ['changelog.published'] },
    });
    const created = await expectJson(response, 201);
    expect(response.headers.get('location')).toBe(`/v1/webhooks/endpoints/${created.endpoint.id}`);
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.endpoint).toMatchObject({
      url: receiver.url,
      description: 'CRM',
      eventTypes: ['changelog.published'],
      organizationId: null,
      enabled: true,
      disabledReason: null,
    });
    const listed = await expectJson(await call('GET', '/v1/webhooks/endpoints', { token: await admin() }));
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    const types = (await expectJson(await call('GET', '/v1/webhooks/event-types', { token: await admin() }))).map(
      (entry: { type: string }) => entry.type,
    );
    expect(types).toEqual(
      expect.arrayContaining(['announcement.published', 'changelog.published', 'inquiry.submitted', 'webhook.test']),
    );
    expect((await call('DELETE', `/v1/webhooks/endpoints/${created.endpoint.id}`, { token: await admin() })).status).toBe(204);
    await expectProblem(
      await call('GET', `/v1/webhooks/endpoints/${created.endpoint.id}`, { token: await admin() }),
      404,
      'Webhooks.EndpointNotFound',
    );
  });

  it('refuses unknown event types and bad URLs, and everyone but platform administrators', async () => {
    const unknown = await expectProblem(
      await call('POST', '/v1/webhooks/endpoints', {
        token: await admin(),
        body: { url: receiver.url, eventTypes: ['user.nope'] },
      }),
      400,
      'Webhooks.UnknownEventType',
    );
    expect(Object.keys(unknown.errors)).toEqual(['eventTypes']);
    const bad = await expectProblem(
      await call('POST', '/v1/webhooks/endpoints', { token: await admin(), body: { url: 'ftp://example.com/x' } }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(bad.errors)).toEqual(['url']);
    const owner = await mintAccessToken(server, { sub: world.a.owner.id, org_id: world.a.organization.id });
    await expectProblem(await call('GET', '/v1/webhooks/endpoints', { token: owner }), 403, 'Auth.Forbidden');
    await expectProblem(
      await call('POST', '/v1/webhooks/endpoints', { token: owner, body: { url: receiver.url } }),
      403,
      'Auth.Forbidden',
    );
    const tenantService = await mintServiceToken(server, {
      clientId: 'sa-alpha-hooks',
      organizationId: world.a.organization.id,
      scope: 'webhooks.manage',
    });
    await expectProblem(await call('GET', '/v1/webhooks/endpoints', { token: tenantService }), 403, 'Auth.Forbidden');
    const platformService = await mintServiceToken(server, {
      clientId: 'sa-platform-hooks',
      organizationId: world.platform.id,
      scope: 'webhooks.manage',
    });
    await expectJson(await call('GET', '/v1/webhooks/endpoints', { token: platformService }));
  });

  it('delivers a signed test message that verifies, and logs the attempt', async () => {
    const { endpoint, secret } = await createEndpoint();
    const queued = await expectJson(
      await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: await admin() }),
      202,
    );
    expect(queued.messageId).toMatch(/^msg_/);
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(1);
    const [request] = receiver.received as [Received];
    expect(request.headers['webhook-id']).toBe(queued.messageId);
    expect(request.headers['content-type']).toBe('application/json');
    expect(() => verify('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', request, clock.now())).toThrow(
      new WebhookVerificationError('No matching signature found'),
    );
    expect(verify(secret, request, clock.now())).toEqual({
      type: 'webhook.test',
      timestamp: expect.any(String),
      data: { endpointId: endpoint.id, message: 'This is a test message from idt.' },
    });
    const log = await expectJson(await call('GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries`, { token: await admin() }));
    expect(log).toMatchObject({
      totalCount: 1,
      page: 1,
      items: [
        {
          messageId: queued.messageId,
          eventType: 'webhook.test',
          attempt: 1,
          status: 'succeeded',
          responseStatus: 200,
          error: null,
          nextAttemptAt: null,
        },
      ],
    });
    await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
  });

  it('retries a failing receiver on the schedule: three attempts, one webhook-id', async () => {
    const { endpoint, secret } = await createEndpoint();
    receiver.replies.push({ status: 500 }, { status: 503, headers: { 'retry-after': '1' } });
    const { messageId } = await expectJson(
      await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: await admin() }),
      202,
    );
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(1);
    // Not due before the first step (5 s - 10 %).
    clock.advance(4_000);
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(1);
    clock.advance(1_600);
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(2);
    clock.advance(5.5 * 60_000);
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(3);
    expect(new Set(receiver.received.map((request) => request.headers['webhook-id']))).toEqual(new Set([messageId]));
    for (const request of receiver.received)
      expect(verify(secret, request, new Date(Number(request.headers['webhook-timestamp']) * 1000))).toMatchObject({
        type: 'webhook.test',
      });
    const log = await expectJson(await call('GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries`, { token: await admin() }));
    expect(
      log.items.map((item: { attempt: number; status: string; responseStatus: number }) => [
        item.attempt,
        item.status,
        item.responseStatus,
      ]),
    ).toEqual([
      [3, 'succeeded', 200],
      [2, 'pending', 503],
      [1, 'pending', 500],
    ]);
    const failed = await expectJson(
      await call('GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries?status=pending&pageSize=1`, { token: await admin() }),
    );
    expect(failed).toMatchObject({ totalCount: 2, pageSize: 1, totalPages: 2, hasNextPage: true });
    await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
  });

  it('signs with both secrets during a rotation, and only the new one after the grace period', async () => {
    const { endpoint, secret: old } = await createEndpoint();
    const rotated = await expectJson(
      await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`, {
        token: await admin(),
        body: { graceSeconds: 3600 },
      }),
    );
    expect(rotated.previousSecretExpiresAt).toBe(new Date(clock.now().getTime() + 3_600_000).toISOString());
    await expectJson(await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: await admin() }), 202);
    await server.idt.runJobs(JOB);
    const during = receiver.received.at(-1) as Received;
    // A receiver still on the old secret and one already on the new one both accept it.
    expect(verify(old, during, clock.now())).toMatchObject({ type: 'webhook.test' });
    expect(verify(rotated.secret, during, clock.now())).toMatchObject({ type: 'webhook.test' });
    // Two signatures, each verifying on its own under one of the secrets.
    const signatures = String(during.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    const accepts = (secret: string, signature: string) => {
      try {
        verify(secret, { ...during, headers: { ...during.headers, 'webhook-signature': signature } }, clock.now());
        return true;
      } catch (error) {
        if (error instanceof WebhookVerificationError) return false;
        throw error;
      }
    };
    expect(signatures.map((signature) => [accepts(old, signature), accepts(rotated.secret, signature)])).toEqual(
      expect.arrayContaining([
        [true, false],
        [false, true],
      ]),
    );

    clock.advance(3_600_000);
    await expectJson(await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: await admin() }), 202);
    await server.idt.runJobs(JOB);
    const after = receiver.received.at(-1) as Received;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verify(rotated.secret, after, clock.now())).toMatchObject({ type: 'webhook.test' });
    expect(() => verify(old, after, clock.now())).toThrow(new WebhookVerificationError('No matching signature found'));
    const bad = await expectProblem(
      await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`, {
        token: await admin(),
        body: { graceSeconds: 604_801 },
      }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(bad.errors)).toEqual(['graceSeconds']);
    await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
  });

  it('does not follow redirects, and disables an endpoint that answers 410', async () => {
    const { endpoint } = await createEndpoint();
    receiver.replies.push({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } }, { status: 410 });
    await expectJson(await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: await admin() }), 202);
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(1);
    clock.advance(6_000);
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(2);
    const disabled = await expectJson(await call('GET', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }));
    expect(disabled).toMatchObject({ enabled: false, disabledReason: expect.stringContaining('410') });
    const log = await expectJson(await call('GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries`, { token: await admin() }));
    expect(log.items.map((item: { status: string; error: string | null }) => [item.status, item.error])).toEqual([
      ['failed', 'HTTP 410'],
      ['pending', 'redirect not followed'],
    ]);
    // Re-enabling clears the reason; a manual retry sends the message again under the same id.
    const enabled = await expectJson(
      await call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin(), body: { enabled: true } }),
    );
    expect(enabled).toMatchObject({ enabled: true, disabledReason: null });
    const messageId = String(receiver.received[0]?.headers['webhook-id']);
    await expectJson(
      await call('POST', `/v1/webhooks/messages/${messageId}/retry?endpointId=${endpoint.id}`, { token: await admin() }),
      202,
    );
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(3);
    expect(receiver.received[2]?.headers['webhook-id']).toBe(messageId);
    await expectProblem(
      await call('POST', `/v1/webhooks/messages/msg_missing/retry?endpointId=${endpoint.id}`, { token: await admin() }),
      404,
      'Webhooks.MessageNotFound',
    );
    await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
  });

  it('delivers integration events from the outbox to the endpoints that subscribe to them', async () => {
    const changelog = await createEndpoint({ eventTypes: ['changelog.published'] });
    const announcements = await createEndpoint({ eventTypes: ['announcement.published'] });
    const entry = await expectJson(
      await call('POST', '/v1/admin/changelog', { token: await admin(), body: { version: '7.0.0', title: 'Seven' } }),
      201,
    );
    await expectJson(await call('POST', `/v1/admin/changelog/${entry.id}/publish`, { token: await admin() }));
    await server.idt.infrastructure.events.dispatchPending();
    // The bus may deliver an event twice: it is queued once.
    await server.idt.infrastructure.events.dispatchPending();
    await server.idt.runJobs(JOB);
    expect(receiver.received).toHaveLength(1);
    const [request] = receiver.received as [Received];
    expect(verify(changelog.secret, request, clock.now())).toMatchObject({
      type: 'changelog.published',
      data: { entryId: entry.id, version: '7.0.0' },
    });
    const quiet = await expectJson(
      await call('GET', `/v1/webhooks/endpoints/${announcements.endpoint.id}/deliveries`, { token: await admin() }),
    );
    expect(quiet.totalCount).toBe(0);

    // Another module's event, filtered to one organization.
    receiver.received.length = 0;
    const inquiries = await createEndpoint({ eventTypes: ['inquiry.submitted'], organizationId: world.a.organization.id });
    const inquiry = {
      name: 'Ada',
      email: 'ada@example.com',
      phone: '+44 20 7946 0000',
      projectType: 'Web',
      budgetRange: '10k',
      timeline: 'soon',
      message: 'Hello',
    };
    for (const tenant of [world.a, world.b]) {
      const token = await mintAccessToken(server, { sub: tenant.user.id, org_id: tenant.organization.id });
      await expectJson(await call('POST', '/v1/inquiries', { token, body: inquiry }));
    }
    await server.idt.infrastructure.events.dispatchPending();
    await server.idt.runJobs(JOB);
    expect(receiver.received.map((request) => JSON.parse(request.body))).toEqual([
      expect.objectContaining({
        type: 'inquiry.submitted',
        data: expect.objectContaining({ organizationId: world.a.organization.id }),
      }),
    ]);
    expect(verify(inquiries.secret, receiver.received[0] as Received, clock.now())).toMatchObject({ type: 'inquiry.submitted' });
    for (const { endpoint } of [changelog, announcements, inquiries]) {
      await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
    }
  });

  it('refuses every metadata address, spelling and name with 422 even with private hosts allowed, storing nothing', async () => {
    const { endpoint } = await createEndpoint();
    const endpoints = async () => Number((await server.database.db('platform_webhook_endpoints').count({ n: '*' }))[0]?.n);
    const before = await endpoints();
    const targets = [...METADATA_URLS, ...Object.keys(RESOLVES_TO_METADATA).map((host) => `https://${host}/hooks`)];
    for (const url of targets) {
      const created = await expectProblem(
        await call('POST', '/v1/webhooks/endpoints', { token: await admin(), body: { url } }),
        422,
        'Webhooks.PrivateHostRefused',
      );
      expect(created.detail, url).toMatch(
        /is a cloud metadata address, which is refused even where private hosts are allowed\.$/,
      );
      await expectProblem(
        await call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin(), body: { url } }),
        422,
        'Webhooks.PrivateHostRefused',
      );
    }
    expect(await endpoints()).toBe(before);
    const stored = await expectJson(await call('GET', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }));
    expect(stored.url).toBe(receiver.url);
    // Loopback, a private name and a name that does not resolve yet stay accepted: the setting is on.
    dnsAnswers.set('lan.example.test', ['10.0.0.9']);
    for (const url of ['http://[::1]:9/hooks', 'http://lan.example.test/hooks', 'http://later.example.test/hooks']) {
      await expectJson(await call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin(), body: { url } }));
    }
    await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
  });

  it('refuses at delivery a stored metadata URL and a name that now resolves to a metadata address, connecting nowhere', async () => {
    const port = new URL(receiver.url).port;
    dnsAnswers.set('rebind.example.test', ['127.0.0.1']);
    const stored = await createEndpoint();
    const rebound = await createEndpoint({ url: `http://rebind.example.test:${port}/hooks` });
    // A URL stored before the rule (written to the table directly), and a name whose answer changed since its registration.
    await server.database
      .db('platform_webhook_endpoints')
      .where({ id: stored.endpoint.id })
      .update({ url: 'http://[::ffff:169.254.169.254]/latest/meta-data/' });
    dnsAnswers.set('rebind.example.test', ['169.254.169.254']);
    for (const { endpoint } of [stored, rebound]) {
      await expectJson(await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: await admin() }), 202);
    }
    const watch = watchConnections();
    try {
      await server.idt.runJobs(JOB);
    } finally {
      watch.stop();
    }
    expect(watch.attempts.filter((address) => address !== '127.0.0.1')).toEqual([]);
    expect(receiver.received).toHaveLength(0);
    const errors = async (id: string) =>
      (await expectJson(await call('GET', `/v1/webhooks/endpoints/${id}/deliveries`, { token: await admin() }))).items.map(
        (item: { status: string; responseStatus: number | null; error: string }) => [
          item.status,
          item.responseStatus,
          item.error,
        ],
      );
    expect(await errors(stored.endpoint.id)).toEqual([['pending', null, 'metadata host refused']]);
    expect(await errors(rebound.endpoint.id)).toEqual([
      [
        'pending',
        null,
        'The host rebind.example.test resolves to 169.254.169.254, a cloud metadata address, which is always refused',
      ],
    ]);
    for (const { endpoint } of [stored, rebound]) {
      await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
    }
  });

  it('does not follow a redirect to a metadata address', async () => {
    const { endpoint } = await createEndpoint();
    receiver.replies.push(
      { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/' } },
      { status: 307, headers: { location: 'http://metadata.google.internal/computeMetadata/v1/' } },
    );
    for (let sent = 0; sent < 2; sent++) {
      await expectJson(await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: await admin() }), 202);
    }
    const watch = watchConnections();
    try {
      await server.idt.runJobs(JOB);
    } finally {
      watch.stop();
    }
    // One request per message, both to the receiver; nothing went to the Location.
    expect(receiver.received).toHaveLength(2);
    expect(watch.attempts.filter((address) => address !== '127.0.0.1')).toEqual([]);
    const log = await expectJson(await call('GET', `/v1/webhooks/endpoints/${endpoint.id}/deliveries`, { token: await admin() }));
    expect(
      log.items
        .map((item: { status: string; responseStatus: number; error: string }) => [item.responseStatus, item.error])
        .sort(),
    ).toEqual([
      [302, 'redirect not followed'],
      [307, 'redirect not followed'],
    ]);
    await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token: await admin() }), 204);
  });
});

describe.each(testDialects())('webhook routing across instances on %s', (dialect) => {
  it('routes events by endpoints created, changed, disabled and deleted on another instance', async () => {
    const clock = createManualClock(Date.now());
    const options = webhookServer(dialect, clock);
    const first = await startTestServer(options);
    const database = first.database;
    const second = await startTestServer({ ...options, database });
    try {
      const world = await seedWorld(first);
      const call = caller(first);
      const token = world.platformToken;
      const messages = async () => Number((await database.db('platform_webhook_messages').count({ n: '*' }))[0]?.n);
      let published = 0;
      // The second instance routes (as its outbox handler does); the first changes the endpoints.
      const publish = async () => {
        published += 1;
        await second.idt.services.platform.webhooks.enqueueEvent(
          'changelog.published',
          { entryId: `entry-${published}`, version: `1.0.${published}` },
          clock.now().toISOString(),
          `source-event-${published}`,
        );
        return messages();
      };
      // The second instance has seen each change once its eviction arrived (at commit on Postgres, on freshen on SQLite).
      let evictions = 0;
      let writes = 0;
      second.idt.infrastructure.invalidator.subscribe(WEBHOOK_ENDPOINTS_CACHE, () => {
        evictions += 1;
      });
      const seen = async () => {
        writes += 1;
        await second.idt.infrastructure.invalidator.freshen();
        await vi.waitFor(() => expect(evictions).toBe(writes), { timeout: 5000, interval: 10 });
      };
      expect(await publish()).toBe(0); // no endpoint yet, and the second instance has read that
      const { endpoint } = await expectJson(
        await call('POST', '/v1/webhooks/endpoints', {
          token,
          body: { url: 'http://127.0.0.1:9/hook', eventTypes: ['changelog.published'] },
        }),
        201,
      );
      await seen();
      expect(await publish()).toBe(1);
      const patch = async (body: Record<string, unknown>) => {
        await expectJson(await call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { token, body }));
        await seen();
      };
      await patch({ eventTypes: ['announcement.published'] });
      expect(await publish()).toBe(1);
      await patch({ eventTypes: ['changelog.published'] });
      expect(await publish()).toBe(2);
      await patch({ enabled: false });
      expect(await publish()).toBe(2);
      await patch({ enabled: true });
      expect(await publish()).toBe(3);
      await expectJson(await call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { token }), 204);
      await seen();
      expect(await publish()).toBe(3);
    } finally {
      await second.close();
      await first.idt.close();
      await database.destroy();
    }
  });
});

describe.each(testDialects())('webhook delivery survives a crash on %s', (dialect) => {
  it('takes over a delivery a crashed instance had claimed once its lease ran out, under the same webhook-id', async () => {
    const clock = createManualClock(Date.now());
    const receiver = await startReceiver();
    const options = webhookServer(dialect, clock);
    const first = await startTestServer(options);
    const database = first.database;
    try {
      const world = await seedWorld(first);
      const created = await expectJson(
        await caller(first)('POST', '/v1/webhooks/endpoints', { token: world.platformToken, body: { url: receiver.url } }),
        201,
      );
      const { messageId } = await expectJson(
        await caller(first)('POST', `/v1/webhooks/endpoints/${created.endpoint.id}/test`, { token: world.platformToken }),
        202,
      );
      // The instance claimed the delivery (a 60 s lease) and died before sending it.
      await database
        .db('platform_webhook_deliveries')
        .where({ message_id: messageId })
        .update({ claimed_until: new Date(clock.now().getTime() + 60_000).toISOString() });
      await first.http.close();
      const second = await startTestServer({ ...options, database });
      try {
        await second.idt.runJobs(JOB);
        expect(receiver.received).toHaveLength(0);
        clock.advance(60_001);
        await second.idt.runJobs(JOB);
        expect(receiver.received.map((request) => request.headers['webhook-id'])).toEqual([messageId]);
        expect(verify(created.secret, receiver.received[0] as Received, clock.now())).toMatchObject({ type: 'webhook.test' });
      } finally {
        await second.close();
      }
    } finally {
      await first.idt.close();
      await database.destroy();
      await receiver.close();
    }
  });

  it('disables an endpoint whose deliveries have failed for 5 days', async () => {
    const clock = createManualClock(Date.now());
    const receiver = await startReceiver();
    const server = await startTestServer(webhookServer(dialect, clock));
    try {
      const world = await seedWorld(server);
      const created = await expectJson(
        await caller(server)('POST', '/v1/webhooks/endpoints', { token: world.platformToken, body: { url: receiver.url } }),
        201,
      );
      const fiveDaysAgo = new Date(clock.now().getTime() - 5 * 24 * 3_600_000).toISOString();
      await server.database
        .db('platform_webhook_endpoints')
        .where({ id: created.endpoint.id })
        .update({ failure_streak_since: fiveDaysAgo });
      receiver.replies.push({ status: 500 });
      await expectJson(
        await caller(server)('POST', `/v1/webhooks/endpoints/${created.endpoint.id}/test`, { token: world.platformToken }),
        202,
      );
      await server.idt.runJobs(JOB);
      const endpoint = await expectJson(
        await caller(server)('GET', `/v1/webhooks/endpoints/${created.endpoint.id}`, { token: world.platformToken }),
      );
      expect(endpoint).toMatchObject({
        enabled: false,
        disabledReason: 'Deliveries failed for 5 days.',
        failureStreakSince: fiveDaysAgo,
      });
    } finally {
      await server.close();
      await receiver.close();
    }
  });
});

describe.each(testDialects())('webhooks without private hosts on %s', (dialect) => {
  let server: TestServer;
  let world: World;

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  it('refuses loopback and private URLs with 422 Webhooks.PrivateHostRefused, and plain http', async () => {
    const call = caller(server);
    for (const url of [
      'http://127.0.0.1:8080/hooks',
      'https://10.1.2.3/hooks',
      'https://[::1]/hooks',
      'https://localhost/hooks',
    ]) {
      await expectProblem(
        await call('POST', '/v1/webhooks/endpoints', { token: world.platformToken, body: { url } }),
        422,
        'Webhooks.PrivateHostRefused',
      );
    }
    const http = await expectProblem(
      await call('POST', '/v1/webhooks/endpoints', { token: world.platformToken, body: { url: 'http://93.184.215.14/hooks' } }),
      400,
      'Validation.Failed',
    );
    expect(http.errors).toEqual({ url: ['Use https.'] });
  });
});
