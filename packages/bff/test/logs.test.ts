import { bffMigrations, createKnexBffSessionStore } from '@idt/bff/knex';
import type { IngestedLogEvent } from '@idt/core';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
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

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

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

/** Posts to a log endpoint from the given page origin (the endpoint's own unless told otherwise). */
const postTo = (url: string, origin: string, body: unknown, headers: Record<string, string> = {}, method = 'POST') =>
  fetch(url, {
    method,
    headers: { origin, 'content-type': 'application/json', ...headers },
    ...(method === 'GET' || method === 'HEAD' ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });

describe('POST /bff/logs on the BFF host', () => {
  let provider: TestProvider;

  beforeAll(async () => {
    provider = await startTestProvider();
  });
  afterAll(async () => {
    await provider?.close();
  });

  describe.each(testDialects())('with sessions stored on %s', (dialect) => {
    let database: TestDatabase;
    let bff: TestBff;
    const received: IngestedLogEvent[] = [];

    beforeAll(async () => {
      database = await createTestDatabase(dialect, [bffMigrations]);
      bff = await startTestBff(provider, {
        logSink: { write: (events) => void received.push(...events) },
        store: ({ config, clock }) => createKnexBffSessionStore({ db: database.db, secrets: config.cookie.keyring, clock }),
      });
    });
    afterAll(async () => {
      await bff?.close();
      await database?.destroy();
    });

    const post = (body: unknown, headers: Record<string, string> = {}) => postTo(`${bff.url}/bff/logs`, bff.url, body, headers);

    it('accepts an anonymous page’s batch and stamps it with the BFF service, no user and the request id', async () => {
      const response = await post({ events: [event('page.loaded')] }, { 'x-request-id': 'bff-logs-1' });
      expect(response.status).toBe(204);
      expect(response.headers.get('x-request-id')).toBe('bff-logs-1');
      expect(received.at(-1)).toMatchObject({
        event: 'page.loaded',
        service: 'idt-bff',
        userId: null,
        tenantId: null,
        correlationId: 'bff-logs-1',
      });
    });

    it('refuses another method with 405 and another origin with 403, problem documents with their reason', async () => {
      for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']) {
        const response = await postTo(`${bff.url}/bff/logs`, bff.url, {}, {}, method);
        expect(response.headers.get('allow'), method).toBe('POST');
        if (method === 'HEAD') expect(response.status).toBe(405);
        else
          expect(await refusalOf(response, 405, 'Http.MethodNotAllowed'), method).toMatchObject({ reason: 'method not allowed' });
      }
      const foreign = await post({ events: [event('page.loaded')] }, { origin: 'https://evil.example' });
      expect(await refusalOf(foreign, 403, 'Logs.OriginNotAllowed')).toMatchObject({ reason: 'origin not allowed' });
    });

    it('refuses a malformed batch with 400, its reason and the index of the bad event', async () => {
      const before = received.length;
      const bad = await post({ events: [event('page.loaded'), { ...event('page.hidden'), level: 'loud' }] });
      const refused = await refusalOf(bad, 400, 'Validation.Failed');
      expect(refused).toMatchObject({
        errors: { 'events[1].level': ['event has no valid level'] },
        reason: 'event has no valid level',
        index: 1,
      });
      const notJson = await refusalOf(await post('{"events":'), 400, 'Http.ClientError');
      expect(notJson.reason).toBe('body is not valid JSON');
      expect(notJson).not.toHaveProperty('index');
      expect(await refusalOf(await post('x'.repeat(65_537)), 413, 'Http.ClientError')).toMatchObject({
        reason: 'body is too large',
      });
      expect(received.length).toBe(before);
    });

    it('with a session, needs its CSRF token in the header or in a beacon’s body (403 Bff.CsrfInvalid), and stamps the user', async () => {
      const { browser } = await bffSignIn(bff, provider);
      const session = await sessionOf(browser, bff);
      const cookie = cookieHeader(browser, bff);
      const before = received.length;

      const missing = await post({ events: [event('page.loaded')] }, { cookie, traceparent: TRACEPARENT });
      const refused = await refusalOf(missing, 403, 'Bff.CsrfInvalid');
      expect(refused).toEqual({
        type: 'about:blank',
        title: 'Forbidden',
        status: 403,
        detail: 'The x-csrf-token header (or the csrfToken of a beacon) does not match the session.',
        code: 'Bff.CsrfInvalid',
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        reason: 'csrf token missing or invalid',
      });
      const wrong = await post({ events: [event('page.loaded')] }, { cookie, 'x-csrf-token': 'wrong' });
      expect(await refusalOf(wrong, 403, 'Bff.CsrfInvalid')).toMatchObject({ reason: 'csrf token missing or invalid' });
      const wrongBeacon = await post(JSON.stringify({ events: [event('page.hidden')], csrfToken: 'wrong' }), {
        cookie,
        'content-type': 'text/plain;charset=UTF-8',
      });
      expect(await refusalOf(wrongBeacon, 403, 'Bff.CsrfInvalid')).toMatchObject({ reason: 'csrf token missing or invalid' });
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

  describe('beside the sign-in host’s POST /logs', () => {
    let bff: TestBff;
    beforeAll(async () => {
      bff = await startTestBff(provider, { logSink: { write: () => undefined } });
    });
    afterAll(async () => {
      await bff?.close();
    });

    /** The same request to both hosts, each from its own origin unless `origin` names another. */
    async function both(
      body: unknown,
      init: { method?: string; origin?: string; headers?: Record<string, string> } = {},
    ): Promise<Array<{ status: number; headers: Record<string, string | null>; body: unknown }>> {
      const headers = { 'x-request-id': 'same-request', traceparent: TRACEPARENT, ...init.headers };
      const answers = await Promise.all([
        postTo(`${provider.server.url}/logs`, init.origin ?? provider.server.origin, body, headers, init.method),
        postTo(`${bff.url}/bff/logs`, init.origin ?? bff.url, body, headers, init.method),
      ]);
      return Promise.all(
        answers.map(async (response) => ({
          status: response.status,
          headers: Object.fromEntries(
            ['content-type', 'cache-control', 'allow', 'x-request-id', 'x-content-type-options'].map((name) => [
              name,
              response.headers.get(name),
            ]),
          ),
          body: await response.json(),
        })),
      );
    }

    it('answers the same bad requests with the same problem documents', async () => {
      const requests: Array<[string, unknown, { method?: string; origin?: string }, number, string, string]> = [
        ['another method', {}, { method: 'PUT' }, 405, 'Http.MethodNotAllowed', 'method not allowed'],
        [
          'another origin',
          { events: [event('a.b')] },
          { origin: 'https://evil.example' },
          403,
          'Logs.OriginNotAllowed',
          'origin not allowed',
        ],
        ['over 65,536 bytes', 'x'.repeat(65_537), {}, 413, 'Http.ClientError', 'body is too large'],
        ['not JSON', '{', {}, 400, 'Http.ClientError', 'body is not valid JSON'],
        [
          'a bad event',
          { events: [event('a.b'), event('Not A Name')] },
          {},
          400,
          'Validation.Failed',
          'event name is not a dotted low-cardinality name',
        ],
      ];
      for (const [label, body, init, status, code, reason] of requests) {
        const [signIn, viaBff] = await both(body, init);
        expect(signIn?.body, label).toMatchObject({ status, code, reason, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
        expect(signIn?.headers['content-type'], label).toBe('application/problem+json');
        expect(signIn?.headers['x-request-id'], label).toBe('same-request');
        expect(viaBff, label).toEqual(signIn);
      }
    });

    it('answers over the per-IP window with the same 429 (the last check here: it uses up both windows)', async () => {
      // Both windows counted the same requests so far: malformed batches, which write nothing.
      let answers = await both({ events: [] });
      for (let i = 0; i < 60 && answers.every((answer) => answer.status === 400); i++) answers = await both({ events: [] });
      const [signIn, viaBff] = answers.map((answer) => ({
        ...answer,
        // The windows started a moment apart: the seconds left may differ by one.
        body: { ...(answer.body as object), detail: String((answer.body as { detail: unknown }).detail).replace(/\d+/, 'N') },
      }));
      expect(signIn?.body).toMatchObject({
        status: 429,
        code: 'RateLimit.Exceeded',
        detail: 'Too many requests; retry in N seconds.',
        reason: 'too many requests',
      });
      expect(viaBff).toEqual(signIn);
    });
  });
});
