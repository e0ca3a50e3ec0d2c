import { createTestDatabase, describeExampleApp, expectProblem, type TestDatabase } from '@idt/testing';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idtPlugin, startFastifyApp } from '../src/app.js';

describeExampleApp('Fastify 5 with idt in a plugin under /idt', startFastifyApp);

const ADMIN = {
  email: 'ada@example.com',
  password: 'correct horse battery staple',
  firstName: 'Ada',
  lastName: 'Lovelace',
  organizationName: 'Analytical Engines',
};
const OVERSIZED = JSON.stringify({ ...ADMIN, firstName: 'A'.repeat(1_048_576) });

/** Bad bodies for `POST /idt/v1/identity/setup/admin`, and idt's own answer to each (SPEC 7.1). */
const BAD_BODIES = [
  {
    name: 'malformed JSON',
    type: 'application/json',
    body: '{"email": "ada@example.com",',
    status: 400,
    detail: 'The request body is not valid JSON.',
  },
  {
    name: 'JSON sent as text/plain',
    type: 'text/plain',
    body: JSON.stringify(ADMIN),
    status: 415,
    detail: 'Send the body as application/json.',
  },
  {
    name: 'an XML body',
    type: 'application/xml',
    body: '<admin email="ada@example.com"/>',
    status: 415,
    detail: 'Send the body as application/json.',
  },
  {
    name: 'a body over 1 MiB',
    type: 'application/json',
    body: OVERSIZED,
    status: 413,
    detail: 'The request body exceeds 1048576 bytes.',
  },
  {
    name: 'a chunked body over 1 MiB',
    type: 'application/json',
    body: OVERSIZED,
    chunked: true,
    status: 413,
    detail: 'The request body exceeds 1048576 bytes.',
  },
];

/** Posts a body; `chunked` streams it without a Content-Length. */
function post(url: string, type: string, body: string, chunked = false, headers: Record<string, string> = {}): Promise<Response> {
  const init = { method: 'POST', headers: { 'content-type': type, ...headers } };
  if (!chunked) return fetch(url, { ...init, body });
  const bytes = new TextEncoder().encode(body);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 65_536) controller.enqueue(bytes.subarray(at, at + 65_536));
      controller.close();
    },
  });
  return fetch(url, { ...init, body: stream, duplex: 'half' } as RequestInit);
}

describe('Fastify 5: bad bodies to idt answer its problem documents', () => {
  let database: TestDatabase;
  let app: Awaited<ReturnType<typeof startFastifyApp>>;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    app = await startFastifyApp({
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

  it.each(BAD_BODIES)('answers $name with idt’s problem document, not Fastify’s error', async (bad) => {
    const response = await post(`${app.baseUrl}/v1/identity/setup/admin`, bad.type, bad.body, bad.chunked);
    const problem = await expectProblem(response, bad.status, 'Http.ClientError');
    expect(problem.detail).toBe(bad.detail);
  });

  it('answers a body without a content type with idt’s problem document', async () => {
    const untyped = await fetch(`${app.baseUrl}/v1/identity/setup/admin`, {
      method: 'POST',
      body: new Blob([JSON.stringify(ADMIN)]),
    });
    expect((await expectProblem(untyped, 415, 'Http.ClientError')).detail).toBe('Send the body as application/json.');
  });

  it('answers a Content-Type header Fastify cannot parse with idt’s problem document, not Fastify’s error', async () => {
    const response = await post(`${app.baseUrl}/v1/identity/setup/admin`, 'json', JSON.stringify(ADMIN), false, {
      'x-request-id': 'bad-type-1',
    });
    expect(response.headers.get('x-request-id')).toBe('bad-type-1');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const problem = await expectProblem(response, 415, 'Http.ClientError');
    expect(problem).toMatchObject({
      title: 'Unsupported Media Type',
      detail: 'The Content-Type header is not a media type this service accepts.',
    });
    expect(problem.traceId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('leaves Fastify’s errors outside idt’s plugin, and its other errors inside, to the app', async () => {
    const outside = await post(`${app.baseUrl.replace(/\/idt$/, '')}/orders`, 'json', '{}');
    expect(outside.status).toBe(415);
    expect(outside.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await outside.json()).toMatchObject({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' });

    // A host whose own hook refuses a request under /idt: its error, its answer.
    const host = Fastify();
    host.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-blocked'] !== undefined) {
        reply.code(403);
        throw new Error('Blocked by the host');
      }
    });
    await host.register(idtPlugin(app.idt), { prefix: '/idt' });
    const origin = await host.listen({ port: 0, host: '127.0.0.1' });
    try {
      const blocked = await post(`${origin}/idt/v1/identity/setup/admin`, 'application/json', '{', false, { 'x-blocked': '1' });
      expect(blocked.status).toBe(403);
      expect(await blocked.json()).toMatchObject({ statusCode: 403, message: 'Blocked by the host' });
      const refused = await post(`${origin}/idt/v1/identity/setup/admin`, 'application/json', '{');
      expect((await expectProblem(refused, 400, 'Http.ClientError')).detail).toBe('The request body is not valid JSON.');
    } finally {
      await host.close();
    }
  });

  it('wrote nothing: setup still needs its first administrator', async () => {
    const status = await fetch(`${app.baseUrl}/v1/identity/setup/status`);
    expect(await status.json()).toEqual({ setupRequired: true });
  });
});
