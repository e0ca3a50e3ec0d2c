/**
 * idt in an Express 5 app, mounted under `/idt` behind the app's own body
 * parsers.
 *
 * @packageDocumentation
 */
import { type CreateIdtOptions, createIdt, type Idt } from '@idt/core';
import { listenFirst } from '@idt/core/node';
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
  // Listen first: the bound address is idt's issuer. Until idt is composed, requests get 503.
  const bound = await listenFirst(port, host);
  const baseUrl = `${bound.origin}/idt`;
  const idt = await createIdt({ migrations: 'run', ...options, baseUrl, modules: modules() });
  const app = createExpressApp(idt);
  bound.use(app, idt.upgrade);
  idt.start();
  return {
    app,
    idt,
    baseUrl,
    async close() {
      await bound.close();
      await idt.close();
    },
  };
}
