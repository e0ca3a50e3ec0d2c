/**
 * idt in an Express 5 app, mounted under `/idt` before the app's own body
 * parsers.
 *
 * @packageDocumentation
 */
import { type CreateIdtOptions, createIdt, type Idt } from '@idt/core';
import { createBodyErrorHandler, listenFirst } from '@idt/core/node';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import express, { type Express, type RequestHandler } from 'express';

/** The modules this app composes. */
const modules = () => [identity(), oidc()] as const;

/** The app's idt. */
export type ExampleIdt = Idt<ReturnType<typeof modules>>;

/** The app's own page. */
const home: RequestHandler = (_req, res) => {
  res.type('html').send('<a href="/idt/.well-known/openid-configuration">OpenID configuration</a>');
};

/** The Express app: idt under `/idt`, then the app's own body parsers and routes. */
export function createExpressApp(idt: ExampleIdt): Express {
  const app = express();
  // idt first: it reads its own bodies under its own limits, and answers a malformed, oversized or
  // wrongly typed one with its problem document. The parsers below never see its requests.
  app.use('/idt', idt.handler);
  app.use(express.json());
  app.use(express.urlencoded({ extended: false }));
  app.get('/', home);
  return app;
}

/**
 * The same app for a host whose body parsers must run first, for every path.
 * idt rebuilds the JSON and form bodies they parsed, and
 * `createBodyErrorHandler(idt)` answers what they refuse under `/idt`
 * (malformed JSON, a body over their limit, an unsupported charset...) with
 * idt's problem documents instead of Express's HTML error page.
 */
export function createParsersFirstApp(idt: ExampleIdt): Express {
  const app = express();
  // idt's own limit is 1 MiB: the same limit here gives the same answers as idt's.
  app.use(express.json({ limit: '1mb' }));
  app.use(express.urlencoded({ extended: false, limit: '1mb' }));
  app.get('/', home);
  app.use('/idt', idt.handler);
  // After the parsers and idt: an error middleware sees the errors of what runs before it.
  app.use(createBodyErrorHandler(idt));
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
