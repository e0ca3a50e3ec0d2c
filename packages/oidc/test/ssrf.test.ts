import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createKnexClientStore } from '@idt/oidc/knex';
import {
  METADATA_URLS,
  RESOLVES_TO_METADATA,
  startTestServer,
  type TestServer,
  tableResolver,
  testDialects,
  watchConnections,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackchannelNotifier, createClientService } from '../src/index.js';
import { caller, clientRow, expectJson, expectProblem, register, seedWorld, unique } from './clients-support.js';

/** A local receiver answering with the queued replies (200 once the queue is empty). */
async function startReceiver() {
  const hits: string[] = [];
  const replies: Array<{ status: number; headers?: Record<string, string> }> = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    const reply = replies.shift() ?? { status: 200 };
    res.writeHead(reply.status, reply.headers ?? {}).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    hits,
    replies,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = async () => ({ ...privateKey.export({ format: 'jwk' }), kid: 'k', alg: 'RS256' });
// No pause before the retry: the tests wait on nothing but the local network.
const limits = { perClientTimeoutMs: 3000, retryDelayMs: 0, overallTimeoutMs: 10_000 };

describe('back-channel logout delivery guard', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('refuses names that resolve to loopback and literal private addresses, and delivers when allowed', async () => {
    receiver.hits.length = 0;
    const { port } = receiver;
    const guarded = createBackchannelNotifier({ issuer: 'https://id.example.com', allowPrivateHosts: false, signingKey, limits });
    const refused = await guarded.notify(
      [
        { clientId: 'by-name', backchannelLogoutUri: `http://localhost:${port}/a` },
        { clientId: 'by-ip', backchannelLogoutUri: `http://127.0.0.1:${port}/b` },
        { clientId: 'private', backchannelLogoutUri: 'http://10.0.0.5/b' },
      ],
      'user',
      'sid',
    );
    expect(refused.map((result) => [result.delivered, result.attempts])).toEqual([
      [false, 1],
      [false, 1],
      [false, 1],
    ]);
    for (const result of refused) expect(result.error).toMatch(/loopback or private/);
    expect(receiver.hits).toEqual([]);
    const allowed = createBackchannelNotifier({ issuer: 'https://id.example.com', allowPrivateHosts: true, signingKey, limits });
    const delivered = await allowed.notify(
      [{ clientId: 'ok', backchannelLogoutUri: `http://localhost:${port}/c` }],
      'user',
      'sid',
    );
    expect(delivered[0]).toMatchObject({ delivered: true, attempts: 1 });
    expect(receiver.hits).toEqual(['/c']);
  });

  it('refuses every metadata address, spelling and name, and names that resolve to one, with private hosts allowed', async () => {
    const { resolve, asked } = tableResolver(RESOLVES_TO_METADATA);
    const notifier = createBackchannelNotifier({
      issuer: 'https://id.example.com',
      allowPrivateHosts: true,
      resolve,
      signingKey,
      limits,
    });
    const targets = [
      ...METADATA_URLS,
      ...Object.keys(RESOLVES_TO_METADATA).map((host) => `http://${host}:${receiver.port}/logout`),
    ].map((uri, index) => ({ clientId: `client-${index}`, backchannelLogoutUri: uri }));
    const watch = watchConnections();
    try {
      const results = await notifier.notify(targets, 'user', 'sid');
      for (const [index, result] of results.entries()) {
        const uri = targets[index]?.backchannelLogoutUri;
        expect(result, uri).toMatchObject({
          delivered: false,
          attempts: 1,
          error: expect.stringMatching(/cloud metadata address/),
        });
      }
    } finally {
      watch.stop();
    }
    // No socket tried any address, and only the names that are not metadata names were looked up.
    expect(watch.attempts).toEqual([]);
    expect(asked.sort()).toEqual(Object.keys(RESOLVES_TO_METADATA).sort());
  });

  it('does not follow a redirect to a metadata address', async () => {
    const { resolve, asked } = tableResolver({ 'receiver.example.test': ['127.0.0.1'] });
    const notifier = createBackchannelNotifier({
      issuer: 'https://id.example.com',
      allowPrivateHosts: true,
      resolve,
      signingKey,
      limits,
    });
    receiver.hits.length = 0;
    for (const status of [302, 307]) {
      receiver.replies.push(
        { status, headers: { location: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/' } },
        { status, headers: { location: 'http://metadata.google.internal/computeMetadata/v1/' } },
      );
    }
    const watch = watchConnections();
    let results: Awaited<ReturnType<typeof notifier.notify>>;
    try {
      results = await notifier.notify(
        [
          { clientId: 'literal', backchannelLogoutUri: `http://127.0.0.1:${receiver.port}/first` },
          { clientId: 'name', backchannelLogoutUri: `http://receiver.example.test:${receiver.port}/second` },
        ],
        'user',
        'sid',
      );
    } finally {
      watch.stop();
    }
    expect(results.map((result) => [result.delivered, result.attempts, result.error])).toEqual([
      [false, 2, expect.stringMatching(/^HTTP 30[27], redirect not followed$/)],
      [false, 2, expect.stringMatching(/^HTTP 30[27], redirect not followed$/)],
    ]);
    // Two attempts each, all to the local receiver: nothing went to the Location.
    expect(receiver.hits.sort()).toEqual(['/first', '/first', '/second', '/second']);
    expect(watch.attempts).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
    expect(asked).toEqual(['receiver.example.test', 'receiver.example.test']);
  });
});

describe.each(testDialects())('back-channel logout URIs at client registration on %s', (dialect) => {
  let server: TestServer;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  const orgClients = (rest = '') => `/v1/identity/organizations/${world.a.organization.id}/clients${rest}`;
  const app = (overrides: Record<string, unknown> = {}) => ({
    kind: 'application',
    name: unique('Metadata App'),
    redirectUris: ['https://app.example.com/callback'],
    scopes: ['openid'],
    ...overrides,
  });

  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' } });
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  const clientCount = async () => Number((await server.database.db('oidc_clients').count({ n: '*' }))[0]?.n ?? Number.NaN);

  it('refuses every metadata address and name on registration and update (400 on the field), storing nothing', async () => {
    const call = caller(server);
    const token = world.a.tokens.admin;
    const existing = await register(server, token, world.a.organization.id, app({ backchannelLogoutUri: 'http://10.0.0.5/bc' }));
    const before = await clientCount();
    for (const uri of METADATA_URLS) {
      const created = await expectProblem(
        await call('POST', orgClients(), { token, body: app({ backchannelLogoutUri: uri }) }),
        400,
        'Validation.Failed',
      );
      expect(created.errors, uri).toEqual({
        backchannelLogoutUri: ['A back-channel logout URI cannot point to a cloud metadata address.'],
      });
      const updated = await expectProblem(
        await call('PATCH', orgClients(`/${existing.clientId}`), { token, body: { backchannelLogoutUri: uri } }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(updated.errors), uri).toEqual(['backchannelLogoutUri']);
    }
    expect(await clientCount()).toBe(before);
    expect((await clientRow(server, existing.clientId))?.backchannel_logout_uri).toBe('http://10.0.0.5/bc');
    // The front-channel URI is loaded by the browser, not the server: the rule is the back channel's.
    const front = await expectJson(
      await call('PATCH', orgClients(`/${existing.clientId}`), {
        token,
        body: { frontchannelLogoutUri: 'http://metadata.example.com/fc', backchannelLogoutUri: 'http://127.0.0.1:9/bc' },
      }),
    );
    expect(front).toMatchObject({
      frontchannelLogoutUri: 'http://metadata.example.com/fc',
      backchannelLogoutUri: 'http://127.0.0.1:9/bc',
    });
  });

  it('refuses a host name that resolves to a metadata address, on registration and update', async () => {
    const { resolve } = tableResolver({ ...RESOLVES_TO_METADATA, 'rp.example.test': ['10.0.0.7'] });
    const clients = createClientService({
      store: createKnexClientStore(server.database.db, server.idt.infrastructure.invalidator),
      organizations: { find: async () => undefined },
      issuer: server.url,
      apiBaseUrl: server.url,
      resolve,
    });
    const actor = { userId: null, platformAdmin: true };
    const before = await clientCount();
    for (const host of Object.keys(RESOLVES_TO_METADATA)) {
      await expect(
        clients.register(actor, null, app({ backchannelLogoutUri: `https://${host}/bc` })),
        host,
      ).rejects.toMatchObject({
        code: 'Validation.Failed',
        errors: { backchannelLogoutUri: ['A back-channel logout URI cannot point to a cloud metadata address.'] },
      });
    }
    expect(await clientCount()).toBe(before);
    // A private host, and a name that does not resolve yet, are judged at delivery.
    const { client } = await clients.register(actor, null, app({ backchannelLogoutUri: 'https://rp.example.test/bc' }));
    await clients.update(actor, null, client.clientId, { backchannelLogoutUri: 'https://later.example.test/bc' });
    await expect(
      clients.update(actor, null, client.clientId, { backchannelLogoutUri: 'https://imds.example.test/bc' }),
    ).rejects.toMatchObject({ code: 'Validation.Failed', errors: { backchannelLogoutUri: [expect.any(String)] } });
    expect((await clientRow(server, client.clientId))?.backchannel_logout_uri).toBe('https://later.example.test/bc');
  });
});
