import { BROWSER_LOGGER_LIMITS, type BrowserLoggerOptions, createBrowserLogger, splitBrowserLogBatches } from '@idt/bff/browser';
import { createLogIngestHandler, createManualClock, type IngestedLogEvent } from '@idt/core';
import { describe, expect, it } from 'vitest';

const START = Date.parse('2026-03-01T12:00:00.000Z');

/** A listener registry standing in for `window` or `document`. */
function fakeTarget<T extends object>(extra: T) {
  const listeners = new Map<string, Set<() => void>>();
  return Object.assign(extra, {
    addEventListener(type: string, listener: () => void) {
      if (!listeners.has(type)) listeners.set(type, new Set());
      listeners.get(type)?.add(listener);
    },
    removeEventListener(type: string, listener: () => void) {
      listeners.get(type)?.delete(listener);
    },
    dispatch(type: string) {
      for (const listener of listeners.get(type) ?? []) listener();
    },
    count(type: string) {
      return listeners.get(type)?.size ?? 0;
    },
  });
}

interface SentRequest {
  readonly url: string;
  readonly transport: 'fetch' | 'keepalive' | 'beacon';
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly json: { events: Array<Record<string, any>>; csrfToken?: string };
}

/** The logger with fake timers, fetch, beacon, document and window; nothing sleeps. */
function harness(options: Partial<BrowserLoggerOptions> = {}) {
  let now = START;
  let nextId = 1;
  const timers = new Map<number, { at: number; callback: () => void }>();
  const sent: SentRequest[] = [];
  const warnings: unknown[][] = [];
  const state = {
    fetchAnswer: (): Promise<{ ok: boolean; status: number }> => Promise.resolve({ ok: true, status: 204 }),
    beaconAnswer: true,
  };
  const document = fakeTarget({ visibilityState: 'visible' });
  const window = fakeTarget({});
  const logger = createBrowserLogger({
    csrfToken: 'csrf-1',
    fetch: (url, init) => {
      sent.push({
        url,
        transport: init.keepalive ? 'keepalive' : 'fetch',
        headers: init.headers,
        body: init.body,
        json: JSON.parse(init.body),
      });
      return state.fetchAnswer();
    },
    navigator: {
      sendBeacon: (url, data) => {
        sent.push({ url, transport: 'beacon', headers: {}, body: data, json: JSON.parse(data) });
        return state.beaconAnswer;
      },
    },
    document,
    window,
    now: () => now,
    setTimeout: (callback, ms) => {
      const id = nextId++;
      timers.set(id, { at: now + ms, callback });
      return id;
    },
    clearTimeout: (id) => void timers.delete(id as number),
    console: { warn: (...data) => void warnings.push(data) },
    ...options,
  });
  /** Lets pending promises (fetch answers) settle. */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    logger,
    sent,
    warnings,
    state,
    document,
    window,
    timers,
    settle,
    /** Moves the fake clock, firing due timers in order. */
    async advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const due = [...timers].filter(([, timer]) => timer.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].callback();
        await settle();
      }
      now = end;
      await settle();
    },
    /** Every event sent so far, in order. */
    events: () => sent.flatMap((request) => request.json.events),
  };
}

describe('browser logger: what it keeps', () => {
  it('drops events below its level (info by default)', async () => {
    const h = harness();
    h.logger.debug('a.debug');
    h.logger.info('a.info');
    h.logger.warn('a.warn');
    h.logger.error('a.error');
    await h.logger.flush();
    expect(h.events().map((event) => [event.level, event.event])).toEqual([
      ['info', 'a.info'],
      ['warn', 'a.warn'],
      ['error', 'a.error'],
    ]);
    const debug = harness({ level: 'debug' });
    debug.logger.debug('a.debug');
    const errorsOnly = harness({ level: 'error' });
    errorsOnly.logger.warn('a.warn');
    errorsOnly.logger.error('a.error');
    await debug.logger.flush();
    await errorsOnly.logger.flush();
    expect(debug.events().map((event) => event.event)).toEqual(['a.debug']);
    expect(errorsOnly.events().map((event) => event.event)).toEqual(['a.error']);
  });

  it('sends SPEC 2.8 events and never a service, user or client address', async () => {
    const h = harness({ correlationId: () => 'nav-1' });
    h.logger.error('checkout.failed', { items: 2 }, new TypeError('x is undefined'));
    h.logger.info('checkout.note', undefined, 'plain text');
    await h.logger.flush();
    expect(h.sent).toHaveLength(1);
    expect(Object.keys(h.sent[0]?.json ?? {})).toEqual(['events']);
    const [first, second] = h.events();
    expect(first).toMatchObject({
      ts: new Date(START).toISOString(),
      level: 'error',
      event: 'checkout.failed',
      attrs: { items: 2 },
      correlationId: 'nav-1',
      error: { name: 'TypeError', message: 'x is undefined' },
    });
    expect(typeof first?.error.stack).toBe('string');
    expect(second).toEqual({
      ts: new Date(START).toISOString(),
      level: 'info',
      event: 'checkout.note',
      attrs: {},
      correlationId: 'nav-1',
      error: { message: 'plain text' },
    });
    for (const event of h.events()) {
      expect(Object.keys(event).every((key) => ['ts', 'level', 'event', 'attrs', 'correlationId', 'error'].includes(key))).toBe(
        true,
      );
    }
    expect(h.sent[0]?.body).not.toContain('"service"');
  });

  it('redacts secret-looking keys (any case, nested to depth 4) before buffering', async () => {
    const h = harness();
    const attrs: Record<string, any> = {
      userPassword: 'hunter2',
      ACCESS_TOKEN: 'a',
      clientSecret: 's',
      authorization: 'Basic x',
      setCookie: 'sid=1',
      email: 'a@example.com',
      'x-api-key': 'k',
      plain: 'kept',
      bearer: 'Bearer abc',
      level2: { token: 't', level3: { secret: 's', level4: { password: 'p', kept: 1, level5: { anything: 1 } } } },
      list: [{ token: 't' }],
      when: new Date(START),
      big: 10n,
      fn: () => 1,
      missing: undefined,
    };
    h.logger.info('form.submitted', attrs);
    // Changing the object afterwards changes nothing: a redacted copy was buffered.
    attrs.plain = 'changed';
    attrs.level2.token = 'changed';
    await h.logger.flush();
    expect(h.events()[0]?.attrs).toEqual({
      userPassword: '[redacted]',
      ACCESS_TOKEN: '[redacted]',
      clientSecret: '[redacted]',
      authorization: '[redacted]',
      setCookie: '[redacted]',
      email: '[redacted]',
      'x-api-key': '[redacted]',
      plain: 'kept',
      bearer: '[redacted]',
      level2: {
        token: '[redacted]',
        level3: { secret: '[redacted]', level4: { password: '[redacted]', kept: 1, level5: '[truncated]' } },
      },
      list: [{ token: '[redacted]' }],
      when: new Date(START).toISOString(),
      big: '10',
    });
  });

  it('keeps the first 32 attributes and drops events whose name the server would refuse, warning once per name', async () => {
    const h = harness();
    h.logger.info('many.attrs', Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`a${i}`, i])));
    h.logger.info('Not A Name');
    h.logger.info('Not A Name');
    h.logger.info(`a${'b'.repeat(BROWSER_LOGGER_LIMITS.maxEventNameLength)}`);
    h.logger.info(`a${'b'.repeat(BROWSER_LOGGER_LIMITS.maxEventNameLength - 1)}`);
    await h.logger.flush();
    expect(h.events().map((event) => event.event.length)).toEqual([10, 120]);
    expect(Object.keys(h.events()[0]?.attrs ?? {})).toHaveLength(32);
    expect(h.warnings).toHaveLength(2);
  });
});

describe('browser logger: when it sends', () => {
  it('sends at 20 buffered events, not before', async () => {
    const h = harness();
    for (let i = 0; i < 19; i++) h.logger.info('tick.event', { i });
    await h.settle();
    expect(h.sent).toHaveLength(0);
    h.logger.info('tick.event', { i: 19 });
    await h.settle();
    expect(h.sent).toHaveLength(1);
    expect(h.sent[0]).toMatchObject({ url: '/bff/logs', transport: 'fetch', headers: { 'x-csrf-token': 'csrf-1' } });
    expect(h.sent[0]?.json.events).toHaveLength(20);
  });

  it('sends a buffered event 5 seconds after it was logged', async () => {
    const h = harness();
    await h.advance(60_000);
    expect(h.sent).toHaveLength(0);
    h.logger.info('one.event');
    await h.advance(4999);
    expect(h.sent).toHaveLength(0);
    await h.advance(1);
    expect(h.sent.map((request) => request.json.events.length)).toEqual([1]);
    // Nothing buffered: no timer, no request.
    expect(h.timers.size).toBe(0);
    await h.advance(60_000);
    expect(h.sent).toHaveLength(1);
    // Events logged within the 5 s go together.
    h.logger.info('two.event');
    await h.advance(2500);
    h.logger.info('three.event');
    await h.advance(2500);
    expect(h.sent.map((request) => request.json.events.map((event) => event.event))).toEqual([
      ['one.event'],
      ['two.event', 'three.event'],
    ]);
  });

  it('sends with fetch keepalive and the CSRF header when the page becomes hidden', async () => {
    const h = harness({ csrfToken: () => 'csrf-live' });
    h.logger.info('page.left');
    h.document.visibilityState = 'visible';
    h.document.dispatch('visibilitychange');
    await h.settle();
    expect(h.sent).toHaveLength(0);
    h.document.visibilityState = 'hidden';
    h.document.dispatch('visibilitychange');
    await h.settle();
    expect(h.sent).toHaveLength(1);
    expect(h.sent[0]).toMatchObject({
      transport: 'keepalive',
      headers: { 'x-csrf-token': 'csrf-live', 'content-type': 'application/json' },
    });
    expect(h.sent[0]?.json.csrfToken).toBeUndefined();
  });

  it('sends on an explicit flush, and a flush with nothing buffered sends nothing', async () => {
    const h = harness({ csrfToken: undefined });
    await h.logger.flush();
    expect(h.sent).toHaveLength(0);
    h.logger.warn('cart.stale');
    await h.logger.flush();
    expect(h.sent).toHaveLength(1);
    expect(h.sent[0]?.transport).toBe('fetch');
    expect(h.sent[0]?.headers['x-csrf-token']).toBeUndefined();
    expect(h.timers.size).toBe(0);
  });

  it('sends with navigator.sendBeacon on pagehide, the CSRF token in the body', async () => {
    let token = 'csrf-old';
    const h = harness({ csrfToken: () => token, endpoint: '/logs' });
    h.logger.info('page.hidden');
    token = 'csrf-new';
    h.window.dispatch('pagehide');
    await h.settle();
    expect(h.sent).toHaveLength(1);
    expect(h.sent[0]).toMatchObject({ url: '/logs', transport: 'beacon' });
    expect(h.sent[0]?.json).toEqual({ events: [expect.objectContaining({ event: 'page.hidden' })], csrfToken: 'csrf-new' });
  });

  it('stops listening and sends what is left on close', async () => {
    const h = harness();
    expect([h.document.count('visibilitychange'), h.window.count('pagehide')]).toEqual([1, 1]);
    h.logger.info('last.words');
    await h.logger.close();
    expect(h.sent).toHaveLength(1);
    expect([h.document.count('visibilitychange'), h.window.count('pagehide')]).toEqual([0, 0]);
    expect(h.timers.size).toBe(0);
  });
});

describe('browser logger: failures and bounds', () => {
  it('on a transport failure warns once, does not requeue, and sends nothing for 30 seconds', async () => {
    const h = harness();
    h.state.fetchAnswer = () => Promise.reject(new TypeError('Failed to fetch'));
    h.logger.info('lost.event');
    await h.logger.flush();
    expect(h.sent).toHaveLength(1);
    expect(h.warnings).toHaveLength(1);
    expect(String(h.warnings[0]?.[0])).toContain('30 s');
    h.state.fetchAnswer = () => Promise.resolve({ ok: true, status: 204 });
    // Paused: neither a flush, 20 events, a hidden page nor the timer sends.
    h.logger.info('kept.event');
    await h.logger.flush();
    for (let i = 0; i < 20; i++) h.logger.info('burst.event');
    h.document.visibilityState = 'hidden';
    h.document.dispatch('visibilitychange');
    h.window.dispatch('pagehide');
    await h.advance(29_999);
    expect(h.sent).toHaveLength(1);
    await h.advance(1);
    await h.logger.flush();
    expect(h.sent).toHaveLength(2);
    // The failed batch was not sent again; what was logged meanwhile was.
    expect(h.sent[1]?.json.events.map((event) => event.event)).toEqual(['kept.event', ...Array(20).fill('burst.event')]);
    expect(h.warnings).toHaveLength(1);
  });

  it('treats a non-2xx answer and a refused beacon as failures, warning again only after a success', async () => {
    const h = harness();
    h.state.fetchAnswer = () => Promise.resolve({ ok: false, status: 403 });
    h.logger.info('one.event');
    await h.logger.flush();
    expect(h.warnings).toHaveLength(1);
    expect(String(h.warnings[0]?.[1])).toBe('HTTP 403');
    await h.advance(30_000);
    h.logger.info('two.event');
    await h.logger.flush();
    expect(h.sent).toHaveLength(2);
    expect(h.warnings).toHaveLength(1);
    await h.advance(30_000);
    h.state.fetchAnswer = () => Promise.resolve({ ok: true, status: 204 });
    h.logger.info('three.event');
    await h.logger.flush();
    h.state.beaconAnswer = false;
    h.logger.info('four.event');
    h.window.dispatch('pagehide');
    await h.settle();
    expect(h.sent.map((request) => request.transport)).toEqual(['fetch', 'fetch', 'fetch', 'beacon']);
    expect(h.warnings).toHaveLength(2);
    h.logger.info('five.event');
    await h.logger.flush();
    expect(h.sent).toHaveLength(4);
  });

  it('buffers at most 200 events, dropping the oldest, and sends a logger.dropped warning with the count first', async () => {
    const h = harness();
    h.state.fetchAnswer = () => Promise.reject(new Error('offline'));
    h.logger.info('first.event');
    await h.logger.flush();
    h.state.fetchAnswer = () => Promise.resolve({ ok: true, status: 204 });
    for (let i = 0; i < 205; i++) h.logger.info('queued.event', { i });
    await h.advance(30_000);
    await h.logger.flush();
    const batches = h.sent.slice(1).map((request) => request.json.events);
    // 201 events: split into requests of at most 100.
    expect(batches.map((events) => events.length)).toEqual([100, 100, 1]);
    const events = batches.flat();
    expect(events[0]).toEqual({
      ts: new Date(START + 30_000).toISOString(),
      level: 'warn',
      event: 'logger.dropped',
      attrs: { count: 5 },
    });
    expect(events.slice(1).map((event) => event.attrs.i)).toEqual(Array.from({ length: 200 }, (_, i) => i + 5));
    // The count starts over.
    h.logger.info('later.event');
    await h.logger.flush();
    expect(h.sent.at(-1)?.json.events.map((event) => event.event)).toEqual(['later.event']);
  });

  it('splits requests to at most 65,536 bytes, counting the beacon token, and cuts an event too big alone', async () => {
    const h = harness({ csrfToken: 't'.repeat(100) });
    for (let i = 0; i < 10; i++) h.logger.info('big.event', { i, blob: 'x'.repeat(15_000) });
    await h.logger.flush();
    const fetched = h.sent.map((request) => request.body);
    expect(fetched.length).toBe(3);
    for (const body of fetched) expect(new TextEncoder().encode(body).length).toBeLessThanOrEqual(65_536);
    expect(h.events().map((event) => event.attrs.i)).toEqual(Array.from({ length: 10 }, (_, i) => i));

    const records = Array.from({ length: 4 }, (_, i) => ({
      ts: new Date(START).toISOString(),
      level: 'info' as const,
      event: 'multi.byte',
      attrs: { text: 'é'.repeat(10_000 + i) },
    }));
    const bodies = splitBrowserLogBatches(records, 'token');
    for (const body of bodies) {
      expect(new TextEncoder().encode(body).length).toBeLessThanOrEqual(65_536);
      expect(JSON.parse(body).csrfToken).toBe('token');
    }
    expect(bodies.flatMap((body) => JSON.parse(body).events)).toHaveLength(4);

    const huge = harness();
    huge.logger.error('huge.event', { blob: 'y'.repeat(70_000) }, new Error('z'.repeat(5000)));
    huge.window.dispatch('pagehide');
    await huge.settle();
    expect(huge.sent).toHaveLength(1);
    expect(new TextEncoder().encode(huge.sent[0]?.body ?? '').length).toBeLessThanOrEqual(65_536);
    expect(huge.events()[0]).toMatchObject({
      event: 'huge.event',
      attrs: { truncated: true },
      error: { message: 'z'.repeat(1000) },
    });
  });

  it('sends batches the server ingest accepts whole', async () => {
    const h = harness();
    for (let i = 0; i < 25; i++) h.logger.info('accepted.event', { i, password: 'p', nested: { ok: true } });
    h.logger.error('accepted.failure', {}, new Error('boom'));
    await h.logger.flush();
    const recorded: IngestedLogEvent[] = [];
    const ingest = createLogIngestHandler({
      service: 'idt-bff',
      clock: createManualClock(START),
      sink: { write: (events) => void recorded.push(...events) },
    });
    for (const request of h.sent) {
      const response = await ingest(
        new Request('https://app.example.com/bff/logs', {
          method: 'POST',
          headers: { origin: 'https://app.example.com', ...request.headers },
          body: request.body,
        }),
        { clientIp: '1.2.3.4' },
      );
      expect(response.status).toBe(204);
    }
    expect(recorded).toHaveLength(26);
    expect(recorded.every((event) => event.service === 'idt-bff' && event.attrs.password !== 'p')).toBe(true);
  });
});
