import { createIdt } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import { createTestDatabase, registerFlowClient, runSignInFlow, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ExampleIdt } from '../src/lib/idt.js';

const baseUrl = 'http://localhost:3000/idt';

// The route module asks getIdt() for the app's idt: here it is one over a throwaway database.
const composed = vi.hoisted(() => ({ idt: undefined as Promise<ExampleIdt> | undefined }));
vi.mock('../src/lib/idt.js', () => ({
  getIdt: () => composed.idt ?? Promise.reject(new Error('idt is not composed yet')),
}));

const route = await import('../src/app/idt/[...path]/route.js');
type Method = 'DELETE' | 'GET' | 'HEAD' | 'OPTIONS' | 'PATCH' | 'POST' | 'PUT';

/** What Next.js does with a request: `/idt/...` goes to the route's function for its method. */
const next = (async (input: string | URL | Request, init?: RequestInit) => {
  const request = new Request(input, init);
  const handler = route[request.method as Method];
  if (!new URL(request.url).pathname.startsWith('/idt/')) return new Response('Not Found', { status: 404 });
  if (typeof handler !== 'function') return new Response(null, { status: 405 });
  return handler(request);
}) as typeof fetch;

describe('Next.js App Router route handlers at app/idt/[...path]/route.ts', () => {
  let database: TestDatabase;
  let idt: ExampleIdt;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    composed.idt = createIdt({
      database: database.db,
      baseUrl,
      env: { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent', IDT_DATA_DIR: database.dataDir },
      modules: [identity(), oidc()],
      migrations: 'run',
    });
    idt = await composed.idt;
  });
  afterAll(async () => {
    await idt?.close();
    await database?.destroy();
  });

  it('exports a function for every method, on the Node.js runtime', () => {
    expect(route.runtime).toBe('nodejs');
    for (const method of ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'] as const) {
      expect(typeof route[method]).toBe('function');
    }
  });

  it('runs setup, discovery, sign-in, code + PKCE, userinfo, an API call, refresh and logout through the route functions', async () => {
    const flow = await runSignInFlow({
      baseUrl,
      fetch: next,
      registerClient: (...args) => registerFlowClient(idt, 'Next.js host', ...args),
    });
    expect(flow.issuer).toBe(baseUrl);
  });
});
