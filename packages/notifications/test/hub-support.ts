import type { TestServer } from '@idt/testing';
import * as signalR from '@microsoft/signalr';
import WebSocket from 'ws';

/** A message the hub sent, parsed. */
export type HubMessage = Record<string, unknown> & { type?: number };

/** A hand-driven WebSocket client of the hub: every record it received, and how the socket ended. */
export interface RawHubClient {
  readonly ws: WebSocket;
  readonly messages: HubMessage[];
  /** Resolves with the close code once the socket is closed. */
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Sends records (each followed by the record separator), in one frame. */
  send(...records: unknown[]): void;
  /** Resolves with the first received message matching `match` (already received ones included). */
  next(match: (message: HubMessage) => boolean, timeoutMs?: number): Promise<HubMessage>;
}

/** Negotiates (version 1) and returns the connection token. */
export async function negotiate(server: TestServer, token: string): Promise<string> {
  const response = await server.fetch('/hubs/realtime/negotiate?negotiateVersion=1', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  if (response.status !== 200) throw new Error(`negotiate answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { connectionToken: string }).connectionToken;
}

/** The WebSocket URL of the hub. */
export function hubSocketUrl(server: TestServer, query: Record<string, string> = {}): string {
  const url = new URL(`${server.url.replace(/^http/, 'ws')}/hubs/realtime`);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.href;
}

/**
 * Opens a WebSocket to the hub (with `id` from a fresh negotiate unless given)
 * and, unless `handshake` is false, completes the JSON handshake.
 */
export async function connectRaw(
  server: TestServer,
  token: string,
  options: { id?: string | null; handshake?: boolean; via?: 'header' | 'query' } = {},
): Promise<RawHubClient> {
  const id = options.id === undefined ? await negotiate(server, token) : options.id;
  const query: Record<string, string> = id === null ? {} : { id };
  if (options.via === 'query') query.access_token = token;
  const ws = new WebSocket(
    hubSocketUrl(server, query),
    options.via === 'query' ? {} : { headers: { authorization: `Bearer ${token}` } },
  );
  const messages: HubMessage[] = [];
  const waiters: Array<{ match: (message: HubMessage) => boolean; resolve: (message: HubMessage) => void }> = [];
  ws.on('message', (data) => {
    for (const record of data.toString().split('\u001e').filter(Boolean)) {
      const message = JSON.parse(record) as HubMessage;
      messages.push(message);
      for (const waiter of [...waiters]) {
        if (waiter.match(message)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      }
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error(`upgrade answered ${res.statusCode}`), { status: res.statusCode })),
    );
    ws.once('error', reject);
  });
  const client: RawHubClient = {
    ws,
    messages,
    closed,
    send: (...records) => ws.send(records.map((record) => `${JSON.stringify(record)}\u001e`).join('')),
    next(match, timeoutMs = 5000) {
      const found = messages.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching hub message; received ${JSON.stringify(messages)}`)),
          timeoutMs,
        );
        waiters.push({
          match,
          resolve: (message) => {
            clearTimeout(timer);
            resolve(message);
          },
        });
      });
    },
  };
  if (options.handshake !== false) {
    client.send({ protocol: 'json', version: 1 });
    await client.next((message) => Object.keys(message).length === 0);
  }
  return client;
}

/** The status of a refused upgrade (the hub answers before switching protocols). */
export async function upgradeStatus(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('open', () => {
      ws.close();
      reject(new Error('the upgrade was accepted'));
    });
    ws.once('error', () => undefined);
  });
}

/** The stock `@microsoft/signalr` client, as an application builds it (automatic reconnect on). */
export function stockClient(server: TestServer, token: () => string) {
  return new signalR.HubConnectionBuilder()
    .withUrl(`${server.url}/hubs/realtime`, { accessTokenFactory: token })
    .withAutomaticReconnect([0, 100, 200])
    .configureLogging(signalR.LogLevel.None)
    .build();
}
