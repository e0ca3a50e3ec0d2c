/**
 * idt in a Hono app: every `/idt/*` request answered by `idt.fetch`, served
 * on Node.js by `@hono/node-server`.
 *
 * @packageDocumentation
 */
import { getRequestListener } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { type CreateIdtOptions, createIdt, type Idt } from '@idt/core';
import { listenFirst } from '@idt/core/node';
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
  // Listen first: the bound address is idt's issuer. Until idt is composed, requests get 503.
  const bound = await listenFirst(port, host);
  const baseUrl = `${bound.origin}/idt`;
  const idt = await createIdt({ migrations: 'run', ...options, baseUrl, modules: modules() });
  const app = createHonoApp(idt);
  bound.use(getRequestListener(app.fetch), idt.upgrade);
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
