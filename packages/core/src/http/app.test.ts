import { ProblemError, UnauthorizedError } from '@idt/problem';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Authenticator, Principal } from '../auth/principal.js';
import '../problems.js';
import { createHttpApp, type HttpAppOptions, type RequestRateLimiter } from './app.js';
import { json } from './responses.js';
import { defineRoute, type Route } from './route.js';

const user = (overrides: Partial<Principal> = {}): Principal => ({
  kind: 'user',
  subject: 'u1',
  userId: 'u1',
  clientId: 'app',
  organizationId: 'org-1',
  permissions: new Set(['UsersRead']),
  scopes: new Set(),
  sessionId: null,
  name: 'Ada',
  credentialId: null,
  ...overrides,
});

const routes: Route[] = [
  defineRoute({
    method: 'POST',
    path: '/v1/things',
    operationId: 'createThing',
    summary: 'create',
    auth: 'anonymous',
    request: {
      body: z.object({
        name: z.string().min(1),
        address: z.object({ street: z.string() }),
        tags: z.array(z.string().max(3)).optional(),
      }),
    },
    responses: { 201: { description: 'created' } },
    handler: ({ body }) => json(body, { status: 201 }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/things/{id}',
    operationId: 'getThing',
    summary: 'get',
    permissions: ['UsersRead'],
    request: { params: z.object({ id: z.uuid() }), query: z.object({ expand: z.coerce.boolean().optional() }) },
    responses: { 200: { description: 'ok' } },
    handler: ({ params, query, principal, tenantId }) => json({ params, query, subject: principal?.subject, tenantId }),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/things/{id}',
    operationId: 'deleteThing',
    summary: 'delete',
    permissions: ['UsersDelete'],
    responses: { 204: { description: 'gone' } },
    handler: () => new Response(null, { status: 204 }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/me',
    operationId: 'me',
    summary: 'me',
    tenant: 'optional',
    responses: { 200: { description: 'ok' } },
    handler: ({ principal }) => json({ subject: principal?.subject }),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/short',
    operationId: 'short',
    summary: 'short bodies',
    tenant: 'optional',
    request: { body: z.object({ newEmail: z.email() }) },
    responses: {},
    renderError: (problem) =>
      problem.status === 401 ? json({ succeeded: false, error: 'unauthorized' }, { status: 401 }) : undefined,
    handler: () => json({ succeeded: true }),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/names',
    operationId: 'reserveName',
    summary: 'a body schema with an async refinement',
    auth: 'anonymous',
    request: {
      body: z.object({
        name: z.string().refine(async (name) => {
          await new Promise((resolve) => setTimeout(resolve, 1));
          return name !== 'taken';
        }, 'That name is taken.'),
      }),
    },
    responses: {},
    handler: ({ body }) => json(body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/boom',
    operationId: 'boom',
    summary: 'boom',
    auth: 'anonymous',
    responses: {},
    handler: () => {
      throw new Error('secret internals');
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/slow',
    operationId: 'slow',
    summary: 'slow',
    auth: 'anonymous',
    responses: {},
    handler: async ({ signal }) => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      if (signal.aborted) throw new Error('aborted');
      return json({});
    },
  }),
];

const tokens: Record<string, Principal> = {
  good: user(),
  noorg: user({ organizationId: null, permissions: new Set() }),
  service: user({ kind: 'service', userId: null, subject: 'sa-acme-bot', permissions: new Set() }),
};

const authenticator: Authenticator = {
  async authenticate(request) {
    const header = request.headers.get('authorization');
    if (!header) return null;
    const principal = tokens[header.replace(/^Bearer /, '')];
    if (!principal) throw new UnauthorizedError('The token is invalid.', { 'www-authenticate': 'Bearer error="invalid_token"' });
    return { principal };
  },
};

function app(overrides: Partial<HttpAppOptions> = {}) {
  return createHttpApp({ environment: 'Production', publicBaseUrl: 'http://api.test', routes, authenticator, ...overrides });
}

async function problem(response: Response) {
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  return (await response.json()) as Record<string, unknown>;
}

const id = '01936f0e-5c4a-7b1e-9a3f-2d4c5e6f7a8b';

describe('HTTP pipeline', () => {
  it('answers an unmatched route with 404 Http.NotFound', async () => {
    const response = await app().fetch(new Request('http://api.test/v1/nope'));
    expect(response.status).toBe(404);
    expect(await problem(response)).toMatchObject({ code: 'Http.NotFound', title: 'Not Found', type: 'about:blank' });
  });

  it('answers a wrong method with 405 Http.MethodNotAllowed and Allow', async () => {
    const response = await app().fetch(new Request('http://api.test/v1/things', { method: 'PUT' }));
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await problem(response)).toMatchObject({ code: 'Http.MethodNotAllowed' });
  });

  it('answers malformed JSON with 400 Http.ClientError', async () => {
    const response = await app().fetch(
      new Request('http://api.test/v1/things', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"name":',
      }),
    );
    expect(response.status).toBe(400);
    expect(await problem(response)).toMatchObject({ code: 'Http.ClientError' });
  });

  it('answers another media type with 415', async () => {
    const response = await app().fetch(
      new Request('http://api.test/v1/things', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }),
    );
    expect(response.status).toBe(415);
    expect(await problem(response)).toMatchObject({ code: 'Http.ClientError', title: 'Unsupported Media Type' });
  });

  it('answers an oversized body with 413 without reading it all, and closes the connection', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(2_000_000) });
    const response = await app().fetch(
      new Request('http://api.test/v1/things', { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
    );
    expect(response.status).toBe(413);
    expect(response.headers.get('connection')).toBe('close');
  });

  it('answers validation failures with errors keyed by camelCase member path', async () => {
    const response = await app().fetch(
      new Request('http://api.test/v1/things', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: '', address: {}, tags: ['ok', 'toolong'] }),
      }),
    );
    expect(response.status).toBe(400);
    const body = await problem(response);
    expect(body.code).toBe('Validation.Failed');
    expect(Object.keys(body.errors as object).sort()).toEqual(['address.street', 'name', 'tags[1]']);
  });

  it('requires a body when the schema does', async () => {
    const response = await app().fetch(new Request('http://api.test/v1/things', { method: 'POST' }));
    expect(response.status).toBe(400);
    expect(await problem(response)).toMatchObject({ code: 'Validation.Failed' });
  });

  it('runs async refinements of a schema', async () => {
    const post = (name: string) =>
      app().fetch(
        new Request('http://api.test/v1/names', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name }),
        }),
      );
    const taken = await post('taken');
    expect(taken.status).toBe(400);
    expect((await problem(taken)).errors).toEqual({ name: ['That name is taken.'] });
    const free = await post('free');
    expect(free.status).toBe(200);
    expect(await free.json()).toEqual({ name: 'free' });
  });

  it('validates path and query parameters', async () => {
    const bad = await app().fetch(
      new Request('http://api.test/v1/things/not-a-guid', { headers: { authorization: 'Bearer good' } }),
    );
    expect(bad.status).toBe(400);
    expect(Object.keys((await problem(bad)).errors as object)).toEqual(['id']);
    const good = await app().fetch(
      new Request(`http://api.test/v1/things/${id}?expand=true`, { headers: { authorization: 'Bearer good' } }),
    );
    expect(await good.json()).toEqual({ params: { id }, query: { expand: true }, subject: 'u1', tenantId: 'org-1' });
  });

  it('answers a missing credential with 401 and a bad token with WWW-Authenticate', async () => {
    const missing = await app().fetch(new Request(`http://api.test/v1/things/${id}`));
    expect(missing.status).toBe(401);
    expect(await problem(missing)).toMatchObject({ code: 'Auth.Unauthenticated', title: 'Unauthorized' });
    const invalid = await app().fetch(
      new Request(`http://api.test/v1/things/${id}`, { headers: { authorization: 'Bearer forged' } }),
    );
    expect(invalid.status).toBe(401);
    expect(invalid.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  it('answers a missing permission with 403 Auth.Forbidden', async () => {
    const response = await app().fetch(
      new Request(`http://api.test/v1/things/${id}`, { method: 'DELETE', headers: { authorization: 'Bearer good' } }),
    );
    expect(response.status).toBe(403);
    expect(await problem(response)).toMatchObject({ code: 'Auth.Forbidden' });
  });

  it('tells a service account which scope it lacks', async () => {
    const response = await app().fetch(
      new Request(`http://api.test/v1/things/${id}`, { method: 'DELETE', headers: { authorization: 'Bearer service' } }),
    );
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope"');
  });

  it('answers an organization-less caller with 403 Tenant.Required, except on tenant-optional routes', async () => {
    const refused = await app().fetch(
      new Request(`http://api.test/v1/things/${id}`, { headers: { authorization: 'Bearer noorg' } }),
    );
    expect(refused.status).toBe(403);
    expect(await problem(refused)).toMatchObject({ code: 'Tenant.Required' });
    const allowed = await app().fetch(new Request('http://api.test/v1/me', { headers: { authorization: 'Bearer noorg' } }));
    expect(allowed.status).toBe(200);
  });

  it('echoes a sane x-request-id and creates one otherwise', async () => {
    const echoed = await app().fetch(new Request('http://api.test/v1/nope', { headers: { 'x-request-id': 'abc-123' } }));
    expect(echoed.headers.get('x-request-id')).toBe('abc-123');
    const created = await app().fetch(new Request('http://api.test/v1/nope', { headers: { 'x-request-id': 'bad id\u0001' } }));
    expect(created.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('takes traceId from a valid traceparent', async () => {
    const response = await app().fetch(
      new Request('http://api.test/v1/nope', {
        headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
      }),
    );
    expect((await problem(response)).traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('hides internals of a 500 outside Development and shows them in Development', async () => {
    const production = await problem(await app().fetch(new Request('http://api.test/v1/boom')));
    expect(production).toMatchObject({ status: 500, code: 'Server.Error' });
    expect(JSON.stringify(production)).not.toContain('secret internals');
    const development = await problem(await app({ environment: 'Development' }).fetch(new Request('http://api.test/v1/boom')));
    expect(development.exception).toMatchObject({ message: 'secret internals' });
    expect(development.detail).toBe(production.detail);
  });

  it('answers 499 with no body when the client cancels', async () => {
    const controller = new AbortController();
    const pending = app().fetch(new Request('http://api.test/v1/slow', { signal: controller.signal }));
    controller.abort();
    const response = await pending;
    expect(response.status).toBe(499);
    expect(response.body).toBeNull();
  });

  it('serves routes under the deployment prefix only', async () => {
    const prefixed = app({ pathPrefix: '/idt' });
    expect(
      (await prefixed.fetch(new Request('http://api.test/idt/v1/me', { headers: { authorization: 'Bearer good' } }))).status,
    ).toBe(200);
    const outside = await prefixed.fetch(new Request('http://api.test/v1/me', { headers: { authorization: 'Bearer good' } }));
    expect(outside.status).toBe(404);
    expect(await problem(outside)).toMatchObject({ code: 'Http.NotFound' });
    expect((await prefixed.fetch(new Request('http://api.test/idtx/v1/me'))).status).toBe(404);
  });

  it('runs gates before routing, so unknown paths are gated too', async () => {
    const gated = app({
      gates: [
        ({ path }) => {
          if (path !== '/v1/me') throw new ProblemError('Setup.Required');
        },
      ],
    });
    const response = await gated.fetch(new Request('http://api.test/v1/anything'));
    expect(response.status).toBe(503);
    expect(await problem(response)).toMatchObject({ code: 'Setup.Required', title: 'Service Unavailable' });
  });

  it('counts every request, even failing ones, and answers 429 with Retry-After', async () => {
    const keys: string[] = [];
    let count = 0;
    const rateLimiter: RequestRateLimiter = {
      async hit(policy, key) {
        keys.push(`${policy}:${key}`);
        count += 1;
        return { allowed: count <= 2, limit: 2, remaining: Math.max(0, 2 - count), retryAfterSeconds: 42 };
      },
    };
    const limited = app({ rateLimiter });
    const first = await limited.fetch(
      new Request(`http://api.test/v1/things/${id}`, { headers: { authorization: 'Bearer forged' } }),
      {
        remoteAddress: '10.0.0.1',
      },
    );
    expect(first.status).toBe(401);
    await limited.fetch(new Request(`http://api.test/v1/things/${id}`, { headers: { authorization: 'Bearer good' } }));
    const third = await limited.fetch(
      new Request(`http://api.test/v1/things/${id}`, { headers: { authorization: 'Bearer good' } }),
    );
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('42');
    expect(await problem(third)).toMatchObject({ code: 'RateLimit.Exceeded', title: 'Too Many Requests' });
    expect(keys).toEqual(['global:ip:10.0.0.1', 'global:org:org-1', 'global:org:org-1']);
  });

  it('lets a route render its own body for chosen errors', async () => {
    const unauthorized = await app().fetch(new Request('http://api.test/v1/short', { method: 'POST' }));
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('content-type')).toMatch(/^application\/json/);
    expect(unauthorized.headers.get('www-authenticate')).toBe('Bearer');
    expect(await unauthorized.json()).toEqual({ succeeded: false, error: 'unauthorized' });
    const invalid = await app().fetch(
      new Request('http://api.test/v1/short', {
        method: 'POST',
        headers: { authorization: 'Bearer good', 'content-type': 'application/json' },
        body: '{"newEmail":"nope"}',
      }),
    );
    expect(invalid.status).toBe(400);
    expect(await problem(invalid)).toMatchObject({ code: 'Validation.Failed' });
  });
});
