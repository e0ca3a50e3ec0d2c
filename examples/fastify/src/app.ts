/**
 * idt in a Fastify 5 app, served from an encapsulated plugin under `/idt`.
 *
 * @packageDocumentation
 */
import { type CreateIdtOptions, createIdt, type Idt } from '@idt/core';
import { createBodyErrorHandler, listenFirst } from '@idt/core/node';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import Fastify, { type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';

/** The modules this app composes. */
const modules = () => [identity(), oidc()] as const;

/** The app's idt. */
export type ExampleIdt = Idt<ReturnType<typeof modules>>;

/**
 * A plugin that hands every request under its prefix to idt. Fastify's body
 * parsing is off inside it, so the raw request stream reaches idt: idt reads
 * its own bodies under its own limits and answers a malformed, oversized or
 * wrongly typed one with its problem document. A `Content-Type` header that
 * Fastify cannot parse at all it refuses before any route runs; the scope's
 * error handler answers that with idt's problem document too, and leaves
 * every other error to the app's own handler.
 */
export function idtPlugin(idt: ExampleIdt): FastifyPluginAsync {
  const bodyErrors = createBodyErrorHandler(idt);
  return async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.setErrorHandler(async (error: { code?: unknown }, request, reply) => {
      if (error.code !== 'FST_ERR_CTP_INVALID_MEDIA_TYPE') throw error; // to the app's error handler
      reply.hijack();
      await bodyErrors(error, request.raw, reply.raw, (unanswered) => reply.raw.destroy(unanswered as Error));
    });
    const handle = async (request: FastifyRequest, reply: FastifyReply) => {
      reply.hijack();
      await idt.handler(request.raw, reply.raw);
    };
    scope.all('/', handle);
    scope.all('/*', handle);
  };
}

/** Options of {@link startFastifyApp}: where to listen, and createIdt's options (database, env, mailer...). */
export interface FastifyAppOptions extends Omit<CreateIdtOptions<[]>, 'modules' | 'baseUrl'> {
  /** 0 picks a free port. */
  readonly port?: number;
  readonly host?: string;
}

/**
 * Listens, then composes idt with the bound address as its issuer
 * (`http://host:port/idt`), then hands requests to the Fastify app.
 */
export async function startFastifyApp({ port = 3000, host = 'localhost', ...options }: FastifyAppOptions) {
  // Listen first: the bound address is idt's issuer. Until idt is composed, requests get 503.
  const bound = await listenFirst(port, host);
  const baseUrl = `${bound.origin}/idt`;
  const idt = await createIdt({ migrations: 'run', ...options, baseUrl, modules: modules() });
  const app = Fastify({ serverFactory: () => bound.server });
  app.get('/', async (_request, reply) =>
    reply.type('text/html').send('<a href="/idt/.well-known/openid-configuration">OpenID configuration</a>'),
  );
  await app.register(idtPlugin(idt), { prefix: '/idt' });
  await app.ready();
  bound.use(app.routing, idt.upgrade);
  idt.start();
  return {
    app,
    idt,
    baseUrl,
    async close() {
      await app.close();
      await bound.close();
      await idt.close();
    },
  };
}
