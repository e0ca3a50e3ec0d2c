import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BodyErrorHandler, createBodyErrorHandler } from '../src/node.js';

/** An error as body-parser (through http-errors) raises it: a message, a 4xx or 5xx status, a `type` and its details. */
function parserError(message: string, status: number, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(message), { status, statusCode: status, expose: status < 500, ...fields });
}

/** The errors a request asks for by name (`x-error`), as the middleware before the handler would pass them on. */
const ERRORS: Record<string, unknown> = {
  json: parserError('Unexpected end of JSON input', 400, { type: 'entity.parse.failed', body: '{"a":' }),
  large: parserError('request entity too large', 413, { type: 'entity.too.large', limit: 102_400, length: 200_000 }),
  'large-no-limit': parserError('request entity too large', 413, { type: 'entity.too.large' }),
  charset: parserError('unsupported charset "LATIN1"', 415, { type: 'charset.unsupported', charset: 'latin1' }),
  'charset-unsafe': parserError('unsupported charset', 415, { type: 'charset.unsupported', charset: 'x"><script>' }),
  encoding: parserError('unsupported content encoding "compress"', 415, { type: 'encoding.unsupported', encoding: 'compress' }),
  parameters: parserError('too many parameters', 413, { type: 'parameters.too.many' }),
  fastify: Object.assign(new Error('Unsupported Media Type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }),
  aborted: parserError('request aborted', 400, { type: 'request.aborted' }),
  // Not the client's fault, or not a body parser's: the host's to answer.
  'stream-encoding': parserError('stream encoding should not be set', 500, { type: 'stream.encoding.set' }),
  plain: new Error('boom'),
  forbidden: Object.assign(new Error('no'), { status: 403 }),
};

/** Serves `handler` as the error middleware after a failed parser; `next` answers 599 naming what it was given. */
async function serve(handler: BodyErrorHandler, options: { mount?: string; sent?: boolean } = {}) {
  const server = createServer((raw, res) => {
    const req = raw as IncomingMessage & { originalUrl?: string };
    // As Express under `app.use(mount, ...)`: the mount is stripped from req.url and kept in originalUrl.
    req.originalUrl = req.url;
    if (options.mount && req.url?.startsWith(options.mount)) req.url = req.url.slice(options.mount.length) || '/';
    if (options.sent) res.writeHead(200, { 'content-type': 'text/plain' }).write('partial ');
    const error = ERRORS[String(req.headers['x-error'])];
    void handler(error, req, res, (passed) => {
      if (res.headersSent) {
        res.end('next');
        return;
      }
      res.writeHead(599, { 'content-type': 'text/plain' });
      res.end(passed === error ? `next: the same ${String(req.headers['x-error'])} error` : 'next: another error');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

const config = { pathPrefix: '/idt', environment: 'Production', publicBaseUrl: 'http://127.0.0.1/idt' } as const;

describe('createBodyErrorHandler', () => {
  let host: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    host = await serve(createBodyErrorHandler({ config }));
  });
  afterAll(() => close(host.server));

  const send = (path: string, error: string, headers: Record<string, string> = {}, method = 'POST') =>
    fetch(`${host.origin}${path}`, { method, headers: { 'content-type': 'application/json', 'x-error': error, ...headers } });

  it('declares four parameters, which is how Express tells an error middleware', () => {
    expect(createBodyErrorHandler({ config }).length).toBe(4);
  });

  it('answers malformed JSON under idt’s prefix as idt does: 400 Http.ClientError, with its response headers', async () => {
    const response = await send('/idt/v1/identity/setup/admin', 'json', {
      'x-request-id': 'req-1',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-request-id')).toBe('req-1');
    expect(response.headers.get('strict-transport-security')).toBeNull();
    expect(await response.json()).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'The request body is not valid JSON.',
      code: 'Http.ClientError',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
  });

  it('names the content type of another body it could not parse, when it is a plain token', async () => {
    const form = await send('/idt/connect/token', 'json', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(await form.json()).toMatchObject({
      status: 400,
      detail: 'The request body is not valid application/x-www-form-urlencoded.',
    });
    const odd = await send('/idt/connect/token', 'json', { 'content-type': 'text/"odd"' });
    expect(await odd.json()).toMatchObject({ status: 400, detail: 'The request body is not valid for its content type.' });
  });

  it('answers a body over the parser’s limit with 413, naming the limit', async () => {
    const large = await send('/idt/v1/identity/setup/admin', 'large');
    expect(large.status).toBe(413);
    expect(await large.json()).toMatchObject({
      code: 'Http.ClientError',
      title: 'Content Too Large',
      detail: 'The request body exceeds 102400 bytes.',
    });
    const unnamed = await send('/idt/v1/identity/setup/admin', 'large-no-limit');
    expect(await unnamed.json()).toMatchObject({
      status: 413,
      detail: 'The request body exceeds the size this service accepts.',
    });
    const fields = await send('/idt/connect/token', 'parameters');
    expect(await fields.json()).toMatchObject({ status: 413, code: 'Http.ClientError' });
  });

  it('answers an unsupported charset or content encoding with 415, repeating only a safe token', async () => {
    expect(await (await send('/idt/x', 'charset')).json()).toMatchObject({
      status: 415,
      code: 'Http.ClientError',
      detail: 'The charset "latin1" is not supported; send the body as UTF-8.',
    });
    expect(await (await send('/idt/x', 'charset-unsafe')).json()).toMatchObject({
      status: 415,
      detail: 'Send the body as UTF-8.',
    });
    expect(await (await send('/idt/x', 'encoding')).json()).toMatchObject({
      status: 415,
      detail: 'The content encoding "compress" is not supported.',
    });
  });

  it('answers Fastify’s refusal of a Content-Type header it cannot parse with 415', async () => {
    const response = await send('/idt/v1/identity/setup/admin', 'fastify');
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({
      code: 'Http.ClientError',
      detail: 'The Content-Type header is not a media type this service accepts.',
    });
  });

  it('answers a HEAD request without a body', async () => {
    const response = await send('/idt/x', 'large', {}, 'HEAD');
    expect(response.status).toBe(413);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.text()).toBe('');
  });

  it('leaves errors outside idt’s prefix to the host, lookalike paths included', async () => {
    for (const path of ['/orders', '/idtx/v1/identity/setup/admin', '/', '/other/idt/x']) {
      const response = await send(path, 'json');
      expect(response.status, path).toBe(599);
      expect(await response.text()).toBe('next: the same json error');
    }
    // The prefix itself, and with a query, is idt's.
    expect((await send('/idt', 'json')).status).toBe(400);
    expect((await send('/idt?x=1', 'json')).status).toBe(400);
  });

  it('leaves every other error to the host, under idt’s prefix too', async () => {
    for (const name of ['plain', 'forbidden', 'stream-encoding']) {
      const response = await send('/idt/v1/identity/setup/admin', name);
      expect(response.status, name).toBe(599);
      expect(await response.text()).toBe(`next: the same ${name} error`);
    }
  });

  it('writes nothing to a client that went away', async () => {
    await expect(send('/idt/v1/identity/setup/admin', 'aborted')).rejects.toThrow();
  });

  it('reads idt’s path from originalUrl under a sub-mount, and sends HSTS for an https deployment', async () => {
    const mounted = await serve(createBodyErrorHandler({ config: { ...config, publicBaseUrl: 'https://id.example.com/idt' } }), {
      mount: '/idt',
    });
    try {
      const response = await fetch(`${mounted.origin}/idt/v1/identity/setup/admin`, {
        method: 'POST',
        headers: { 'x-error': 'json' },
      });
      expect(response.status).toBe(400);
      expect(response.headers.get('strict-transport-security')).toMatch(/^max-age=\d+/);
    } finally {
      await close(mounted.server);
    }
  });

  it('takes every path when idt has no path prefix', async () => {
    const root = await serve(
      createBodyErrorHandler({ config: { ...config, pathPrefix: '', publicBaseUrl: 'http://127.0.0.1' } }),
    );
    try {
      const response = await fetch(`${root.origin}/v1/identity/setup/admin`, { method: 'POST', headers: { 'x-error': 'large' } });
      expect(response.status).toBe(413);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
    } finally {
      await close(root.server);
    }
  });

  it('leaves a response already under way to the host', async () => {
    const sent = await serve(createBodyErrorHandler({ config }), { sent: true });
    try {
      const response = await fetch(`${sent.origin}/idt/x`, { method: 'POST', headers: { 'x-error': 'json' } });
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('partial next');
    } finally {
      await close(sent.server);
    }
  });
});
