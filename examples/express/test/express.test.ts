import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeExampleApp, registerFlowClient, testDialects } from '@idt/testing';
import express, { type RequestHandler } from 'express';
import { expect, it } from 'vitest';
import { createExpressApp, startExpressApp } from '../src/app.js';

/** What multer does to a multipart body: reads the whole stream and leaves the fields on req.body. */
const multipartFields: RequestHandler = (req, _res, next) => {
  if (!req.is('multipart/form-data')) return next();
  req.on('data', () => undefined);
  req.on('end', () => {
    req.body = { note: 'parsed by the host' };
    next();
  });
};

describeExampleApp('Express 5 with idt under /idt', startExpressApp, testDialects(), (started) => {
  it('reads the JSON body express.json() parsed first', async () => {
    const response = await fetch(`${started.app().baseUrl}/v1/identity/setup/admin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'not an address', password: 'correct horse battery staple', firstName: 'Ada' }),
    });
    // Setup is done; the fields were still read and checked (an empty body would name every field).
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { code: string; errors: Record<string, string[]> };
    expect(problem.code).toBe('Validation.Failed');
    expect(Object.keys(problem.errors).sort()).toEqual(['email', 'lastName', 'organizationName']);
  });

  it('reads the form body express.urlencoded() parsed first', async () => {
    const client = await registerFlowClient(
      started.app().idt,
      'Probe',
      started.flow().organizationId,
      'https://rp.example.com/cb',
      'https://rp.example.com/out',
    );
    const response = await fetch(`${started.app().baseUrl}/connect/token`, {
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
  });

  it('refuses a body a parser consumed and left as something it cannot rebuild (multipart)', async () => {
    const host = express().use(multipartFields, createExpressApp(started.app().idt));
    const server = createServer(host);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const form = new FormData();
      form.set('note', 'hello');
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/idt/v1/identity/setup/admin`, { method: 'POST', body: form });
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      const problem = (await response.json()) as { code: string; detail: string };
      expect(problem.code).toBe('Http.BodyAlreadyRead');
      expect(problem.detail).toContain('multer');
      expect(problem.detail).toContain('multipart/form-data');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
