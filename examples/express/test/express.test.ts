import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  BAD_BODIES,
  createTestDatabase,
  describeExampleApp,
  expectProblem,
  postBody,
  registerFlowClient,
  SETUP_ADMIN,
  type TestDatabase,
  testDialects,
} from '@idt/testing';
import express, { type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExpressApp, createParsersFirstApp, startExpressApp } from '../src/app.js';

/** What multer does to a multipart body: reads the whole stream and leaves the fields on req.body. */
const multipartFields: RequestHandler = (req, _res, next) => {
  if (!req.is('multipart/form-data')) return next();
  req.on('data', () => undefined);
  req.on('end', () => {
    req.body = { note: 'parsed by the host' };
    next();
  });
};

/** A host served on a loopback port until `close()`. */
async function serve(listener: RequestListener): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const SETUP = '/idt/v1/identity/setup/admin';
describeExampleApp('Express 5 with idt under /idt', startExpressApp, testDialects(), (started) => {
  it('reads the JSON body express.json() parsed first', async () => {
    const host = await serve(createParsersFirstApp(started.app().idt));
    try {
      const response = await fetch(`${host.origin}${SETUP}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'not an address', password: 'correct horse battery staple', firstName: 'Ada' }),
      });
      // Setup is done; the fields were still read and checked (an empty body would name every field).
      const problem = await expectProblem(response, 400, 'Validation.Failed');
      expect(Object.keys(problem.errors).sort()).toEqual(['email', 'lastName', 'organizationName']);
    } finally {
      await host.close();
    }
  });

  it('reads the form body express.urlencoded() parsed first', async () => {
    const client = await registerFlowClient(
      started.app().idt,
      'Probe',
      started.flow().organizationId,
      'https://rp.example.com/cb',
      'https://rp.example.com/out',
    );
    const host = await serve(createParsersFirstApp(started.app().idt));
    try {
      const response = await fetch(`${host.origin}/idt/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: 'not-a-token',
          client_id: client.clientId,
          client_secret: client.clientSecret,
        }),
      });
      // The client authenticated from the rebuilt form, and the grant itself was judged.
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: 'invalid_grant' });
    } finally {
      await host.close();
    }
  });

  it('refuses a body a parser consumed and left as something it cannot rebuild (multipart)', async () => {
    const host = await serve(express().use(multipartFields, createExpressApp(started.app().idt)));
    try {
      const form = new FormData();
      form.set('note', 'hello');
      const response = await fetch(`${host.origin}${SETUP}`, { method: 'POST', body: form });
      const problem = await expectProblem(response, 400, 'Http.BodyAlreadyRead');
      expect(problem.detail).toContain('multer');
      expect(problem.detail).toContain('multipart/form-data');
    } finally {
      await host.close();
    }
  });
});

describe('Express 5: bad bodies to idt answer its problem documents', () => {
  let database: TestDatabase;
  let app: Awaited<ReturnType<typeof startExpressApp>>;
  let parsersFirst: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    app = await startExpressApp({
      port: 0,
      host: '127.0.0.1',
      database: database.db,
      env: { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent', IDT_DATA_DIR: database.dataDir },
    });
    parsersFirst = await serve(createParsersFirstApp(app.idt));
  });
  afterAll(async () => {
    await parsersFirst?.close();
    await app?.close();
    await database?.destroy();
  });

  const idtFirst = () => app.baseUrl.replace(/\/idt$/, '');

  it.each(BAD_BODIES)('answers $name through the example app, where idt reads its own bodies', async (bad) => {
    const problem = await expectProblem(
      await postBody(`${idtFirst()}${SETUP}`, bad.type, bad.body, bad.chunked),
      bad.status,
      'Http.ClientError',
    );
    expect(problem.detail).toBe(bad.detail);
  });

  it.each(BAD_BODIES)('answers $name the same when express.json() runs first, through createBodyErrorHandler', async (bad) => {
    const response = await postBody(`${parsersFirst.origin}${SETUP}`, bad.type, bad.body, bad.chunked);
    const problem = await expectProblem(response, bad.status, 'Http.ClientError');
    expect(problem.detail).toBe(bad.detail);
  });

  it('answers the parsers’ other refusals under /idt with a problem document, with idt’s response headers', async () => {
    const charset = await postBody(
      `${parsersFirst.origin}${SETUP}`,
      'application/json; charset=latin1',
      JSON.stringify(SETUP_ADMIN),
      false,
      {
        'x-request-id': 'bad-charset-1',
      },
    );
    expect(charset.headers.get('x-request-id')).toBe('bad-charset-1');
    expect(charset.headers.get('cache-control')).toBe('no-store');
    expect(charset.headers.get('x-content-type-options')).toBe('nosniff');
    const refused = await expectProblem(charset, 415, 'Http.ClientError');
    expect(refused).toMatchObject({
      title: 'Unsupported Media Type',
      detail: 'The charset "latin1" is not supported; send the body as UTF-8.',
    });
    expect(refused.traceId).toMatch(/^[0-9a-f]{32}$/);

    const encoding = await postBody(`${parsersFirst.origin}${SETUP}`, 'application/json', JSON.stringify(SETUP_ADMIN), false, {
      'content-encoding': 'compress',
    });
    const unsupported = await expectProblem(encoding, 415, 'Http.ClientError');
    expect(unsupported.detail).toBe('The content encoding "compress" is not supported.');
  });

  it('leaves the parsers’ errors outside /idt to Express', async () => {
    const response = await postBody(`${parsersFirst.origin}/orders`, 'application/json', '{"item":');
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    // Express's own page: the path `/idtx` is not under `/idt` either.
    const lookalike = await postBody(`${parsersFirst.origin}/idtx/v1/identity/setup/admin`, 'application/json', '{"item":');
    expect(lookalike.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('wrote nothing: setup still needs its first administrator', async () => {
    const status = await fetch(`${idtFirst()}/idt/v1/identity/setup/status`);
    expect(await status.json()).toEqual({ setupRequired: true });
  });

  it('answers a 404 naming the configured baseUrl when idt is mounted under another path, or at the root', async () => {
    const origin = new URL(app.baseUrl).origin;
    const underAuth = await serve(express().use('/auth', app.idt.handler));
    const atRoot = await serve(express().use(app.idt.handler));
    try {
      const discovery = await expectProblem(
        await fetch(`${underAuth.origin}/auth/.well-known/openid-configuration`),
        404,
        'Http.NotFound',
      );
      expect(discovery.detail).toBe(
        `No route at /auth/.well-known/openid-configuration: idt's baseUrl is ${app.baseUrl}, so its paths start with /idt (this one would be /idt/.well-known/openid-configuration). If idt is mounted under /auth, set baseUrl to ${origin}/auth (IDT_PATH_PREFIX=/auth).`,
      );
      const api = await expectProblem(await fetch(`${atRoot.origin}/v1/identity/setup/status`), 404, 'Http.NotFound');
      expect(api.detail).toContain('so its paths start with /idt (this one would be /idt/v1/identity/setup/status)');
      expect(api.detail).toContain('if idt is served at the root, drop /idt from baseUrl');
      const unrelated = await expectProblem(await fetch(`${underAuth.origin}/auth/orders`), 404, 'Http.NotFound');
      expect(unrelated.detail).toBe('No resource exists at this address.');
    } finally {
      await underAuth.close();
      await atRoot.close();
    }
  });
});
