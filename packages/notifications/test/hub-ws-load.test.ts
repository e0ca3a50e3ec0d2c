import { bootstrapAdmin, startTestServer, type TestServer } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type WebSocketClient from 'ws';

/** The hub loads `ws` with its first upgrade: here the load fails until `failing` is cleared. */
const load = vi.hoisted(() => ({ failing: true, attempts: 0 }));
vi.mock('ws', async (importOriginal) => {
  load.attempts++;
  if (load.failing) throw new Error('ws could not be loaded');
  return importOriginal();
});

const { default: WebSocket } = await vi.importActual<{ default: typeof WebSocketClient }>('ws');

/** Negotiates a connection id (hub-support.ts imports ws, which this file mocks). */
async function negotiate(server: TestServer, token: string): Promise<string> {
  const response = await server.fetch('/hubs/realtime/negotiate?negotiateVersion=1', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { connectionToken: string }).connectionToken;
}

/** Opens a WebSocket to the hub; resolves with 'open' or the status of the refusal. */
async function upgrade(server: TestServer, token: string): Promise<'open' | number> {
  const id = await negotiate(server, token);
  const url = `${server.url.replace(/^http/, 'ws')}/hubs/realtime?id=${encodeURIComponent(id)}`;
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  return new Promise((resolve, reject) => {
    socket.once('open', () => {
      socket.close();
      resolve('open');
    });
    socket.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      response.resume();
      socket.terminate();
    });
    socket.once('error', reject);
  });
}

describe('realtime hub when ws cannot be loaded', () => {
  let server: TestServer | undefined;
  afterAll(async () => {
    await server?.close();
  });
  beforeAll(() => {
    load.failing = true;
  });

  it('refuses the upgrade with a problem, and a server that never loaded ws still closes', async () => {
    const lonely = await startTestServer();
    const admin = await bootstrapAdmin(lonely);
    expect(await upgrade(lonely, await admin.token())).toBe(500);
    expect(load.attempts).toBeGreaterThan(0);
    await expect(lonely.close()).resolves.toBeUndefined();
  });

  it('tries the load again with the next upgrade, which succeeds once ws loads', async () => {
    server = await startTestServer();
    const admin = await bootstrapAdmin(server);
    const token = await admin.token();
    const before = load.attempts;
    expect(await upgrade(server, token)).toBe(500);
    expect(await upgrade(server, token)).toBe(500);
    // Each upgrade tried again: the failed load was not kept.
    expect(load.attempts).toBe(before + 2);
    load.failing = false;
    expect(await upgrade(server, token)).toBe('open');
    expect(await upgrade(server, token)).toBe('open');
  });
});
