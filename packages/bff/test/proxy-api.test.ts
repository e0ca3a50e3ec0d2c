import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { bootstrapAdmin, mintAccessToken, startTestServer, type TestAdmin, type TestServer } from '@idt/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createApiProxy } from '../src/proxy/api.js';
import {
  CLEARING_COOKIES,
  closedPort,
  type EchoServer,
  type FakeSessions,
  fakeSessions,
  rawRequest,
  startBff,
  startEcho,
  type TestBff,
} from './proxy-support.js';

const PROBLEM = 'application/problem+json';

async function problemOf(response: Response) {
  expect(response.headers.get('content-type')).toBe(PROBLEM);
  expect(response.headers.get('cache-control')).toBe('no-store');
  return (await response.json()) as { status: number; code: string; title: string; detail: string; traceId: string };
}

describe('API proxy against a recording upstream', () => {
  let echo: EchoServer;
  let sessions: FakeSessions;
  let bff: TestBff;
  let minted = 0;
  let defaultRespond: EchoServer['respond'];

  beforeAll(async () => {
    echo = await startEcho();
    defaultRespond = echo.respond;
    sessions = fakeSessions('token-0', async () => `token-${++minted}`);
    bff = await startBff({ apiBaseUrl: `${echo.url}/base`, sessions });
  });
  afterEach(() => {
    echo.received.length = 0;
    echo.respond = defaultRespond;
    sessions.setCookie = [];
  });
  afterAll(async () => {
    await bff?.close();
    await echo?.close();
  });

  const csrf = () => sessions.session?.csrfToken ?? '';
  const call = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
    fetch(`${bff.url}${path}`, { ...init, headers: { cookie: sessions.cookie, ...init.headers } });

  it('forwards only allow-listed headers, with the session bearer instead of the browser credentials', async () => {
    sessions.setCookie = ['idt_bff=resealed; Path=/; HttpOnly; Secure; SameSite=Strict'];
    const response = await call('/api/v1/things?x=1&y=%20z', {
      headers: {
        cookie: `${sessions.cookie}; theme=dark`,
        authorization: 'Bearer from-the-browser',
        accept: 'application/json',
        'accept-language': 'de-CH',
        'if-none-match': '"v1"',
        'x-custom': 'not forwarded',
        'x-forwarded-for': '6.6.6.6',
        'x-csrf-token': csrf(),
        'x-request-id': 'req-123',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
    });
    expect(response.status).toBe(200);
    const [seen] = echo.received;
    expect(seen?.url).toBe('/base/v1/things?x=1&y=%20z');
    const headers = seen?.headers ?? {};
    expect(headers.authorization).toBe(`Bearer ${sessions.session?.accessToken}`);
    expect(headers.cookie).toBeUndefined();
    expect(headers['x-custom']).toBeUndefined();
    expect(headers['x-csrf-token']).toBeUndefined();
    expect(headers.accept).toBe('application/json');
    expect(headers['accept-language']).toBe('de-CH');
    expect(headers['if-none-match']).toBe('"v1"');
    expect(headers['x-request-id']).toBe('req-123');
    expect(headers.traceparent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(headers['x-forwarded-for']).toBe('127.0.0.1'); // the browser's own list is not trusted by default
    expect(headers['accept-encoding']).toBe('identity');

    // Response: no upstream cookies, no hop-by-hop headers, no-store added, the session's cookie appended.
    expect(response.headers.getSetCookie()).toEqual(sessions.setCookie);
    expect(response.headers.get('x-hop')).toBeNull();
    expect(response.headers.get('keep-alive') ?? '').not.toContain('99'); // the host's own keep-alive only
    expect(response.headers.get('x-upstream')).toBe('kept');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-request-id')).toBe('req-123');
  });

  it('mints a request id when the browser sends none, and keeps the API cache policy', async () => {
    echo.respond = (_received, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'private, max-age=60' });
      res.end('ok');
    };
    const response = await call('/api/v1/cached');
    expect(await response.text()).toBe('ok');
    expect(response.headers.get('cache-control')).toBe('private, max-age=60');
    expect(echo.received[0]?.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('x-request-id')).toBe(echo.received[0]?.headers['x-request-id']);
  });

  it('answers X-Forwarded-For with the peer address alone, or appended behind a trusted proxy', async () => {
    for (const [trustProxy, expected] of [
      [false, '10.0.0.9'],
      [true, '203.0.113.7, 10.0.0.9'],
    ] as const) {
      const api = createApiProxy({ apiBaseUrl: echo.url, sessions, trustProxy });
      const response = await api(
        new Request('http://bff.test/api/v1/ip', { headers: { cookie: sessions.cookie, 'x-forwarded-for': '203.0.113.7' } }),
        { remoteAddress: '::ffff:10.0.0.9' },
      );
      expect(response.status).toBe(200);
      expect(echo.received.at(-1)?.headers['x-forwarded-for']).toBe(expected);
    }
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE'])('%s needs the session CSRF token', async (method) => {
    for (const token of [undefined, 'wrong-token']) {
      const response = await call('/api/v1/things', {
        method,
        headers: { 'content-type': 'application/json', ...(token ? { 'x-csrf-token': token } : {}) },
        body: '{"a":1}',
      });
      expect(response.status).toBe(403);
      expect(await problemOf(response)).toMatchObject({ status: 403, code: 'Bff.CsrfInvalid', title: 'Forbidden' });
    }
    expect(echo.received).toHaveLength(0);
    const response = await call('/api/v1/things', {
      method,
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf() },
      body: '{"a":1}',
    });
    expect(response.status).toBe(200);
    expect(echo.received).toMatchObject([{ method, body: '{"a":1}', headers: { 'content-type': 'application/json' } }]);
  });

  it('lets GET, HEAD and OPTIONS through without a CSRF token', async () => {
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      const response = await call('/api/v1/things', { method });
      expect(response.status, method).toBe(200);
      await response.arrayBuffer();
    }
    expect(echo.received.map((entry) => entry.method)).toEqual(['GET', 'HEAD', 'OPTIONS']);
  });

  it('answers 401 Bff.SessionMissing without a session, clearing a stale cookie', async () => {
    const none = await fetch(`${bff.url}/api/v1/things`);
    expect(none.status).toBe(401);
    expect(await problemOf(none)).toMatchObject({ status: 401, code: 'Bff.SessionMissing', title: 'Unauthorized' });
    expect(none.headers.getSetCookie()).toEqual([]);

    const stale = await fetch(`${bff.url}/api/v1/things`, { method: 'POST', headers: { cookie: 'idt_bff=gone' } });
    expect(stale.status).toBe(401);
    expect((await problemOf(stale)).code).toBe('Bff.SessionMissing');
    expect(stale.headers.getSetCookie()).toEqual(CLEARING_COOKIES);
    expect(echo.received).toHaveLength(0);
  });

  it('refreshes once and replays once (body included) when the API answers 401', async () => {
    const refreshes = sessions.refreshes;
    const first = sessions.session?.accessToken;
    echo.respond = (received, res) => {
      const ok = received.headers.authorization !== `Bearer ${first}`;
      res.writeHead(ok ? 201 : 401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' });
      res.end(JSON.stringify({ ok }));
    };
    const response = await call('/api/v1/things', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf() },
      body: '{"replay":true}',
    });
    expect(response.status).toBe(201);
    expect(sessions.refreshes).toBe(refreshes + 1);
    expect(echo.received.map((entry) => [entry.headers.authorization, entry.body])).toEqual([
      [`Bearer ${first}`, '{"replay":true}'],
      [`Bearer ${sessions.session?.accessToken}`, '{"replay":true}'],
    ]);
  });

  it('passes a second 401 on after the one replay', async () => {
    const refreshes = sessions.refreshes;
    echo.respond = (_received, res) => {
      res.writeHead(401, { 'content-type': PROBLEM });
      res.end(JSON.stringify({ status: 401, code: 'Auth.Unauthenticated' }));
    };
    const response = await call('/api/v1/things');
    expect(response.status).toBe(401);
    expect(((await response.json()) as { code: string }).code).toBe('Auth.Unauthenticated');
    expect(sessions.refreshes).toBe(refreshes + 1);
    expect(echo.received).toHaveLength(2);
  });

  it('answers 401 Bff.SessionRefreshFailed and clears the cookies when the refresh is refused', async () => {
    const local = fakeSessions('stale', async () => 'never');
    local.failRefresh = true;
    const api = createApiProxy({ apiBaseUrl: echo.url, sessions: local });
    echo.respond = (_received, res) => {
      res.writeHead(401);
      res.end();
    };
    const response = await api(new Request('http://bff.test/api/v1/me', { headers: { cookie: local.cookie } }));
    expect(response.status).toBe(401);
    expect(await problemOf(response)).toMatchObject({ code: 'Bff.SessionRefreshFailed' });
    expect(response.headers.getSetCookie()).toEqual(CLEARING_COOKIES);
    expect(local.refreshes).toBe(1);
    expect(echo.received).toHaveLength(1); // no replay without a session

    const after = await api(new Request('http://bff.test/api/v1/me', { headers: { cookie: local.cookie } }));
    expect((await problemOf(after)).code).toBe('Bff.SessionMissing');
  });

  it('answers 503 and keeps the cookies when a due refresh cannot reach the provider', async () => {
    sessions.providerDown = true;
    try {
      const response = await call('/api/v1/things');
      expect(response.status).toBe(503);
      expect(await problemOf(response)).toMatchObject({ status: 503, code: 'Bff.UpstreamUnavailable' });
      expect(response.headers.getSetCookie()).toEqual([]);
      expect(echo.received).toHaveLength(0);
    } finally {
      sessions.providerDown = false;
    }
  });

  it('refuses paths that could leave the API base with 400, before any upstream call', async () => {
    for (const path of [
      '/api/v1/..%2f..%2fadmin',
      '/api/v1/%2e%2e%5cadmin',
      '/api/v1/%252e%252e/admin',
      '/api/v1/..;/admin',
      '/api/v1/%5c%5cevil',
      '/api/v1/a%00b',
    ]) {
      const response = await rawRequest(bff.url, path, { headers: { cookie: sessions.cookie } });
      expect(response.status, path).toBe(400);
      expect(JSON.parse(response.body)).toMatchObject({ code: 'Http.ClientError', status: 400 });
    }
    // Plain dot segments are resolved by URL parsing before the proxy sees them: they never climb above /api.
    for (const path of ['/api/../admin', '/api/%2e%2e/admin', '/api/v1/../../admin']) {
      const response = await rawRequest(bff.url, path, { headers: { cookie: sessions.cookie } });
      expect(response.status, path).toBe(404);
    }
    expect(echo.received).toHaveLength(0);
  });

  it('answers 413 for a body over the cap, declared or streamed', async () => {
    const small = await startBff({ apiBaseUrl: echo.url, sessions, maxBodyBytes: 1024 });
    try {
      const declared = await fetch(`${small.url}/api/v1/upload`, {
        method: 'POST',
        headers: { cookie: sessions.cookie, 'x-csrf-token': csrf() },
        body: 'x'.repeat(2048),
      });
      expect(declared.status).toBe(413);
      expect(await problemOf(declared)).toMatchObject({ status: 413, code: 'Http.ClientError', title: 'Content Too Large' });
      const streamed = await fetch(`${small.url}/api/v1/upload`, {
        method: 'POST',
        headers: { cookie: sessions.cookie, 'x-csrf-token': csrf() },
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < 4; i++) controller.enqueue(new Uint8Array(512));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(streamed.status).toBe(413);
      const fits = await fetch(`${small.url}/api/v1/upload`, {
        method: 'POST',
        headers: { cookie: sessions.cookie, 'x-csrf-token': csrf() },
        body: 'x'.repeat(1024),
      });
      expect(fits.status).toBe(200);
      expect(echo.received).toHaveLength(1);
    } finally {
      await small.close();
    }
  });

  it('answers 503 Bff.UpstreamUnavailable when the API is down', async () => {
    const down = await startBff({ apiBaseUrl: `http://127.0.0.1:${await closedPort()}`, sessions });
    try {
      const response = await fetch(`${down.url}/api/v1/things`, { headers: { cookie: sessions.cookie } });
      expect(response.status).toBe(503);
      const problem = await problemOf(response);
      expect(problem).toMatchObject({ status: 503, code: 'Bff.UpstreamUnavailable', title: 'Service Unavailable' });
      expect(problem.detail).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
    } finally {
      await down.close();
    }
  });

  it('answers 504 Bff.UpstreamTimeout when the API does not answer in time', async () => {
    const slow = await startBff({ apiBaseUrl: echo.url, sessions, timeoutMs: 150 });
    echo.respond = () => undefined; // never answers
    try {
      const started = performance.now();
      const response = await fetch(`${slow.url}/api/v1/slow`, { headers: { cookie: sessions.cookie } });
      expect(response.status).toBe(504);
      expect(await problemOf(response)).toMatchObject({ status: 504, code: 'Bff.UpstreamTimeout', title: 'Gateway Timeout' });
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      await slow.close();
    }
  });

  it('streams a large response through without buffering it', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const total = 32;
    let releaseRest!: () => void;
    const firstSeen = new Promise<void>((resolve) => {
      releaseRest = resolve;
    });
    const upstreamHash = createHash('sha256');
    echo.respond = async (_received, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(chunk);
      upstreamHash.update(chunk);
      await firstSeen; // the rest only once the browser has bytes: a buffering proxy would hang here
      for (let i = 1; i < total; i++) {
        const piece = Buffer.alloc(chunk.length, i);
        upstreamHash.update(piece);
        if (!res.write(piece)) await new Promise((resolve) => res.once('drain', resolve));
      }
      res.end();
    };
    const response = await call('/api/v1/download');
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const hash = createHash('sha256');
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size === 0) releaseRest();
      size += value.byteLength;
      hash.update(value);
    }
    expect(size).toBe(total * chunk.length);
    expect(hash.digest('hex')).toBe(upstreamHash.digest('hex'));
  });

  it('hands over a body the API compressed, decoded and without its encoding headers', async () => {
    const body = JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => ({ i })) });
    echo.respond = (_received, res) => {
      const gz = gzipSync(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': gz.length });
      res.end(gz);
    };
    const response = await call('/api/v1/big');
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(await response.text()).toBe(body);
  });

  it('rewrites redirects into the API onto /api and passes 204 through', async () => {
    echo.respond = (received, res) => {
      if (received.url.startsWith('/base/v1/empty')) {
        res.writeHead(204);
        res.end();
        return;
      }
      const location = received.url.includes('away') ? 'https://elsewhere.example/x' : `${echo.url}/base/v1/next?a=1`;
      res.writeHead(302, { location });
      res.end();
    };
    const inside = await call('/api/v1/moved', { redirect: 'manual' });
    expect(inside.status).toBe(302);
    expect(inside.headers.get('location')).toBe('/api/v1/next?a=1');
    const away = await call('/api/v1/away', { redirect: 'manual' });
    expect(away.headers.get('location')).toBe('https://elsewhere.example/x');
    const empty = await call('/api/v1/empty', { method: 'DELETE', headers: { 'x-csrf-token': csrf() } });
    expect(empty.status).toBe(204);
  });

  it('strips redirect members and a browser access_token from the hub negotiate', async () => {
    echo.respond = (_received, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          connectionId: 'c1',
          connectionToken: 't1',
          negotiateVersion: 1,
          availableTransports: [],
          url: 'https://signalr.example/client',
          accessToken: 'leaked',
        }),
      );
    };
    const response = await call('/api/hubs/realtime/negotiate?negotiateVersion=1&access_token=from-browser', {
      method: 'POST',
      headers: { 'x-csrf-token': csrf() },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      connectionId: 'c1',
      connectionToken: 't1',
      negotiateVersion: 1,
      availableTransports: [],
    });
    expect(echo.received[0]?.url).toBe('/base/hubs/realtime/negotiate?negotiateVersion=1');
  });
});

describe('API proxy in front of the identity server', () => {
  let server: TestServer;
  let admin: TestAdmin;
  let sessions: FakeSessions;
  let bff: TestBff;

  beforeAll(async () => {
    server = await startTestServer();
    admin = await bootstrapAdmin(server);
    sessions = fakeSessions(await admin.token(), () => admin.token());
    bff = await startBff({ apiBaseUrl: server.url, sessions });
  });
  afterAll(async () => {
    await bff?.close();
    await server?.close();
  });

  const headers = () => ({ cookie: sessions.cookie, 'x-csrf-token': sessions.session?.csrfToken ?? '' });

  it('reads the API as the session user', async () => {
    const response = await fetch(`${bff.url}/api/v1/notifications/unread-count`, { headers: headers() });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ count: expect.any(Number) });
    expect(response.headers.get('cache-control')).toBe('no-store');
  });

  it('replays a POST once with a refreshed token when the session token was refused', async () => {
    sessions.session = {
      ...(sessions.session as NonNullable<FakeSessions['session']>),
      accessToken: await mintAccessToken(server, { sub: admin.userId, org_id: admin.organizationId }, { expiresIn: -3600 }),
    };
    const refreshes = sessions.refreshes;
    const response = await fetch(`${bff.url}/api/v1/notifications`, {
      method: 'POST',
      headers: { ...headers(), 'content-type': 'application/json' },
      body: JSON.stringify({ userId: admin.userId, type: 'SystemNotification', title: 'Through the BFF', message: 'Hi' }),
    });
    expect(response.status, await response.clone().text()).toBe(201);
    expect(await response.json()).toEqual({ id: expect.any(String) });
    expect(sessions.refreshes).toBe(refreshes + 1);
    const list = await fetch(`${bff.url}/api/v1/notifications`, { headers: headers() });
    const page = (await list.json()) as { items: Array<{ title: string }> };
    expect(page.items.some((item) => item.title === 'Through the BFF')).toBe(true);
  });

  it('serves 20 parallel GETs', async () => {
    const refreshes = sessions.refreshes;
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${bff.url}/api/v1/notifications?page=1&pageSize=${i + 1}`, {
          headers: { ...headers(), 'x-request-id': `p-${i}` },
        }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200));
    expect(responses.map((response) => response.headers.get('x-request-id'))).toEqual(
      Array.from({ length: 20 }, (_, i) => `p-${i}`),
    );
    await Promise.all(responses.map((response) => response.arrayBuffer()));
    expect(sessions.refreshes).toBe(refreshes);
  });

  it('negotiates the hub through the proxy without handing out a token', async () => {
    const response = await fetch(`${bff.url}/api/hubs/realtime/negotiate?negotiateVersion=1`, {
      method: 'POST',
      headers: headers(),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ negotiateVersion: 1, connectionToken: expect.any(String) });
    expect(body).not.toHaveProperty('accessToken');
    expect(JSON.stringify(body)).not.toContain(sessions.session?.accessToken);
  });

  it('passes the API problem documents through', async () => {
    const response = await fetch(`${bff.url}/api/v1/notifications/00000000-0000-0000-0000-000000000000/read`, {
      method: 'POST',
      headers: headers(),
    });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toContain(PROBLEM);
    expect(((await response.json()) as { code: string }).code).toBe('Notifications.NotFound');
  });
});
