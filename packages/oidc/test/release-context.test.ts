import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietStockProviderWarnings } from '../../../test/support/quiet.js';
import { loadOidcProvider } from '../src/provider/load.js';
import { installContextRelease } from '../src/provider/release-context.js';

const CLIENT = { id: 'release-test', secret: 'release-test-secret-release-test-secret' };
const LINKS = ['request', 'response', 'req', 'res', 'state'] as const;

type Captured = Record<string, unknown> & { oidc?: Record<string, unknown> };

let server: Server;
let base: string;
/** The errors koa reported. */
const errors: Error[] = [];
/** Every koa context the provider's app made, with what a middleware after the release saw once the routes were done. */
const seen: Array<{ ctx: Captured; afterRoutes: { request: boolean; params: boolean } }> = [];

/** Resolves once the request's links are gone; fails the test after a second. */
async function released(ctx: Captured): Promise<void> {
  const deadline = Date.now() + 1000;
  while (ctx.req !== undefined) {
    if (Date.now() > deadline) throw new Error('the context still holds its request a second after the answer');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function basic(): string {
  return `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;
}

quietStockProviderWarnings();

beforeAll(async () => {
  const { Provider } = await loadOidcProvider();
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(base, {
    clients: [
      {
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
      },
    ],
    features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
  });
  // koa reports a request's error here (and prints it when nobody listens).
  // (oidc-provider's types list only its own events; the Provider is a koa application.)
  (provider as unknown as NodeJS.EventEmitter).on('error', (error: Error) => errors.push(error));
  installContextRelease(provider);
  provider.use(async (ctx, next) => {
    const entry = { ctx: ctx as unknown as Captured, afterRoutes: { request: false, params: false } };
    seen.push(entry);
    if (ctx.path === '/boom') throw new Error('a middleware failed');
    await next();
    entry.afterRoutes = {
      request: ctx.request !== undefined,
      params: (ctx as unknown as Captured).oidc?.params !== undefined,
    };
  });
  server.on('request', provider.callback());
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('releasing an answered oidc-provider request', () => {
  it('drops the context links once the answer is sent, not before', async () => {
    const response = await fetch(`${base}/token`, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { access_token?: string; token_type?: string };
    expect(body.token_type).toBe('Bearer');
    expect(body.access_token).toEqual(expect.any(String));

    const entry = seen.at(-1);
    if (!entry) throw new Error('no context seen');
    // The middleware after the release still saw the whole request.
    expect(entry.afterRoutes).toEqual({ request: true, params: true });
    await released(entry.ctx);
    // Every field is gone, koa's links to the request among them; the getter stays.
    expect(Object.keys(entry.ctx)).toEqual(expect.arrayContaining([...LINKS, 'app', 'params']));
    for (const key of Object.keys(entry.ctx)) expect(entry.ctx[key], key).toBeUndefined();
    const oidc = entry.ctx.oidc;
    if (!oidc) throw new Error('the provider context went with the fields');
    expect(Object.keys(oidc)).toEqual(expect.arrayContaining(['params', 'body', 'entities', 'claims', 'resourceServers']));
    for (const key of Object.keys(oidc)) expect(oidc[key], key).toBeUndefined();
  });

  it('answers every request as before: discovery, an error of a middleware, an unknown path', async () => {
    const discovery = await fetch(`${base}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    expect(((await discovery.json()) as { issuer: string }).issuer).toBe(base);

    const failed = await fetch(`${base}/boom`);
    expect(failed.status).toBe(500);
    await failed.arrayBuffer();
    expect(errors.at(-1)?.message).toBe('a middleware failed');

    const missing = await fetch(`${base}/nowhere`);
    expect(missing.status).toBe(404);
    await missing.arrayBuffer();

    // A path no route matched has no provider context to read.
    for (const entry of seen.slice(-3)) await released(entry.ctx);
  });

  it('keeps serving after a client leaves in the middle of its request', async () => {
    const before = seen.length;
    const reported = errors.length;
    await new Promise<void>((resolve) => {
      const request = httpRequest(`${base}/token`, {
        method: 'POST',
        headers: {
          authorization: basic(),
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': '1000',
        },
      });
      request.on('error', () => resolve());
      request.write('grant_type=client_');
      // Gone before the body is complete, once the provider's app has the request: its body read fails with the socket.
      const leave = () => {
        if (seen.length === before) {
          setTimeout(leave, 5);
          return;
        }
        request.destroy();
        resolve();
      };
      leave();
    });
    const left = seen[before];
    if (!left) throw new Error('the abandoned request reached no middleware');
    await released(left.ctx);
    // koa handled the failed body read as the request's error (node's parser saw the body cut short).
    expect(errors.length).toBe(reported + 1);

    const after = await fetch(`${base}/token`, {
      method: 'POST',
      headers: { authorization: basic(), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    expect(after.status).toBe(200);
    await after.arrayBuffer();
  });
});
