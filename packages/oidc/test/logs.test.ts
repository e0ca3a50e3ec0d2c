import { createManualClock, createStdoutLogSink, type ManualClock } from '@idt/core';
import { bootstrapAdmin, createTestIdt, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** Asserts a refusal: a problem document of this status and code, not cached, with SPEC-NOTES' `reason`; answers it. */
async function refusalOf(response: Response, status: number, code: string): Promise<Record<string, unknown>> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ type: 'about:blank', status, code, reason: expect.any(String) });
  expect(body.traceId).toMatch(/^[0-9a-f]{32}$/);
  return body;
}

const event = (overrides: Record<string, unknown> = {}) => ({
  ts: '2026-03-01T11:59:58.500Z',
  level: 'info',
  event: 'signin.page-viewed',
  attrs: { step: 'password' },
  ...overrides,
});

describe.each(testDialects())('POST /logs on the sign-in host on %s', (dialect) => {
  let server: TestIdt;
  let clock: ManualClock;
  const lines: string[] = [];
  const sink = createStdoutLogSink({ write: (chunk) => lines.push(...chunk.trimEnd().split('\n')) });

  beforeAll(async () => {
    clock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
    server = await createTestIdt({ dialect, clock, moduleOptions: { oidc: { logs: { sink } } } });
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

  it('answers 405 Http.MethodNotAllowed with Allow: POST and its reason to another method', async () => {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const response = await send({ events: [event()] }, { method });
      expect(response.headers.get('allow'), method).toBe('POST');
      expect(await refusalOf(response, 405, 'Http.MethodNotAllowed'), method).toMatchObject({ reason: 'method not allowed' });
    }
    const head = await server.fetch('/logs', { method: 'HEAD', headers: { origin: server.origin } });
    expect([head.status, head.headers.get('allow'), head.headers.get('content-type')]).toEqual([
      405,
      'POST',
      'application/problem+json',
    ]);
    // Methods no idt route declares are the ingest's too: a CORS preflight gets the same answer.
    const preflight = await server.fetch('/logs', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('allow')).toBe('POST');
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(await refusalOf(preflight, 405, 'Http.MethodNotAllowed')).toMatchObject({ reason: 'method not allowed' });
  });

  it('carries the request’s trace id and echoes its request id on a refusal', async () => {
    const response = await send(
      {},
      {
        method: 'GET',
        headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'x-request-id': 'req-refused-1' },
      },
    );
    expect(response.headers.get('x-request-id')).toBe('req-refused-1');
    expect((await refusalOf(response, 405, 'Http.MethodNotAllowed')).traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('answers 403 Logs.OriginNotAllowed to another origin or none', async () => {
    nextWindow();
    for (const origin of ['https://evil.example', server.origin.replace('//', '//www.')]) {
      const response = await send({ events: [event()] }, { headers: { origin } });
      expect(await refusalOf(response, 403, 'Logs.OriginNotAllowed'), origin).toMatchObject({ reason: 'origin not allowed' });
    }
    const bare = await server.send(`${server.url}/logs`, { method: 'POST', body: JSON.stringify({ events: [event()] }) });
    expect(await refusalOf(bare, 403, 'Logs.OriginNotAllowed')).toMatchObject({ reason: 'origin not allowed' });
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
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(await refusalOf(refused, 429, 'RateLimit.Exceeded')).toMatchObject({ reason: 'too many requests' });
    clock.advance(59_999);
    const still = await send({ events: [event()] });
    expect(still.headers.get('retry-after')).toBe('1');
    expect(await refusalOf(still, 429, 'RateLimit.Exceeded')).toMatchObject({ reason: 'too many requests' });
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
    expect(await refusalOf(over, 413, 'Http.ClientError')).toMatchObject({ reason: 'body is too large' });
    expect((await send(padded(65_536))).status).toBe(204);
  });

  it('refuses a malformed batch whole with 400, its reason and the index of a bad event', async () => {
    const cases: Array<[unknown, string, string, number?]> = [
      ['{"events":', 'Http.ClientError', 'body is not valid JSON'],
      [[1], 'Validation.Failed', 'body is not an object'],
      [{ entries: [] }, 'Validation.Failed', 'body has no events array'],
      [{ events: [] }, 'Validation.Failed', 'batch is empty'],
      [{ events: Array.from({ length: 101 }, () => event()) }, 'Validation.Failed', 'batch holds too many events'],
      [{ events: [event(), null] }, 'Validation.Failed', 'event is not an object', 1],
      [{ events: [event({ level: 'trace' })] }, 'Validation.Failed', 'event has no valid level', 0],
      [{ events: [event({ event: 'Sign In' })] }, 'Validation.Failed', 'event name is not a dotted low-cardinality name', 0],
      [
        { events: [event(), event({ event: `a${'b'.repeat(120)}` })] },
        'Validation.Failed',
        'event name is not a dotted low-cardinality name',
        1,
      ],
      [{ events: [event({ ts: 'soon' })] }, 'Validation.Failed', 'event has no valid ts', 0],
      [{ events: [event({ attrs: ['x'] })] }, 'Validation.Failed', 'event attrs is not an object', 0],
      [
        { events: [event({ attrs: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`a${i}`, i])) })] },
        'Validation.Failed',
        'event carries too many attributes',
        0,
      ],
      [{ events: [event({ error: true })] }, 'Validation.Failed', 'event error is not an object or a string', 0],
      [{ events: [event()], csrfToken: {} }, 'Validation.Failed', 'csrfToken is not a string'],
    ];
    nextWindow();
    await sink.flush();
    const before = lines.length;
    for (const [body, code, reason, index] of cases) {
      const refused = await refusalOf(await send(body), 400, code);
      expect(refused.reason, reason).toBe(reason);
      expect(refused.index, reason).toBe(index);
    }
    const bad = await refusalOf(await send({ events: [event(), event({ level: 'trace' })] }), 400, 'Validation.Failed');
    expect(bad).toMatchObject({
      errors: { 'events[1].level': ['event has no valid level'] },
      reason: 'event has no valid level',
      index: 1,
    });
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
