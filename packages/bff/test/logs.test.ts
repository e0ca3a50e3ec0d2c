import type { IngestedLogEvent } from '@idt/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bffSignIn,
  cookieHeader,
  sessionOf,
  startTestBff,
  startTestProvider,
  type TestBff,
  type TestProvider,
} from './support.js';

const event = (name: string) => ({ ts: new Date().toISOString(), level: 'info', event: name, attrs: { page: '/' } });

describe('POST /bff/logs on the BFF host', () => {
  let provider: TestProvider;
  let bff: TestBff;
  const received: IngestedLogEvent[] = [];

  beforeAll(async () => {
    provider = await startTestProvider();
    bff = await startTestBff(provider, { logSink: { write: (events) => void received.push(...events) } });
  });
  afterAll(async () => {
    await bff?.close();
    await provider?.close();
  });

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${bff.url}/bff/logs`, {
      method: 'POST',
      headers: { origin: bff.url, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('accepts an anonymous page’s batch and stamps it with the BFF service and no user', async () => {
    const response = await post({ events: [event('page.loaded')] });
    expect(response.status).toBe(204);
    expect(received.at(-1)).toMatchObject({ event: 'page.loaded', service: 'idt-bff', userId: null, tenantId: null });
  });

  it('refuses another origin and another method before anything else', async () => {
    expect((await post({ events: [event('page.loaded')] }, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await fetch(`${bff.url}/bff/logs`, { headers: { origin: bff.url } })).status).toBe(405);
  });

  it('with a session, needs its CSRF token in the header or in a beacon’s body, and stamps the user', async () => {
    const { browser } = await bffSignIn(bff, provider);
    const session = await sessionOf(browser, bff);
    const cookie = cookieHeader(browser, bff);
    const before = received.length;

    const missing = await post({ events: [event('page.loaded')] }, { cookie });
    expect(missing.status).toBe(403);
    expect((await post({ events: [event('page.loaded')] }, { cookie, 'x-csrf-token': 'wrong' })).status).toBe(403);
    expect(received.length).toBe(before);

    expect((await post({ events: [event('page.header')] }, { cookie, 'x-csrf-token': session.csrfToken })).status).toBe(204);
    // sendBeacon: text/plain, no custom header, the token in the body.
    const beacon = await post(JSON.stringify({ events: [event('page.hidden')], csrfToken: session.csrfToken }), {
      cookie,
      'content-type': 'text/plain;charset=UTF-8',
    });
    expect(beacon.status).toBe(204);
    expect(received.slice(before).map((entry) => [entry.event, entry.userId, entry.tenantId])).toEqual([
      ['page.header', session.user.sub, session.user.orgId],
      ['page.hidden', session.user.sub, session.user.orgId],
    ]);
    // The answer sets no cookie: a log beacon never changes the session.
    expect(beacon.headers.getSetCookie()).toEqual([]);
  });
});
