import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ConfigError,
  createIdt,
  createManualClock,
  defineRoute,
  envReader,
  type Idt,
  type IdtModule,
  json,
  orderModules,
} from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import { createTestDatabase, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

const ENV = { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent' } as const;

const bare = (id: string, extra: Partial<IdtModule> = {}): IdtModule => ({ id, setup: () => ({ services: {} }), ...extra });

describe('orderModules', () => {
  it('sets up required and present optional modules first, otherwise keeping the order', () => {
    const ordered = orderModules([
      bare('b', { requires: ['a'] }),
      bare('c', { optional: ['b', 'absent'] }),
      bare('a'),
      bare('d'),
    ]);
    expect(ordered.map((module) => module.id)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('names a missing requirement, a duplicate and a cycle', () => {
    expect(() => orderModules([bare('oidc', { requires: ['identity'] })])).toThrow(
      'Module "oidc" requires the "identity" module: add identity() to modules',
    );
    expect(() => orderModules([bare('a'), bare('a')])).toThrow('Module "a" is listed twice');
    expect(() => orderModules([bare('a', { requires: ['b'] }), bare('b', { requires: ['a'] })])).toThrow(/cycle: a → b → a/);
  });
});

/** A host's own module, built only on the public contract. */
function greetings(calls: string[]): IdtModule<'greetings', { greet(name: string): string }, { greeting: string }> {
  return {
    id: 'greetings',
    requires: ['counter'],
    settings: {
      variables: [{ name: 'GREETING', description: 'How to greet.', default: 'Hello' }],
      resolve(env) {
        const read = envReader(env);
        const greeting = read.string('GREETING') ?? 'Hello';
        if (greeting.length > 20) read.problem('GREETING: must be at most 20 characters');
        read.done();
        return { greeting };
      },
    },
    setup(ctx) {
      const counter = ctx.module<{ next(): number }>('counter');
      const greet = (name: string) => `${ctx.settings.greeting}, ${name} #${counter.next()}`;
      return {
        services: { greet },
        routes: [
          defineRoute({
            method: 'POST',
            path: '/v1/greetings',
            operationId: 'greet',
            summary: 'Greets',
            auth: 'anonymous',
            request: { body: z.object({ name: z.string().min(1) }) },
            responses: { 200: { description: 'A greeting' } },
            handler: ({ body }) => json({ text: greet(body.name), capability: ctx.capability<string>('greetings.motto') }),
          }),
        ],
        surfaces: [
          {
            name: 'legacy',
            matches: (path) => path.startsWith('/legacy/'),
            node(req: IncomingMessage, res: ServerResponse) {
              if (req.url?.endsWith('/decline')) return false;
              res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; Path=/']);
              res.writeHead(201, { 'content-type': 'text/plain', 'x-url': req.url ?? '' });
              res.end(`legacy ${req.method} ${ctx.clock.now().toISOString()}`);
              return true;
            },
          },
        ],
        jobs: [{ name: 'greetings.tick', intervalMs: 60_000, run: async () => void calls.push('tick') }],
        async close() {
          calls.push('closed');
        },
      };
    },
  };
}

function counter(): IdtModule<'counter', { next(): number }> {
  let count = 0;
  return {
    id: 'counter',
    provides: { 'greetings.motto': () => 'be kind' },
    setup: () => ({ services: { next: () => ++count } }),
  };
}

describe('createIdt composes a host module through both entry points', () => {
  let database: TestDatabase;
  let idt: Idt<readonly [ReturnType<typeof greetings>, ReturnType<typeof counter>]>;
  let server: Server;
  let origin: string;
  const calls: string[] = [];
  const clock = createManualClock(new Date('2030-01-01T00:00:00.000Z'));

  beforeAll(async () => {
    database = await createTestDatabase('sqlite', [coreMigrations]);
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    idt = await createIdt({
      database: database.db,
      baseUrl: `${origin}/idt`,
      env: { ...ENV, GREETING: 'Ahoy', IDT_DATA_DIR: database.dataDir },
      clock,
      mailer: { send: async () => undefined },
      modules: [greetings(calls), counter()],
    });
    // An Express-like host: strips the mount path from req.url, keeps it in originalUrl, and may parse bodies first.
    server.on('request', (req: IncomingMessage & { originalUrl?: string; body?: unknown }, res: ServerResponse) => {
      const url = req.url ?? '/';
      if (!url.startsWith('/idt')) {
        res.writeHead(404).end();
        return;
      }
      req.originalUrl = url;
      req.url = url.slice('/idt'.length) || '/';
      const parser = req.headers['x-test-parser'];
      if (!parser) return void idt.handler(req, res);
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        req.body = parser === 'json' ? JSON.parse(text) : { file: { name: 'upload.bin', size: text.length } };
        void idt.handler(req, res);
      });
    });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await idt?.close();
    await database?.destroy();
  });

  it("uses the host's knex instance as its one pool, not a second one on the configured URL", () => {
    // A knex instance is a function; taking it for a URL once opened a second SQLite pool whose
    // overlapping write transactions failed with "database is locked".
    expect(idt.db).toBe(database.db);
  });

  it('types and reaches the services of each module', () => {
    expect(idt.services.greetings.greet('Ada')).toBe('Ahoy, Ada #1');
    expect(idt.modules.map((module) => module.id)).toEqual(['counter', 'greetings']);
  });

  it('serves routes through fetch, capabilities included', async () => {
    const response = await idt.fetch(
      new Request(`${origin}/idt/v1/greetings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Bo' }),
      }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ text: 'Ahoy, Bo #2', capability: 'be kind' });
  });

  it('reaches a node-only surface from fetch, with status, headers, cookies and the injected clock', async () => {
    const response = await idt.fetch(new Request(`${origin}/idt/legacy/x?y=1`, { method: 'POST', body: 'z' }));
    expect(response.status).toBe(201);
    expect(response.headers.get('x-url')).toBe('/idt/legacy/x?y=1');
    expect(response.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(await response.text()).toBe('legacy POST 2030-01-01T00:00:00.000Z');
    // The bridge reads at most 1 MiB of a body for a node surface.
    const oversize = await idt.fetch(
      new Request(`${origin}/idt/legacy/x`, { method: 'POST', body: 'x'.repeat(1024 * 1024 + 1) }),
    );
    expect(oversize.status).toBe(413);
    // A surface that declines leaves the request to the routes (404 problem).
    const declined = await idt.fetch(new Request(`${origin}/idt/legacy/decline`));
    expect(declined.status).toBe(404);
    expect(((await declined.json()) as { code: string }).code).toBe('Http.NotFound');
  });

  it('restores the mount path of a sub-mounted node handler', async () => {
    const legacy = await fetch(`${origin}/idt/legacy/x`);
    expect(legacy.status).toBe(201);
    expect(legacy.headers.get('x-url')).toBe('/idt/legacy/x');
    const health = await fetch(`${origin}/idt/health`);
    expect(health.status).toBe(200);
  });

  it('uses a JSON body a parser already read, and names the parser when a body cannot be rebuilt', async () => {
    const parsed = await fetch(`${origin}/idt/v1/greetings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test-parser': 'json' },
      body: JSON.stringify({ name: 'Cy' }),
    });
    expect(parsed.status).toBe(200);
    expect(((await parsed.json()) as { text: string }).text).toMatch(/^Ahoy, Cy #\d+$/);
    const multipart = await fetch(`${origin}/idt/v1/greetings`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=x', 'x-test-parser': 'multipart' },
      body: '--x--',
    });
    expect(multipart.status).toBe(400);
    const problem = (await multipart.json()) as { code: string; detail: string };
    expect(problem.code).toBe('Http.BodyAlreadyRead');
    expect(problem.detail).toMatch(/body parser/);
  });

  it('runs a job on demand', async () => {
    await idt.runJobs('greetings.tick');
    expect(calls).toContain('tick');
  });
});

describe('createIdt refuses a composition it cannot run', () => {
  it('reports the settings problems of every module at once', async () => {
    const failing = (id: string, variable: string): IdtModule => ({
      id,
      settings: {
        variables: [],
        resolve: () => {
          throw new ConfigError([`${variable}: is wrong`]);
        },
      },
      setup: () => ({ services: {} }),
    });
    const error = await createIdt({
      database: 'sqlite::memory:',
      env: ENV,
      modules: [failing('one', 'ONE'), failing('two', 'TWO')],
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual(['ONE: is wrong', 'TWO: is wrong']);
  });

  it('names the module a composition lacks', async () => {
    await expect(
      createIdt({ database: 'sqlite::memory:', env: ENV, modules: [bare('oidc', { requires: ['identity'] })] }),
    ).rejects.toThrow('add identity() to modules');
  });

  it('refuses pending migrations outside Testing, naming idt migrate', async () => {
    await expect(
      createIdt({
        database: 'sqlite::memory:',
        env: { IDT_ENVIRONMENT: 'Development', IDT_LOG_LEVEL: 'silent' },
        mailer: { send: async () => undefined },
        modules: [],
      }),
    ).rejects.toThrow(/idt migrate/);
  });
});
