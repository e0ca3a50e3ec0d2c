import { createTestDatabase, describeExampleApp, expectProblem, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHonoApp } from '../src/app.js';

describeExampleApp('Hono on @hono/node-server with idt.fetch under /idt', startHonoApp);

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

describe('Hono: bad bodies to idt answer its problem documents', () => {
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

  it.each(BAD_BODIES)('answers $name with idt’s problem document', async (bad) => {
    const response = await post(`${app.baseUrl}/v1/identity/setup/admin`, bad.type, bad.body, bad.chunked);
    const problem = await expectProblem(response, bad.status, 'Http.ClientError');
    expect(problem.detail).toBe(bad.detail);
  });

  it('closes the connection after refusing a body it did not read, so that the client’s next request does not land on it', async () => {
    for (const chunked of [false, true]) {
      const refused = await post(`${app.baseUrl}/v1/identity/setup/admin`, 'application/json', OVERSIZED, chunked);
      expect(refused.status).toBe(413);
      expect(refused.headers.get('connection')).toBe('close');
      await refused.text();
      expect((await fetch(`${app.baseUrl}/v1/identity/setup/status`)).status).toBe(200);
    }
    // @hono/node-server closes a connection left with an unread body after 500 ms: the next requests are not on it.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const malformed = await post(`${app.baseUrl}/v1/identity/setup/admin`, 'application/json', '{');
    expect(malformed.status).toBe(400);
  });

  it('answers a body without a content type, or with one that is not a media type, with idt’s problem document', async () => {
    const untyped = await fetch(`${app.baseUrl}/v1/identity/setup/admin`, {
      method: 'POST',
      body: new Blob([JSON.stringify(ADMIN)]),
    });
    expect((await expectProblem(untyped, 415, 'Http.ClientError')).detail).toBe('Send the body as application/json.');
    const nonsense = await post(`${app.baseUrl}/v1/identity/setup/admin`, 'json', JSON.stringify(ADMIN));
    expect((await expectProblem(nonsense, 415, 'Http.ClientError')).detail).toBe('Send the body as application/json.');
  });

  it('wrote nothing: setup still needs its first administrator', async () => {
    const status = await fetch(`${app.baseUrl}/v1/identity/setup/status`);
    expect(await status.json()).toEqual({ setupRequired: true });
  });
});
