import { createServer, type IncomingHttpHeaders } from 'node:http';
import {
  bearer,
  bootstrapAdmin,
  mintAccessToken,
  seedMembership,
  seedUser,
  startTestServer,
  type TestAdmin,
  type TestServer,
} from '@idt/testing';
import * as signalR from '@microsoft/signalr';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import {
  CLEARING_COOKIES,
  closedPort,
  type FakeSessions,
  fakeSessions,
  type Listening,
  listen,
  rawRequest,
  startBff,
  type TestBff,
} from './proxy-support.js';

const RS = '\u001e';

/** A WebSocket the test opened through the BFF: every message it received, and how it closed. */
interface BrowserSocket {
  readonly ws: WebSocket;
  readonly messages: Array<{ data: Buffer; isBinary: boolean }>;
  readonly closed: Promise<{ code: number; reason: string }>;
  next(count?: number, timeoutMs?: number): Promise<Array<{ data: Buffer; isBinary: boolean }>>;
}

interface Refusal {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** Opens a WebSocket like a browser page would (cookie and Origin), resolving when it is open or refused. */
function openThroughBff(
  url: string,
  headers: Record<string, string>,
  protocols: string[] = [],
): Promise<BrowserSocket | Refusal> {
  const ws = new WebSocket(url, protocols, { headers });
  const messages: BrowserSocket['messages'] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (data, isBinary) => {
    messages.push({ data: Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer), isBinary });
    for (const waiter of waiters.splice(0)) waiter();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    ws.once('open', () =>
      resolve({
        ws,
        messages,
        closed,
        async next(count = 1, timeoutMs = 2000) {
          const deadline = Date.now() + timeoutMs;
          while (messages.length < count) {
            if (Date.now() > deadline) throw new Error(`only ${messages.length} of ${count} messages arrived`);
            await new Promise<void>((wake) => {
              waiters.push(wake);
              setTimeout(wake, 50);
            });
          }
          return messages.slice(0, count);
        },
      }),
    );
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    ws.once('error', reject);
  });
}

async function opened(result: Promise<BrowserSocket | Refusal>): Promise<BrowserSocket> {
  const socket = await result;
  if ('status' in socket) throw new Error(`refused with ${socket.status}: ${socket.body}`);
  return socket;
}

async function refused(result: Promise<BrowserSocket | Refusal>): Promise<Refusal> {
  const socket = await result;
  if (!('status' in socket)) {
    socket.ws.terminate();
    throw new Error('the upgrade was accepted');
  }
  return socket;
}

const wsUrl = (bff: Listening, query = '') => `${bff.url.replace(/^http/, 'ws')}/api/hubs/realtime${query}`;

/** A stand-in hub: records upgrades, refuses on demand, echoes every message with its frame type. */
interface FakeHub extends Listening {
  readonly upgrades: Array<{ url: string; headers: IncomingHttpHeaders }>;
  readonly sockets: WebSocket[];
  /** How an accepted socket closed. */
  closeOf(ws: WebSocket): Promise<{ code: number; reason: string }>;
  /** A status to refuse an upgrade with, `'hang'` to never answer, or nothing to accept. */
  refuse: (headers: IncomingHttpHeaders) => number | 'hang' | undefined;
  /** Sent to each accepted socket at once, before any message arrives. */
  greeting?: string;
}

async function startFakeHub(): Promise<FakeHub> {
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => [...protocols][0] ?? false });
  const server = createServer((_req, res) => {
    res.writeHead(404);
    res.end();
  });
  const closes = new WeakMap<WebSocket, Promise<{ code: number; reason: string }>>();
  const hub = {
    upgrades: [],
    sockets: [],
    refuse: () => undefined,
    closeOf: (ws: WebSocket) => closes.get(ws) ?? Promise.reject(new Error('not a hub socket')),
  } as unknown as FakeHub;
  server.on('upgrade', (req, socket, head) => {
    hub.upgrades.push({ url: req.url ?? '', headers: req.headers });
    const refusal = hub.refuse(req.headers);
    if (refusal === 'hang') return;
    if (refusal !== undefined) {
      const body = JSON.stringify({ status: refusal, code: 'Realtime.ConnectionNotFound' });
      socket.end(
        `HTTP/1.1 ${refusal} Refused\r\nContent-Type: application/problem+json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      hub.sockets.push(ws);
      ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
      closes.set(
        ws,
        new Promise((resolve) =>
          ws.on('close', (code, reason) => {
            resolve({ code, reason: reason.toString() });
          }),
        ),
      );
      if (hub.greeting) ws.send(hub.greeting);
    });
  });
  Object.assign(hub, await listen(server));
  return hub;
}

async function until(condition: () => boolean, timeoutMs = 2000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('hub proxy against a stand-in hub', () => {
  let hub: FakeHub;
  let sessions: FakeSessions;
  let bff: TestBff;
  let minted = 0;

  beforeAll(async () => {
    hub = await startFakeHub();
    sessions = fakeSessions('token-0', async () => `token-${++minted}`);
    bff = await startBff({
      apiBaseUrl: `${hub.url}/base`,
      sessions,
      hub: { allowedOrigins: ['https://app.example'], sessionCheckIntervalMs: 0 },
    });
  });
  afterEach(() => {
    hub.upgrades.length = 0;
    hub.refuse = () => undefined;
    hub.greeting = undefined;
    for (const ws of hub.sockets.splice(0)) ws.terminate();
  });
  afterAll(async () => {
    await bff?.close();
    await hub?.close();
  });

  const browser = () => ({ cookie: sessions.cookie, origin: bff.url });

  it('bridges text and binary frames unchanged, with the bearer and without the cookie', async () => {
    const socket = await opened(openThroughBff(wsUrl(bff, '?id=conn-1&access_token=from-page'), browser()));
    expect(hub.upgrades).toHaveLength(1);
    const [upgrade] = hub.upgrades;
    expect(upgrade?.url).toBe('/base/hubs/realtime?id=conn-1');
    expect(upgrade?.headers.authorization).toBe(`Bearer ${sessions.session?.accessToken}`);
    expect(upgrade?.headers.cookie).toBeUndefined();
    expect(upgrade?.headers['x-forwarded-for']).toBe('127.0.0.1');

    const handshake = `{"protocol":"json","version":1}${RS}`;
    const records = `{"type":6}${RS}{"type":1,"target":"JoinGroup","arguments":["ü"]}${RS}`;
    const binary = Buffer.from([0x1e, 0x00, 0xff, 0x1e, 0x7b]);
    socket.ws.send(handshake);
    socket.ws.send(records);
    socket.ws.send(binary);
    const received = await socket.next(3);
    expect(received.map((message) => [message.data.toString('hex'), message.isBinary])).toEqual([
      [Buffer.from(handshake).toString('hex'), false],
      [Buffer.from(records).toString('hex'), false],
      [binary.toString('hex'), true],
    ]);
    socket.ws.close();
    await socket.closed;
  });

  it('delivers what the hub sends before the browser socket is accepted', async () => {
    hub.greeting = `{}${RS}`;
    const socket = await opened(openThroughBff(wsUrl(bff, '?id=early'), browser()));
    const [first] = await socket.next(1);
    expect(first?.data.toString()).toBe(`{}${RS}`);
    socket.ws.close();
  });

  it('accepts the subprotocol the hub chose', async () => {
    const socket = await opened(openThroughBff(wsUrl(bff), browser(), ['json.v1', 'other']));
    expect(socket.ws.protocol).toBe('json.v1');
    expect(hub.upgrades[0]?.headers['sec-websocket-protocol']).toBe('json.v1,other');
    socket.ws.close();
  });

  it('propagates close codes both ways', async () => {
    const lastUpstream = async () => {
      await until(() => hub.sockets.length > 0);
      return hub.sockets.at(-1) as WebSocket;
    };
    const first = await opened(openThroughBff(wsUrl(bff), browser()));
    const firstUpstream = await lastUpstream();
    first.ws.close(4001, 'bye');
    expect(await hub.closeOf(firstUpstream)).toEqual({ code: 4001, reason: 'bye' });
    await first.closed;

    const second = await opened(openThroughBff(wsUrl(bff), browser()));
    (await lastUpstream()).close(4002, 'later');
    expect(await second.closed).toEqual({ code: 4002, reason: 'later' });

    const third = await opened(openThroughBff(wsUrl(bff), browser()));
    (await lastUpstream()).terminate();
    expect((await third.closed).code).toBe(1001);

    const fourth = await opened(openThroughBff(wsUrl(bff), browser()));
    const fourthUpstream = await lastUpstream();
    fourth.ws.terminate();
    expect((await hub.closeOf(fourthUpstream)).code).toBe(1001);
    await until(() => bff.hub.connectionCount() === 0);
  });

  it('refuses a foreign or missing Origin with 403 and a missing session with 401, before reaching the hub', async () => {
    for (const origin of ['https://evil.example', 'null', undefined]) {
      const refusal = await refused(
        openThroughBff(wsUrl(bff), { cookie: sessions.cookie, ...(origin === undefined ? {} : { origin }) }),
      );
      expect(refusal.status, String(origin)).toBe(403);
      expect(JSON.parse(refusal.body)).toMatchObject({ status: 403, code: 'Bff.OriginNotAllowed' });
    }
    const none = await refused(openThroughBff(wsUrl(bff), { origin: bff.url }));
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toMatchObject({ status: 401, code: 'Bff.SessionMissing' });
    const stale = await refused(openThroughBff(wsUrl(bff), { origin: bff.url, cookie: 'idt_bff=gone' }));
    expect(stale.status).toBe(401);
    expect(stale.headers['set-cookie']).toEqual(CLEARING_COOKIES);
    expect(hub.upgrades).toHaveLength(0);

    const other = await refused(openThroughBff(`${bff.url.replace(/^http/, 'ws')}/api/elsewhere`, browser()));
    expect(other.status).toBe(404);

    const listed = await opened(openThroughBff(wsUrl(bff), { cookie: sessions.cookie, origin: 'https://app.example' }));
    listed.ws.close();
  });

  it('refuses a malformed upgrade with 400 without dialling the hub', async () => {
    const response = await rawRequest(bff.url, '/api/hubs/realtime', {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'not-a-key',
        ...browser(),
      },
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'Http.ClientError' });
    expect(hub.upgrades).toHaveLength(0);
  });

  it('refuses with 500 and reports it when the session layer fails', async () => {
    const errors: unknown[] = [];
    const broken = fakeSessions('t', async () => 't');
    broken.current = async () => {
      throw new Error('session store down');
    };
    const failing = await startBff({ apiBaseUrl: hub.url, sessions: broken, hub: { onError: (error) => errors.push(error) } });
    try {
      const refusal = await refused(openThroughBff(wsUrl(failing), { cookie: broken.cookie, origin: failing.url }));
      expect(refusal.status).toBe(500);
      expect(JSON.parse(refusal.body)).toMatchObject({ status: 500, code: 'Server.Error' });
      expect(refusal.body).not.toContain('session store down');
      expect(errors).toEqual([new Error('session store down')]);
    } finally {
      await failing.close();
    }
  });

  it('forces one refresh and retries once when the hub refuses the token', async () => {
    const stale = sessions.session?.accessToken;
    hub.refuse = (headers) => (headers.authorization === `Bearer ${stale}` ? 401 : undefined);
    const refreshes = sessions.refreshes;
    const socket = await opened(openThroughBff(wsUrl(bff, '?id=retry'), browser()));
    expect(sessions.refreshes).toBe(refreshes + 1);
    expect(hub.upgrades.map((upgrade) => upgrade.headers.authorization)).toEqual([
      `Bearer ${stale}`,
      `Bearer ${sessions.session?.accessToken}`,
    ]);
    socket.ws.close();

    hub.refuse = () => 401;
    const again = await refused(openThroughBff(wsUrl(bff), browser()));
    expect(again.status).toBe(401);
    expect(sessions.refreshes).toBe(refreshes + 2);
  });

  it('relays other hub refusals with their status and body', async () => {
    hub.refuse = () => 404;
    const refusal = await refused(openThroughBff(wsUrl(bff, '?id=unknown'), browser()));
    expect(refusal.status).toBe(404);
    expect(refusal.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(refusal.body)).toMatchObject({ code: 'Realtime.ConnectionNotFound' });
  });

  it('answers 503 when the hub is down and 504 when it does not answer the upgrade', async () => {
    const down = await startBff({ apiBaseUrl: `http://127.0.0.1:${await closedPort()}`, sessions });
    const slow = await startBff({ apiBaseUrl: hub.url, sessions, hub: { upstreamHandshakeTimeoutMs: 150 } });
    try {
      const unavailable = await refused(openThroughBff(wsUrl(down), { cookie: sessions.cookie, origin: down.url }));
      expect(unavailable.status).toBe(503);
      expect(JSON.parse(unavailable.body)).toMatchObject({ code: 'Bff.UpstreamUnavailable' });
      hub.refuse = () => 'hang';
      const timedOut = await refused(openThroughBff(wsUrl(slow), { cookie: sessions.cookie, origin: slow.url }));
      expect(timedOut.status).toBe(504);
      expect(JSON.parse(timedOut.body)).toMatchObject({ status: 504, code: 'Bff.UpstreamTimeout', title: 'Gateway Timeout' });
    } finally {
      await down.close();
      await slow.close();
    }
  });

  it('closes the connection with 1008 once the BFF session ends, not while the provider is unreachable', async () => {
    const local = fakeSessions('token-x', async () => 'token-y');
    const checking = await startBff({ apiBaseUrl: hub.url, sessions: local, hub: { sessionCheckIntervalMs: 30 } });
    try {
      local.providerDown = true;
      const unavailable = await refused(openThroughBff(wsUrl(checking), { cookie: local.cookie, origin: checking.url }));
      expect(unavailable.status).toBe(503);
      expect(JSON.parse(unavailable.body)).toMatchObject({ status: 503, code: 'Bff.UpstreamUnavailable' });
      expect(unavailable.headers['set-cookie']).toBeUndefined();
      local.providerDown = false;

      const socket = await opened(openThroughBff(wsUrl(checking), { cookie: local.cookie, origin: checking.url }));
      const upstream = hub.sockets.at(-1) as WebSocket;
      local.providerDown = true;
      const calls = local.calls;
      await until(() => local.calls >= calls + 3);
      expect(checking.hub.connectionCount()).toBe(1);
      local.providerDown = false;
      local.session = null;
      expect(await socket.closed).toEqual({ code: 1008, reason: 'The session ended.' });
      expect((await hub.closeOf(upstream)).code).toBe(1000);
      expect(checking.hub.connectionCount()).toBe(0);
    } finally {
      await checking.close();
    }
  });

  it('stops reading the hub while the browser does not read, and loses nothing', async () => {
    const socket = await opened(openThroughBff(wsUrl(bff), browser()));
    await until(() => hub.sockets.length === 1);
    const upstream = hub.sockets[0] as WebSocket;
    socket.ws.pause();
    const message = Buffer.alloc(64 * 1024, 0x61);
    const count = 512; // 32 MiB
    for (let i = 0; i < count; i++) upstream.send(message, { binary: false });
    // Time enough to move 32 MiB over loopback many times: the BFF holds about its high-water mark (plus the
    // socket buffers) and the rest stays queued at the hub.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(upstream.bufferedAmount).toBeGreaterThan(16 * 1024 * 1024);
    socket.ws.resume();
    await socket.next(count, 10_000);
    expect(socket.messages.every((received) => received.data.length === message.length && !received.isBinary)).toBe(true);
    socket.ws.close();
  });
});

describe('hub proxy in front of the identity server, with the stock SignalR client', () => {
  let server: TestServer;
  let admin: TestAdmin;
  let sessions: FakeSessions;
  let bff: TestBff;
  const open: signalR.HubConnection[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    admin = await bootstrapAdmin(server);
    sessions = fakeSessions(await admin.token(), () => admin.token());
    bff = await startBff({ apiBaseUrl: server.url, sessions });
  });
  afterAll(async () => {
    await Promise.all(open.map((connection) => connection.stop().catch(() => undefined)));
    await bff?.close();
    await server?.close();
  });

  function stockClient(target: FakeSessions) {
    const connection = new signalR.HubConnectionBuilder()
      .withUrl(`${bff.url}/api/hubs/realtime`, {
        transport: signalR.HttpTransportType.WebSockets,
        skipNegotiation: false,
        // In a browser the cookie and Origin come by themselves; the page adds the CSRF header for negotiate.
        headers: { cookie: target.cookie, origin: bff.url, 'x-csrf-token': target.session?.csrfToken ?? '' },
      })
      .withAutomaticReconnect([0, 100, 200])
      .configureLogging(signalR.LogLevel.None)
      .build();
    open.push(connection);
    return connection;
  }

  async function postNotification(title: string) {
    const response = await server.fetch('/v1/notifications', {
      method: 'POST',
      headers: bearer(await admin.token()),
      body: JSON.stringify({ userId: admin.userId, type: 'SystemNotification', title, message: 'x' }),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: string }).id;
  }

  it('delivers ReceiveNotification through the BFF within a second', async () => {
    const connection = stockClient(sessions);
    await connection.start();
    expect(connection.state).toBe(signalR.HubConnectionState.Connected);
    const arriving = new Promise<Record<string, any>>((resolve) =>
      connection.on('ReceiveNotification', (envelope: Record<string, any>) => resolve(envelope)),
    );
    const started = performance.now();
    const id = await postNotification('Via the BFF');
    const envelope = await arriving;
    expect(performance.now() - started).toBeLessThan(1000);
    expect(envelope).toMatchObject({
      type: 'NotificationCreated',
      module: 'Notifications',
      payload: { id, title: 'Via the BFF' },
    });
    await connection.stop();
  });

  it('refuses a foreign Origin and a missing session at the upgrade', async () => {
    const foreign = await refused(openThroughBff(wsUrl(bff), { cookie: sessions.cookie, origin: 'https://evil.example' }));
    expect(foreign.status).toBe(403);
    const anonymous = await refused(openThroughBff(wsUrl(bff), { origin: bff.url }));
    expect(anonymous.status).toBe(401);
  });

  it('refreshes a token the hub refuses at the upgrade and connects with the same connection token', async () => {
    const negotiate = await fetch(`${bff.url}/api/hubs/realtime/negotiate?negotiateVersion=1`, {
      method: 'POST',
      headers: { cookie: sessions.cookie, 'x-csrf-token': sessions.session?.csrfToken ?? '' },
    });
    const { connectionToken } = (await negotiate.json()) as { connectionToken: string };
    sessions.session = {
      ...(sessions.session as NonNullable<FakeSessions['session']>),
      accessToken: await mintAccessToken(server, { sub: admin.userId, org_id: admin.organizationId }, { expiresIn: -3600 }),
    };
    const refreshes = sessions.refreshes;
    const socket = await opened(
      openThroughBff(wsUrl(bff, `?id=${encodeURIComponent(connectionToken)}`), { cookie: sessions.cookie, origin: bff.url }),
    );
    expect(sessions.refreshes).toBe(refreshes + 1);
    socket.ws.send(`{"protocol":"json","version":1}${RS}`);
    const [answer] = await socket.next(1);
    expect(answer?.data.toString()).toBe(`{}${RS}`);
    socket.ws.close();
    await socket.closed;
  });

  it('closes the browser side when the hub closes the connection', async () => {
    const user = await seedUser(server.database.db);
    await seedMembership(server.database.db, { userId: user.id, organizationId: admin.organizationId, roles: ['user'] });
    const mint = () => mintAccessToken(server, { sub: user.id, org_id: admin.organizationId });
    const member = fakeSessions(await mint(), mint);
    const memberBff = await startBff({ apiBaseUrl: server.url, sessions: member });
    try {
      const raw = await opened(openThroughBff(wsUrl(memberBff), { cookie: member.cookie, origin: memberBff.url }));
      raw.ws.send(`{"protocol":"json","version":1}${RS}`);
      await raw.next(1);
      const response = await server.fetch(`/v1/identity/users/${user.id}/deactivate`, {
        method: 'POST',
        headers: bearer(await admin.token()),
      });
      expect(response.status).toBeLessThan(300);
      const closed = await raw.closed;
      expect(closed.code).toBe(1008);
      const last = raw.messages.at(-1)?.data.toString() ?? '';
      const close = JSON.parse(last.split(RS)[0] ?? '{}');
      expect(close).toMatchObject({ type: 7, error: expect.stringMatching(/deactivated/) });
      expect(close).not.toHaveProperty('allowReconnect');
      await until(() => memberBff.hub.connectionCount() === 0);
    } finally {
      await memberBff.close();
    }
  });
});
