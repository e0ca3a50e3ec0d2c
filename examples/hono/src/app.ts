/**
 * idt in a Hono app: every `/idt/*` request answered by `idt.fetch`, served
 * on Node.js by `@hono/node-server`.
 *
 * @packageDocumentation
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { type CreateIdtOptions, createIdt, type Idt } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import { Hono } from 'hono';

/** The modules this app composes. */
const modules = () => [identity(), oidc()] as const;

/** The app's idt. */
export type ExampleIdt = Idt<ReturnType<typeof modules>>;

/** The Hono app: its own routes, and idt under `/idt`. */
export function createHonoApp(idt: ExampleIdt): Hono {
  const app = new Hono();
  app.get('/', (c) => c.html('<a href="/idt/.well-known/openid-configuration">OpenID configuration</a>'));
  // The peer address keys idt's rate limits (behind a proxy, set IDT_TRUST_PROXY=true instead).
  app.all('/idt/*', (c) => idt.fetch(c.req.raw, { remoteAddress: getConnInfo(c).remote.address }));
  return app;
}

/** Options of {@link startHonoApp}: where to listen, and createIdt's options (database, env, mailer...). */
export interface HonoAppOptions extends Omit<CreateIdtOptions<[]>, 'modules' | 'baseUrl'> {
  /** 0 picks a free port. */
  readonly port?: number;
  readonly host?: string;
}

/**
 * Listens, then composes idt with the bound address as its issuer
 * (`http://host:port/idt`), then hands requests to the Hono app.
 */
export async function startHonoApp({ port = 3000, host = 'localhost', ...options }: HonoAppOptions) {
  // Until idt is composed, requests get 503.
  const server = createServer((_req, res) => void res.writeHead(503, { 'retry-after': '1' }).end());
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const baseUrl = `http://${host}:${(server.address() as AddressInfo).port}/idt`;
  const idt = await createIdt({ migrations: 'run', ...options, baseUrl, modules: modules() });
  const app = createHonoApp(idt);
  server.removeAllListeners('request').on('request', getRequestListener(app.fetch));
  idt.start();
  return {
    app,
    idt,
    baseUrl,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await idt.close();
    },
  };
}
