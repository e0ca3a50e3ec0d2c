import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registerProblemCodes } from '@idt/problem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createFixedWindowLimiter,
  createLogger,
  createLogIngestHandler,
  createManualClock,
  createOtlpLogSink,
  createStdoutLogSink,
  type IngestedLogEvent,
  LOG_BATCH_REASONS,
  LOG_INGEST_REASONS,
  type LogIngestOptions,
  type LogIngestProblem,
  type LogSink,
  logSinkFromEnv,
  type ManualClock,
} from '../src/index.js';

const ORIGIN = 'https://signin.example.com';
const URL_ = `${ORIGIN}/logs`;
const NOW = '2026-03-01T12:00:00.000Z';

/** A sink that keeps what it is handed. */
function memorySink(): LogSink & { events: IngestedLogEvent[] } {
  const events: IngestedLogEvent[] = [];
  return { events, write: (batch) => void events.push(...batch) };
}

const event = (overrides: Record<string, unknown> = {}) => ({
  ts: '2026-03-01T11:59:58.500Z',
  level: 'info',
  event: 'signin.page-viewed',
  attrs: { step: 'password' },
  ...overrides,
});

function post(body: unknown, init: { headers?: Record<string, string>; url?: string; method?: string } = {}): Request {
  const method = init.method ?? 'POST';
  return new Request(init.url ?? URL_, {
    method,
    headers: { origin: ORIGIN, 'content-type': 'application/json', ...init.headers },
    ...(method === 'GET' || method === 'HEAD' ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

function setup(options: Partial<LogIngestOptions> = {}) {
  const clock = createManualClock(NOW);
  const sink = memorySink();
  const ingest = createLogIngestHandler({ service: 'idt-signin', clock, sink, ...options });
  return { clock, sink, ingest };
}

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/**
 * Asserts that a refusal is a problem document (SPEC 7.1) of this status and
 * code, not cached, with SPEC-NOTES' `reason`; answers the document.
 */
async function refusalOf(response: Response, status: number, code: string): Promise<LogIngestProblem> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  expect(response.headers.get('cache-control')).toBe('no-store');
  const body = (await response.json()) as LogIngestProblem;
  expect(body).toMatchObject({ type: 'about:blank', status, code });
  expect(typeof body.title).toBe('string');
  expect(body.detail).toEqual(expect.any(String));
  expect(body.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(body.reason).toEqual(expect.any(String));
  return body;
}

/** The `reason` of a refusal, checked to be a problem document of this status and code. */
async function reasonOf(response: Response, status: number, code: string): Promise<string> {
  return (await refusalOf(response, status, code)).reason;
}

registerProblemCodes('log-ingest-test', {
  'Test.CsrfInvalid': { kind: 'Forbidden', description: 'The page did not send the CSRF token.' },
  'Test.Teapot': { kind: 'Validation', description: 'Not a 403.' },
});

describe('browser log ingest: guards in order', () => {
  it('answers 405 Http.MethodNotAllowed with Allow: POST to another method, before looking at the Origin', async () => {
    const { ingest } = setup();
    for (const method of ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const response = await ingest(post({}, { method, headers: { origin: 'https://evil.example' } }), { clientIp: '1.1.1.1' });
      expect(response.headers.get('allow'), method).toBe('POST');
      expect(await reasonOf(response, 405, 'Http.MethodNotAllowed'), method).toBe('method not allowed');
    }
  });

  it('renders every refusal as one problem document: the members of SPEC 7.1, then reason', async () => {
    const { ingest } = setup();
    const response = await ingest(post({}, { method: 'GET', headers: { traceparent: TRACEPARENT } }), { clientIp: 'a' });
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const body = (await response.json()) as LogIngestProblem;
    expect(body).toEqual({
      type: 'about:blank',
      title: 'Method Not Allowed',
      status: 405,
      detail: 'Use POST to send browser log events.',
      code: 'Http.MethodNotAllowed',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      reason: LOG_INGEST_REASONS.method,
    });
    expect(Object.keys(body)).toEqual(['type', 'title', 'status', 'detail', 'code', 'traceId', 'reason']);
    // The host's own trace id wins over the header; without either, each refusal gets a new one.
    const hosted = await ingest(post({}, { method: 'GET', headers: { traceparent: TRACEPARENT } }), {
      clientIp: 'a',
      traceId: '0af7651916cd43dd8448eb211c80319c',
    });
    expect((await refusalOf(hosted, 405, 'Http.MethodNotAllowed')).traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    const first = await refusalOf(await ingest(post({}, { method: 'GET' }), { clientIp: 'a' }), 405, 'Http.MethodNotAllowed');
    const second = await refusalOf(await ingest(post({}, { method: 'GET' }), { clientIp: 'a' }), 405, 'Http.MethodNotAllowed');
    expect(first.traceId).not.toBe(second.traceId);
  });

  it('answers 403 when the Origin is absent, "null" or another origin (scheme and port included)', async () => {
    const { ingest, sink } = setup();
    const origins = [undefined, 'null', 'https://evil.example', 'http://signin.example.com', 'https://signin.example.com:8443'];
    for (const origin of origins) {
      const request = new Request(URL_, { method: 'POST', body: JSON.stringify({ events: [event()] }) });
      if (origin) request.headers.set('origin', origin);
      const response = await ingest(request, { clientIp: '1.1.1.1' });
      expect(await reasonOf(response, 403, 'Logs.OriginNotAllowed'), String(origin)).toBe('origin not allowed');
    }
    expect(sink.events).toEqual([]);
  });

  it('honours x-forwarded-proto only when the proxy is trusted', async () => {
    const behindProxy = post(
      { events: [event()] },
      { url: 'http://signin.example.com/logs', headers: { 'x-forwarded-proto': 'https' } },
    );
    expect((await setup().ingest(behindProxy.clone(), { clientIp: '1.1.1.1' })).status).toBe(403);
    expect((await setup({ trustForwardedProto: true }).ingest(behindProxy, { clientIp: '1.1.1.1' })).status).toBe(204);
    // A fixed public origin wins over the request URL.
    const internal = post({ events: [event()] }, { url: 'http://10.0.0.5:3000/logs' });
    expect((await setup({ origin: `${ORIGIN}/` }).ingest(internal, { clientIp: '1.1.1.1' })).status).toBe(204);
  });

  it('allows 60 requests a minute per peer address, counts refusals, and starts a new window after a minute', async () => {
    const { ingest, clock } = setup();
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await ingest(post({ events: [event()] }), { clientIp: '10.0.0.1' })).status);
    expect(statuses.slice(0, 60).every((status) => status === 204)).toBe(true);
    expect(statuses[60]).toBe(429);
    clock.advance(30_000);
    const refused = await ingest(post({ events: [event()] }), { clientIp: '10.0.0.1' });
    expect(refused.headers.get('retry-after')).toBe('30');
    const limited = await refusalOf(refused, 429, 'RateLimit.Exceeded');
    expect(limited).toMatchObject({ reason: 'too many requests', detail: 'Too many requests; retry in 30 seconds.' });
    // Another address has its own window; a header cannot choose the key.
    const other = post({ events: [event()] }, { headers: { 'x-forwarded-for': '10.0.0.1' } });
    expect((await ingest(other, { clientIp: '10.0.0.2' })).status).toBe(204);
    clock.advance(29_999);
    expect((await ingest(post({ events: [event()] }), { clientIp: '10.0.0.1' })).status).toBe(429);
    clock.advance(1);
    expect((await ingest(post({ events: [event()] }), { clientIp: '10.0.0.1' })).status).toBe(204);
  });

  it('does not count requests refused for their method or Origin, and checks the rate before the size', async () => {
    const { ingest } = setup({ rateLimit: { permitLimit: 2, windowMs: 60_000 } });
    for (let i = 0; i < 5; i++) {
      await ingest(post({}, { method: 'GET' }), { clientIp: 'a' });
      await ingest(post({}, { headers: { origin: 'https://evil.example' } }), { clientIp: 'a' });
    }
    const big = 'x'.repeat(70_000);
    expect((await ingest(post(big), { clientIp: 'a' })).status).toBe(413);
    expect((await ingest(post(big), { clientIp: 'a' })).status).toBe(413);
    expect((await ingest(post(big), { clientIp: 'a' })).status).toBe(429);
  });

  it('refuses over 65,536 bytes by Content-Length or by what it read, and takes exactly 65,536', async () => {
    const { ingest, sink } = setup();
    const padded = (size: number) => {
      const bare = JSON.stringify({ events: [event({ attrs: { pad: '' } })] });
      return JSON.stringify({ events: [event({ attrs: { pad: 'p'.repeat(size - bare.length) } })] });
    };
    expect(padded(65_536)).toHaveLength(65_536);
    expect((await ingest(post(padded(65_536)), { clientIp: 'a' })).status).toBe(204);
    const declared = await ingest(post(padded(65_537)), { clientIp: 'a' });
    expect(await reasonOf(declared, 413, 'Http.ClientError')).toBe('body is too large');
    // A streamed body without Content-Length is counted as it is read.
    const bytes = new TextEncoder().encode(padded(65_537));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 10_000) controller.enqueue(bytes.slice(offset, offset + 10_000));
        controller.close();
      },
    });
    const streamed = new Request(URL_, {
      method: 'POST',
      headers: { origin: ORIGIN },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.headers.get('content-length')).toBeNull();
    expect(await reasonOf(await ingest(streamed, { clientIp: 'a' }), 413, 'Http.ClientError')).toBe('body is too large');
    // Over the limit yet malformed: the size is what is refused.
    expect((await ingest(post('{'.repeat(65_537)), { clientIp: 'a' })).status).toBe(413);
    expect(sink.events).toHaveLength(1);
  });

  it('refuses a body that is not JSON with 400 Http.ClientError and its reason', async () => {
    const { ingest } = setup({ rateLimit: false });
    for (const body of ['not json', '', '{"events":']) {
      const refused = await refusalOf(await ingest(post(body), { clientIp: 'a' }), 400, 'Http.ClientError');
      expect(refused, JSON.stringify(body)).toMatchObject({
        reason: LOG_BATCH_REASONS.notJson,
        detail: 'The request body is not valid JSON.',
      });
      expect(refused).not.toHaveProperty('index');
      expect(refused).not.toHaveProperty('errors');
    }
    // Bytes that are not UTF-8 are not JSON either.
    const latin1 = new Request(URL_, { method: 'POST', headers: { origin: ORIGIN }, body: new Uint8Array([0x7b, 0xe9, 0x7d]) });
    expect(await reasonOf(await ingest(latin1, { clientIp: 'a' }), 400, 'Http.ClientError')).toBe(LOG_BATCH_REASONS.notJson);
  });

  it('refuses a malformed batch whole with 400 Validation.Failed: reason, errors keyed by member, index of a bad event', async () => {
    const { ingest, sink } = setup({ rateLimit: false });
    const R = LOG_BATCH_REASONS;
    const cases: Array<[unknown, string, string, number?]> = [
      [[], R.notObject, ''],
      ['"text"', R.notObject, ''],
      [{}, R.noEvents, 'events'],
      [{ events: {} }, R.noEvents, 'events'],
      [{ events: [] }, R.empty, 'events'],
      [{ events: Array.from({ length: 101 }, () => event()) }, R.tooMany, 'events'],
      [{ events: [event(), 'x'] }, R.eventNotObject, 'events[1]', 1],
      [{ events: [event({ level: 'fatal' })] }, R.level, 'events[0].level', 0],
      [{ events: [event({ level: undefined })] }, R.level, 'events[0].level', 0],
      [{ events: [event({ event: 'Signin.Viewed' })] }, R.name, 'events[0].event', 0],
      [{ events: [event({ event: 'signin..viewed' })] }, R.name, 'events[0].event', 0],
      [{ events: [event({ event: 'signin viewed' })] }, R.name, 'events[0].event', 0],
      [{ events: [event({ event: `a${'b'.repeat(120)}` })] }, R.name, 'events[0].event', 0],
      [{ events: [event({ event: 42 })] }, R.name, 'events[0].event', 0],
      [{ events: [event({ ts: 'yesterday' })] }, R.ts, 'events[0].ts', 0],
      [{ events: [event({ ts: undefined })] }, R.ts, 'events[0].ts', 0],
      [{ events: [event({ attrs: [1, 2] })] }, R.attrs, 'events[0].attrs', 0],
      [{ events: [event({ attrs: 'x' })] }, R.attrs, 'events[0].attrs', 0],
      [
        { events: [event({ attrs: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i])) })] },
        R.tooManyAttrs,
        'events[0].attrs',
        0,
      ],
      [{ events: [event(), event(), event({ error: 42 })] }, R.error, 'events[2].error', 2],
      [{ events: [event()], csrfToken: 7 }, R.csrfToken, 'csrfToken'],
    ];
    for (const [body, reason, member, index] of cases) {
      const label = JSON.stringify(body).slice(0, 80);
      const refused = await refusalOf(await ingest(post(body), { clientIp: 'a' }), 400, 'Validation.Failed');
      expect(refused.reason, label).toBe(reason);
      expect(refused.errors, label).toEqual({ [member]: [reason] });
      expect(refused.index, label).toBe(index);
      expect(Object.hasOwn(refused, 'index'), label).toBe(index !== undefined);
    }
    const second = await ingest(post({ events: [event(), event({ level: 'loud' })] }), { clientIp: 'a' });
    const { traceId, ...rest } = (await second.json()) as LogIngestProblem;
    expect(rest).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'The log batch is malformed; none of its events was recorded.',
      code: 'Validation.Failed',
      errors: { 'events[1].level': [R.level] },
      reason: R.level,
      index: 1,
    });
    expect(sink.events).toEqual([]);
    // The limits themselves are accepted.
    const atLimits = {
      events: Array.from({ length: 100 }, () =>
        event({
          event: `a${'b'.repeat(119)}`,
          ts: Date.parse(NOW),
          attrs: Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, i])),
        }),
      ),
    };
    expect((await ingest(post(atLimits), { clientIp: 'a' })).status).toBe(204);
    expect(sink.events).toHaveLength(100);
  });

  it('asks authorize after the shape, with the batch (body token included), and answers 403 when it refuses or throws', async () => {
    const { ingest, sink } = setup({ rateLimit: false, logger: createLogger({ level: 'silent' }) });
    const seen: Array<{ csrfToken?: string; header: string | null }> = [];
    const authorize = (batch: { csrfToken?: string }, request: Request) => {
      seen.push({ ...(batch.csrfToken ? { csrfToken: batch.csrfToken } : {}), header: request.headers.get('x-csrf-token') });
      return batch.csrfToken === 'good' || request.headers.get('x-csrf-token') === 'good';
    };
    expect((await ingest(post({ events: [] }), { clientIp: 'a', authorize: () => false })).status).toBe(400);
    const refused = await ingest(post({ events: [event()] }), { clientIp: 'a', authorize });
    expect(await reasonOf(refused, 403, 'Auth.Forbidden')).toBe('csrf token missing or invalid');
    expect((await ingest(post({ events: [event()], csrfToken: 'good' }), { clientIp: 'a', authorize })).status).toBe(204);
    const header = post({ events: [event()] }, { headers: { 'x-csrf-token': 'good' } });
    expect((await ingest(header, { clientIp: 'a', authorize: async (b, r) => authorize(b, r) })).status).toBe(204);
    expect(seen).toEqual([{ header: null }, { csrfToken: 'good', header: null }, { header: 'good' }]);
    const throwing = () => {
      throw new Error('session store down');
    };
    expect(
      await reasonOf(await ingest(post({ events: [event()] }), { clientIp: 'a', authorize: throwing }), 403, 'Auth.Forbidden'),
    ).toBe('csrf token missing or invalid');
    expect(sink.events).toHaveLength(2);
  });

  it("answers the CSRF refusal with the host's own registered Forbidden code, and refuses any other at creation", async () => {
    const { ingest } = setup({ rateLimit: false, csrfCode: 'Test.CsrfInvalid' });
    const refused = await refusalOf(
      await ingest(post({ events: [event()] }), { clientIp: 'a', authorize: () => false }),
      403,
      'Test.CsrfInvalid',
    );
    expect(refused).toMatchObject({ reason: 'csrf token missing or invalid', detail: 'The page did not send the CSRF token.' });
    expect(() => setup({ csrfCode: 'Test.Unregistered' })).toThrow(RangeError);
    expect(() => setup({ csrfCode: 'Test.Teapot' })).toThrow(RangeError);
  });
});

describe('browser log ingest: what is recorded', () => {
  it('rebuilds each event, stamps the server fields and ignores what the page claims for them', async () => {
    const { ingest, sink, clock } = setup();
    clock.set('2026-03-01T12:00:05.250Z');
    const smuggled = event({
      level: 'error',
      ts: 1_772_366_398_000,
      service: 'billing',
      userId: 'attacker',
      tenantId: 'other-tenant',
      clientIp: '6.6.6.6',
      clientTs: 'x',
      extra: true,
      error: { name: 'TypeError', message: 'x is undefined', stack: 'at y', extra: 1 },
    });
    const response = await ingest(
      post({ events: [smuggled, event({ correlationId: 'corr-1' })] }, { headers: { 'x-request-id': 'req-9' } }),
      {
        clientIp: '203.0.113.7',
        userId: 'user-1',
        tenantId: 'org-1',
      },
    );
    expect(response.status).toBe(204);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.text()).toBe('');
    expect(sink.events).toEqual([
      {
        ts: '2026-03-01T12:00:05.250Z',
        clientTs: new Date(1_772_366_398_000).toISOString(),
        level: 'error',
        event: 'signin.page-viewed',
        attrs: { step: 'password' },
        service: 'idt-signin',
        clientIp: '203.0.113.7',
        userId: 'user-1',
        tenantId: 'org-1',
        correlationId: 'req-9',
        error: { name: 'TypeError', message: 'x is undefined', stack: 'at y' },
      },
      {
        ts: '2026-03-01T12:00:05.250Z',
        clientTs: '2026-03-01T11:59:58.500Z',
        level: 'info',
        event: 'signin.page-viewed',
        attrs: { step: 'password' },
        service: 'idt-signin',
        clientIp: '203.0.113.7',
        userId: 'user-1',
        tenantId: 'org-1',
        correlationId: 'corr-1',
      },
    ]);
  });

  it('takes the host request id over the header, and records null without either', async () => {
    const { ingest, sink } = setup();
    await ingest(post({ events: [event()] }, { headers: { 'x-request-id': 'header-id' } }), {
      clientIp: 'a',
      requestId: 'host-id',
    });
    await ingest(
      post({ events: [event({ correlationId: 'bad id with spaces' })] }, { headers: { 'x-request-id': 'x'.repeat(200) } }),
      {
        clientIp: 'a',
      },
    );
    expect(sink.events.map((recorded) => [recorded.correlationId, recorded.userId, recorded.tenantId])).toEqual([
      ['host-id', null, null],
      [null, null, null],
    ]);
  });

  it('re-redacts secret-looking keys at any depth down to four levels, and credential-shaped values', async () => {
    const { ingest, sink } = setup();
    const attrs = {
      Password: 'hunter2',
      accessToken: 'abc',
      client_secret: 's',
      Authorization: 'Bearer abc',
      cookieHeader: 'sid=1',
      userEmail: 'a@example.com',
      apiKey: 'k',
      count: 3,
      ok: true,
      none: null,
      jwt: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln',
      header: 'Bearer abc.def',
      nested: { list: [{ token: 'y', id: 1 }], form: { password: 'x', deep: { level4: 'kept', deeper: { gone: 1 } } } },
    };
    // JSON.parse makes "__proto__" an own key; the rebuilt copy must keep it a plain key, not a prototype.
    const raw = JSON.stringify({ events: [event({ attrs })] }).replace('"attrs":{', '"attrs":{"__proto__":{"polluted":true},');
    expect((await ingest(post(raw), { clientIp: 'a' })).status).toBe(204);
    const recorded = sink.events[0]?.attrs as Record<string, unknown>;
    expect(recorded).toMatchObject({
      Password: '[redacted]',
      accessToken: '[redacted]',
      client_secret: '[redacted]',
      Authorization: '[redacted]',
      cookieHeader: '[redacted]',
      userEmail: '[redacted]',
      apiKey: '[redacted]',
      count: 3,
      ok: true,
      none: null,
      jwt: '[redacted]',
      header: '[redacted]',
      // attrs is level 1: objects down to level 4 are kept (and redacted), deeper ones truncated.
      nested: {
        list: [{ token: '[redacted]', id: 1 }],
        form: { password: '[redacted]', deep: { level4: 'kept', deeper: '[truncated]' } },
      },
    });
    expect(Object.hasOwn(recorded, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(recorded)).toBe(Object.prototype);
  });

  it('answers 204 whatever the sink does: throwing, rejecting, or never settling', async () => {
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', write: (line) => warnings.push(JSON.parse(line).msg) });
    const sinks: LogSink[] = [
      {
        write: () => {
          throw new Error('boom');
        },
      },
      { write: () => Promise.reject(new Error('later')) },
      { write: () => new Promise<void>(() => undefined) },
    ];
    for (const sink of sinks) {
      const ingest = createLogIngestHandler({ service: 's', sink, logger });
      expect((await ingest(post({ events: [event()] }), { clientIp: 'a' })).status).toBe(204);
      expect((await ingest(post({ events: [event()] }), { clientIp: 'a' })).status).toBe(204);
    }
    await new Promise((resolve) => setImmediate(resolve));
    // Once per failing sink, not once per batch.
    expect(warnings).toEqual(['browser log sink failed; events dropped', 'browser log sink failed; events dropped']);
  });
});

describe('the per-process fixed window', () => {
  it('tracks at most maxKeys addresses; new ones then share one window until tracked windows end', () => {
    const clock = createManualClock(NOW);
    const limiter = createFixedWindowLimiter({ permitLimit: 2, windowMs: 60_000, clock, maxKeys: 2 });
    expect(limiter.hit('a').allowed).toBe(true);
    expect(limiter.hit('b').allowed).toBe(true);
    expect([limiter.hit('c').allowed, limiter.hit('d').allowed, limiter.hit('e').allowed]).toEqual([true, true, false]);
    expect(limiter.size).toBe(2);
    // The tracked addresses keep their own windows.
    expect(limiter.hit('a').allowed).toBe(true);
    clock.advance(60_000);
    expect(limiter.hit('c').allowed).toBe(true);
    expect(limiter.hit('c').allowed).toBe(true);
    expect(limiter.hit('c').allowed).toBe(false);
    expect(limiter.size).toBe(1);
  });
});

/** A loopback OTLP collector stub. */
interface Collector {
  readonly url: string;
  readonly requests: Array<{ path: string; contentType: string | undefined; headers: IncomingMessage['headers']; body: any }>;
  status: number;
  close(): Promise<void>;
}

async function startCollector(): Promise<Collector> {
  const requests: Collector['requests'] = [];
  const state = { status: 200 };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    requests.push({
      path: req.url ?? '',
      contentType: req.headers['content-type'],
      headers: req.headers,
      body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
    });
    res.writeHead(state.status, { 'content-type': 'application/json' });
    res.end(state.status === 200 ? '{}' : '{"code":13}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get status() {
      return state.status;
    },
    set status(value) {
      state.status = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A loopback port nothing listens on. */
async function deadPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('OTLP/HTTP JSON export', () => {
  let collector: Collector;
  let clock: ManualClock;
  beforeAll(async () => {
    collector = await startCollector();
    clock = createManualClock(NOW);
  });
  afterAll(async () => {
    await collector.close();
  });

  it('POSTs resourceLogs → scopeLogs → logRecords to <endpoint>/v1/logs', async () => {
    collector.requests.length = 0;
    const sink = createOtlpLogSink({ endpoint: `${collector.url}/`, headers: { 'x-api-key': 'k' } });
    const ingest = createLogIngestHandler({ service: 'idt-signin', clock, sink });
    const batch = {
      events: [
        event({
          level: 'debug',
          attrs: { step: 'password', attempts: 2, ratio: 0.5, ok: true, list: ['a', 1], obj: { k: 'v' }, none: null },
        }),
        event({
          level: 'error',
          event: 'signin.failed',
          error: { name: 'TypeError', message: 'boom', stack: 'at x' },
          correlationId: 'c-1',
        }),
        event({ level: 'warn' }),
        event({ level: 'info' }),
      ],
    };
    const response = await ingest(post(batch), { clientIp: '203.0.113.7', userId: 'u-1', tenantId: 'o-1' });
    expect(response.status).toBe(204);
    await sink.flush();
    expect(collector.requests).toHaveLength(1);
    const [request] = collector.requests;
    expect(request?.path).toBe('/v1/logs');
    expect(request?.contentType).toBe('application/json');
    expect(request?.headers['x-api-key']).toBe('k');
    const { resourceLogs } = request?.body ?? {};
    expect(resourceLogs).toHaveLength(1);
    expect(resourceLogs[0].resource).toEqual({ attributes: [{ key: 'service.name', value: { stringValue: 'idt-signin' } }] });
    expect(resourceLogs[0].scopeLogs).toHaveLength(1);
    const records = resourceLogs[0].scopeLogs[0].logRecords;
    expect(records.map((record: any) => [record.severityNumber, record.severityText])).toEqual([
      [5, 'DEBUG'],
      [17, 'ERROR'],
      [13, 'WARN'],
      [9, 'INFO'],
    ]);
    const nanos = (BigInt(Date.parse(NOW)) * 1_000_000n).toString();
    const attributes = (record: any) => Object.fromEntries(record.attributes.map((kv: any) => [kv.key, kv.value]));
    expect(records[0]).toMatchObject({
      timeUnixNano: nanos,
      observedTimeUnixNano: nanos,
      body: { stringValue: 'signin.page-viewed' },
    });
    expect(attributes(records[0])).toEqual({
      'event.name': { stringValue: 'signin.page-viewed' },
      'client.address': { stringValue: '203.0.113.7' },
      'idt.client_ts': { stringValue: '2026-03-01T11:59:58.500Z' },
      'user.id': { stringValue: 'u-1' },
      'idt.tenant_id': { stringValue: 'o-1' },
      'attrs.step': { stringValue: 'password' },
      'attrs.attempts': { intValue: '2' },
      'attrs.ratio': { doubleValue: 0.5 },
      'attrs.ok': { boolValue: true },
      'attrs.list': { arrayValue: { values: [{ stringValue: 'a' }, { intValue: '1' }] } },
      'attrs.obj': { kvlistValue: { values: [{ key: 'k', value: { stringValue: 'v' } }] } },
      'attrs.none': {},
    });
    expect(attributes(records[1])).toMatchObject({
      'idt.correlation_id': { stringValue: 'c-1' },
      'exception.type': { stringValue: 'TypeError' },
      'exception.message': { stringValue: 'boom' },
      'exception.stacktrace': { stringValue: 'at x' },
    });
    await sink.close();
  });

  it('batches off the request path: up to maxBatch records per export, one export at a time', async () => {
    collector.requests.length = 0;
    const sink = createOtlpLogSink({ endpoint: collector.url, maxBatch: 3, delayMs: 60_000 });
    const ingest = createLogIngestHandler({ service: 'svc', clock, sink, rateLimit: false });
    for (let i = 0; i < 2; i++) expect((await ingest(post({ events: [event()] }), { clientIp: 'a' })).status).toBe(204);
    // Under a batch and before the delay, nothing was sent yet.
    expect(collector.requests).toHaveLength(0);
    expect((await ingest(post({ events: [event(), event(), event(), event(), event()] }), { clientIp: 'a' })).status).toBe(204);
    await sink.flush();
    expect(collector.requests.map((request) => request.body.resourceLogs[0].scopeLogs[0].logRecords.length)).toEqual([3, 3, 1]);
    await sink.close();
  });

  it('answers 204 while the collector is down or failing, drops those batches, and logs once per outage', async () => {
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', write: (line) => warnings.push(JSON.parse(line).msg) });
    const down = createOtlpLogSink({ endpoint: await deadPort(), logger, timeoutMs: 2000 });
    const ingestDown = createLogIngestHandler({ service: 'svc', clock, sink: down, logger, rateLimit: false });
    for (let i = 0; i < 3; i++) {
      expect((await ingestDown(post({ events: [event()] }), { clientIp: 'a' })).status).toBe(204);
      await down.flush();
    }
    expect(down.dropped).toBe(3);
    expect(warnings).toEqual(['OTLP log sink: export failed; dropping browser log events until it recovers']);

    warnings.length = 0;
    collector.requests.length = 0;
    collector.status = 500;
    const failing = createOtlpLogSink({ endpoint: collector.url, logger });
    const ingest = createLogIngestHandler({ service: 'svc', clock, sink: failing, logger, rateLimit: false });
    for (let i = 0; i < 2; i++) {
      expect((await ingest(post({ events: [event()] }), { clientIp: 'a' })).status).toBe(204);
      await failing.flush();
    }
    expect(collector.requests).toHaveLength(2);
    expect(failing.dropped).toBe(2);
    expect(warnings).toHaveLength(1);
    // Recovery re-arms the warning; nothing failed is re-sent.
    collector.status = 200;
    expect((await ingest(post({ events: [event()] }), { clientIp: 'a' })).status).toBe(204);
    await failing.flush();
    expect(collector.requests).toHaveLength(3);
    collector.status = 500;
    expect((await ingest(post({ events: [event()] }), { clientIp: 'a' })).status).toBe(204);
    await failing.flush();
    expect(warnings).toHaveLength(2);
    collector.status = 200;
    await failing.close();
    await down.close();
  });

  it('keeps a bounded queue, dropping the oldest events and saying so once', async () => {
    const warnings: string[] = [];
    const logger = createLogger({ level: 'warn', write: (line) => warnings.push(JSON.parse(line).msg) });
    const lines: string[] = [];
    const sink = createStdoutLogSink({ write: (chunk) => lines.push(...chunk.trimEnd().split('\n')), maxQueued: 3, logger });
    const recorded = (name: string) =>
      ({
        ...(event({ event: name }) as any),
        clientTs: NOW,
        service: 's',
        clientIp: 'a',
        userId: null,
        tenantId: null,
        correlationId: null,
      }) as IngestedLogEvent;
    sink.write([recorded('a'), recorded('b'), recorded('c'), recorded('d')]);
    sink.write([recorded('e')]);
    await sink.flush();
    expect(lines.map((line) => JSON.parse(line).event)).toEqual(['c', 'd', 'e']);
    expect(sink.dropped).toBe(2);
    expect(warnings).toEqual(['stdout log sink: queue full; dropping the oldest browser log events']);
  });
});

describe('the sink from the environment', () => {
  let collector: Collector;
  beforeAll(async () => {
    collector = await startCollector();
  });
  afterAll(async () => {
    await collector.close();
  });

  const one = (): IngestedLogEvent => ({
    ts: NOW,
    clientTs: NOW,
    level: 'info',
    event: 'a.b',
    attrs: {},
    service: 'idt-bff',
    clientIp: '1.2.3.4',
    userId: null,
    tenantId: null,
    correlationId: null,
  });

  it('exports to OTEL_EXPORTER_OTLP_ENDPOINT/v1/logs with OTEL_EXPORTER_OTLP_HEADERS', async () => {
    collector.requests.length = 0;
    const sink = logSinkFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Basic%20abc,x-tenant = t1',
    });
    sink.write([one()]);
    await sink.close();
    expect(collector.requests).toHaveLength(1);
    expect(collector.requests[0]?.path).toBe('/v1/logs');
    expect(collector.requests[0]?.headers.authorization).toBe('Basic abc');
    expect(collector.requests[0]?.headers['x-tenant']).toBe('t1');
    expect(collector.requests[0]?.body.resourceLogs[0].resource.attributes[0].value.stringValue).toBe('idt-bff');
  });

  it('uses OTEL_EXPORTER_OTLP_LOGS_ENDPOINT as is', async () => {
    collector.requests.length = 0;
    const sink = logSinkFromEnv({
      OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: `${collector.url}/custom/logs`,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://unused.invalid',
    });
    sink.write([one()]);
    await sink.close();
    expect(collector.requests.map((request) => request.path)).toEqual(['/custom/logs']);
  });

  it('writes JSON lines to standard output without an endpoint', async () => {
    const chunks: string[] = [];
    const sink = logSinkFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, { write: (chunk) => chunks.push(chunk) });
    sink.write([one(), one()]);
    expect(chunks).toEqual([]);
    await sink.flush();
    expect(chunks.join('')).toBe(`${JSON.stringify(one())}\n${JSON.stringify(one())}\n`);
  });
});
