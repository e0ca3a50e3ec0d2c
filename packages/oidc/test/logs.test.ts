import { createManualClock, createStdoutLogSink, type ManualClock } from '@idt/core';
import { bootstrapAdmin, startTestServer, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const event = (overrides: Record<string, unknown> = {}) => ({
  ts: '2026-03-01T11:59:58.500Z',
  level: 'info',
  event: 'signin.page-viewed',
  attrs: { step: 'password' },
  ...overrides,
});

describe.each(testDialects())('POST /logs on the sign-in host on %s', (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  const lines: string[] = [];
  const sink = createStdoutLogSink({ write: (chunk) => lines.push(...chunk.trimEnd().split('\n')) });

  beforeAll(async () => {
    clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
    server = await startTestServer({ dialect, clock, modules: { oidc: { logs: { sink } } } });
    // The setup gate answers 503 to everything outside its allowlist until the first administrator exists.
    await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Posts a body to /logs from the sign-in host's own origin unless told otherwise. */
  const send = (body: unknown, init: { headers?: Record<string, string>; method?: string } = {}) =>
    server.fetch('/logs', {
      method: init.method ?? 'POST',
      headers: { origin: server.origin, 'content-type': 'application/json', ...init.headers },
      ...(init.method === 'GET' ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });

  /** Starts a new rate-limit window for the test's requests (every request here comes from 127.0.0.1). */
  const nextWindow = () => clock.advance(60_000);

  it('answers 405 with Allow: POST to another method', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const response = await send({ events: [event()] }, { method });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      await response.body?.cancel();
    }
  });

  it('answers 403 to another origin or none', async () => {
    nextWindow();
    for (const origin of ['https://evil.example', server.origin.replace('127.0.0.1', 'localhost')]) {
      const response = await send({ events: [event()] }, { headers: { origin } });
      expect(response.status, origin).toBe(403);
      expect(await response.json()).toEqual({ reason: 'origin not allowed' });
    }
    const bare = await fetch(`${server.url}/logs`, { method: 'POST', body: JSON.stringify({ events: [event()] }) });
    expect(bare.status).toBe(403);
    await bare.body?.cancel();
  });

  it('allows 60 requests a minute per peer address: the 61st is 429 until the window ends', async () => {
    nextWindow();
    // Neither a wrong method nor a foreign origin counts.
    await (await send({}, { method: 'GET' })).body?.cancel();
    await (await send({}, { headers: { origin: 'https://evil.example' } })).body?.cancel();
    for (let i = 0; i < 60; i++) {
      const response = await send({ events: [event()] }, { headers: { 'x-forwarded-for': `198.51.100.${i}` } });
      expect(response.status, `request ${i + 1}`).toBe(204);
    }
    const refused = await send({ events: [event()] });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(await refused.json()).toEqual({ reason: 'too many requests' });
    clock.advance(59_999);
    const still = await send({ events: [event()] });
    expect(still.status).toBe(429);
    expect(still.headers.get('retry-after')).toBe('1');
    await still.body?.cancel();
    clock.advance(1);
    expect((await send({ events: [event()] })).status).toBe(204);
  });

  it('refuses a body over 65,536 bytes with 413 and takes one of exactly 65,536', async () => {
    nextWindow();
    const padded = (size: number) => {
      const bare = JSON.stringify({ events: [event({ attrs: { pad: '' } })] });
      return JSON.stringify({ events: [event({ attrs: { pad: 'p'.repeat(size - bare.length) } })] });
    };
    const over = await send(padded(65_537));
    expect(over.status).toBe(413);
    expect(await over.json()).toEqual({ reason: 'body is too large' });
    expect((await send(padded(65_536))).status).toBe(204);
  });

  it('refuses a malformed batch whole with 400 and its reason', async () => {
    const cases: Array<[unknown, string]> = [
      ['{"events":', 'body is not valid JSON'],
      [[1], 'body is not an object'],
      [{ entries: [] }, 'body has no events array'],
      [{ events: [] }, 'batch is empty'],
      [{ events: Array.from({ length: 101 }, () => event()) }, 'batch holds too many events'],
      [{ events: [event(), null] }, 'event is not an object'],
      [{ events: [event({ level: 'trace' })] }, 'event has no valid level'],
      [{ events: [event({ event: 'Sign In' })] }, 'event name is not a dotted low-cardinality name'],
      [{ events: [event({ event: `a${'b'.repeat(120)}` })] }, 'event name is not a dotted low-cardinality name'],
      [{ events: [event({ ts: 'soon' })] }, 'event has no valid ts'],
      [{ events: [event({ attrs: ['x'] })] }, 'event attrs is not an object'],
      [
        { events: [event({ attrs: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`a${i}`, i])) })] },
        'event carries too many attributes',
      ],
      [{ events: [event({ error: true })] }, 'event error is not an object or a string'],
      [{ events: [event()], csrfToken: {} }, 'csrfToken is not a string'],
    ];
    nextWindow();
    await sink.flush();
    const before = lines.length;
    for (const [body, reason] of cases) {
      const response = await send(body);
      expect(response.status, reason).toBe(400);
      expect(((await response.json()) as { reason: string }).reason).toBe(reason);
    }
    await sink.flush();
    expect(lines.length).toBe(before);
  });

  it('answers 204 to a good batch and writes the events, enriched by the server, as JSON lines', async () => {
    nextWindow();
    await sink.flush();
    lines.length = 0;
    const response = await send(
      {
        events: [
          event({
            attrs: { step: 'password', password: 'hunter2', form: { email: 'a@example.com' } },
            service: 'forged',
            userId: 'forged',
          }),
          event({
            level: 'error',
            event: 'signin.failed',
            correlationId: 'page-corr-1',
            error: { name: 'Error', message: 'boom' },
          }),
        ],
      },
      { headers: { 'x-request-id': 'req-logs-1' } },
    );
    expect(response.status).toBe(204);
    expect(response.headers.get('x-request-id')).toBe('req-logs-1');
    expect(await response.text()).toBe('');
    await sink.flush();
    const written = lines.map((line) => JSON.parse(line));
    expect(written).toEqual([
      {
        ts: clock.now().toISOString(),
        clientTs: '2026-03-01T11:59:58.500Z',
        level: 'info',
        event: 'signin.page-viewed',
        attrs: { step: 'password', password: '[redacted]', form: { email: '[redacted]' } },
        service: 'idt-signin',
        clientIp: '127.0.0.1',
        userId: null,
        tenantId: null,
        correlationId: 'req-logs-1',
      },
      {
        ts: clock.now().toISOString(),
        clientTs: '2026-03-01T11:59:58.500Z',
        level: 'error',
        event: 'signin.failed',
        attrs: { step: 'password' },
        service: 'idt-signin',
        clientIp: '127.0.0.1',
        userId: null,
        tenantId: null,
        correlationId: 'page-corr-1',
        error: { name: 'Error', message: 'boom' },
      },
    ]);
  });

  it('takes a sendBeacon-style text/plain body under the deployment path, and stays out of the API document', async () => {
    nextWindow();
    const beacon = await send(JSON.stringify({ events: [event()] }), { headers: { 'content-type': 'text/plain;charset=UTF-8' } });
    expect(beacon.status).toBe(204);
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).not.toContain('/logs');
  });
});
