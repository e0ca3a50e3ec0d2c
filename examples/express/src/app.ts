/**
 * idt in an Express 5 app, mounted under `/idt` behind the app's own body
 * parsers.
 *
 * @packageDocumentation
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CreateIdtOptions, createIdt, type Idt } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import express, { type Express } from 'express';

/** The modules this app composes. */
const modules = () => [identity(), oidc()] as const;

/** The app's idt. */
export type ExampleIdt = Idt<ReturnType<typeof modules>>;

/** The Express app: its own routes and body parsers, and idt under `/idt`. */
export function createExpressApp(idt: ExampleIdt): Express {
  const app = express();
  // Body parsers may run before idt: it rebuilds JSON and form bodies from req.body.
  app.use(express.json());
  app.use(express.urlencoded({ extended: false }));
  app.get('/', (_req, res) => {
    res.type('html').send('<a href="/idt/.well-known/openid-configuration">OpenID configuration</a>');
  });
  app.use('/idt', idt.handler);
  return app;
}

/** Options of {@link startExpressApp}: where to listen, and createIdt's options (database, env, mailer...). */
export interface ExpressAppOptions extends Omit<CreateIdtOptions<[]>, 'modules' | 'baseUrl'> {
  /** 0 picks a free port. */
  readonly port?: number;
  readonly host?: string;
}

/**
 * Listens, then composes idt with the bound address as its issuer
 * (`http://host:port/idt`), then hands requests to the Express app.
 */
export async function startExpressApp({ port = 3000, host = 'localhost', ...options }: ExpressAppOptions) {
  // Until idt is composed, requests get 503.
  const server = createServer((_req, res) => void res.writeHead(503, { 'retry-after': '1' }).end());
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const baseUrl = `http://${host}:${(server.address() as AddressInfo).port}/idt`;
  const idt = await createIdt({ migrations: 'run', ...options, baseUrl, modules: modules() });
  const app = createExpressApp(idt);
  server.removeAllListeners('request').on('request', app);
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
