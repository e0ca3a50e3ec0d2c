import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpApp, defineRoute, html, json, LightResponse } from '../src/index.js';
import { createNodeHandler } from '../src/node.js';

let server: Server;
let base: string;
let aborted: Promise<void>;
let reportAbort: () => void;
let reached: Promise<void>;
let reportReached: () => void;

const app = createHttpApp({
  environment: 'Production',
  publicBaseUrl: 'http://localhost',
  routes: [
    defineRoute({
      method: 'POST',
      path: '/echo',
      operationId: 'echo',
      summary: 'echo',
      auth: 'anonymous',
      request: { body: z.object({ name: z.string() }), maxBodyBytes: 64 },
      responses: { 200: { description: 'ok' } },
      handler: ({ body, headers, method, url }) =>
        json({ body, agent: headers.get('User-Agent'), method, url: url.href }, { headers: { 'cache-control': 'no-store' } }),
    }),
    defineRoute({
      method: 'POST',
      path: '/raw',
      operationId: 'raw',
      summary: 'raw body through the Fetch request',
      auth: 'anonymous',
      request: { bodyKind: 'raw' },
      responses: { 200: { description: 'ok' } },
      handler: async ({ request }) =>
        json({ length: (await request.arrayBuffer()).byteLength, type: request.headers.get('content-type') }),
    }),
    defineRoute({
      method: 'GET',
      path: '/page',
      operationId: 'page',
      summary: 'a page with two cookies',
      auth: 'anonymous',
      responses: { 200: { description: 'ok' } },
      handler: () => {
        const page = html('<p>hello</p>');
        page.headers.append('set-cookie', 'a=1; Path=/; HttpOnly; Secure; SameSite=Lax');
        page.headers.append('set-cookie', 'b=2; Path=/; HttpOnly; Secure; SameSite=Lax');
        return page;
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/stream',
      operationId: 'stream',
      summary: 'a streamed Fetch response',
      auth: 'anonymous',
      responses: { 200: { description: 'ok' } },
      handler: () => new Response(new Blob(['chunk-1 ', 'chunk-2']).stream(), { headers: { 'content-type': 'text/plain' } }),
    }),
    defineRoute({
      method: 'GET',
      path: '/slow',
      operationId: 'slow',
      summary: 'waits for the client to leave',
      auth: 'anonymous',
      responses: { 200: { description: 'ok' } },
      handler: async ({ signal }) => {
        reportReached();
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        reportAbort();
        return new LightResponse('late');
      },
    }),
  ],
});

beforeAll(async () => {
  aborted = new Promise<void>((resolve) => {
    reportAbort = resolve;
  });
  reached = new Promise<void>((resolve) => {
    reportReached = resolve;
  });
  server = createServer(createNodeHandler(app));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('node:http adapter', () => {
  it('validates a JSON body and answers with a Content-Length', async () => {
    const response = await fetch(`${base}/echo?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'probe/1' },
      body: JSON.stringify({ name: 'Ada' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String((await response.clone().arrayBuffer()).byteLength));
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await response.json()).toEqual({ body: { name: 'Ada' }, agent: 'probe/1', method: 'POST', url: `${base}/echo?x=1` });
  });

  it('answers 413 to an oversized body without resetting the connection, and keeps serving it', async () => {
    const agent = new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 1 });
    const send = (body: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          `${base}/echo`,
          { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => {
              text += chunk;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on('error', reject);
        // Chunked, so the size is only known while reading.
        req.write(body.slice(0, 10));
        // Real I/O: the rest of the body follows in a later chunk, after the server has started reading.
        setTimeout(() => req.end(body.slice(10)), 20);
      });
    const large = await send(JSON.stringify({ name: 'x'.repeat(500) }));
    expect(large.status).toBe(413);
    expect(JSON.parse(large.body)).toMatchObject({ status: 413, code: 'Http.ClientError' });
    const small = await send(JSON.stringify({ name: 'Ada' }));
    expect(small.status).toBe(200);
    agent.destroy();
  });

  it('builds the Fetch request only for handlers that ask for it, body included', async () => {
    const response = await fetch(`${base}/raw`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(3000),
    });
    expect(await response.json()).toEqual({ length: 3000, type: 'application/octet-stream' });
  });

  it('writes every Set-Cookie of a light response, and no body for HEAD', async () => {
    const response = await fetch(`${base}/page`);
    expect(response.headers.getSetCookie()).toHaveLength(2);
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(await response.text()).toBe('<p>hello</p>');
    const head = await fetch(`${base}/page`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('12');
    expect(await head.text()).toBe('');
  });

  it('streams a Fetch response body', async () => {
    const response = await fetch(`${base}/stream`);
    expect(await response.text()).toBe('chunk-1 chunk-2');
  });

  it('renders problems as light responses', async () => {
    const response = await fetch(`${base}/nowhere`, { headers: { 'x-request-id': 'req-42' } });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('x-request-id')).toBe('req-42');
    expect(await response.json()).toMatchObject({ code: 'Http.NotFound', status: 404 });
  });

  it('aborts the handler signal when the client goes away', async () => {
    const controller = new AbortController();
    const pending = fetch(`${base}/slow`, { signal: controller.signal }).catch((error: Error) => error);
    await reached;
    controller.abort();
    await expect(pending).resolves.toBeInstanceOf(Error);
    await aborted;
  });
});
