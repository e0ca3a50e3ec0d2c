import { describe, expect, it } from 'vitest';
import { defineRoute, type Route } from './route.js';
import { Router } from './router.js';

const route = (method: Route['method'], path: string, operationId: string): Route =>
  defineRoute({ method, path, operationId, summary: operationId, responses: {}, handler: () => new Response(null) });

describe('Router', () => {
  const router = new Router([
    route('GET', '/v1/inquiries', 'list'),
    route('POST', '/v1/inquiries', 'create'),
    route('GET', '/v1/inquiries/submitted', 'submitted'),
    route('GET', '/v1/inquiries/{id}', 'get'),
    route('PATCH', '/v1/inquiries/{id}/status', 'status'),
  ]);

  it('matches static paths before parameterized ones', () => {
    const lookup = router.lookup('GET', '/v1/inquiries/submitted');
    expect(lookup.kind === 'match' && lookup.match.route.operationId).toBe('submitted');
  });

  it('decodes path parameters', () => {
    const lookup = router.lookup('GET', '/v1/inquiries/a%20b');
    expect(lookup.kind === 'match' && lookup.match.params).toEqual({ id: 'a b' });
  });

  it('tells 405 (with the allowed methods) from 404', () => {
    expect(router.lookup('DELETE', '/v1/inquiries')).toEqual({ kind: 'method-not-allowed', allowed: ['GET', 'POST'] });
    expect(router.lookup('GET', '/v1/nothing')).toEqual({ kind: 'not-found' });
    expect(router.lookup('GET', '/v1/inquiries/x/y')).toEqual({ kind: 'not-found' });
  });

  it('serves HEAD from GET routes', () => {
    expect(router.lookup('HEAD', '/v1/inquiries').kind).toBe('match');
  });

  it('hands the methods no route declares to a route that takes other methods', () => {
    const taking = new Router([
      { ...route('POST', '/logs', 'ingest'), otherMethods: true },
      route('GET', '/v1/inquiries', 'list'),
    ]);
    for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PROPFIND']) {
      const lookup = taking.lookup(method, '/logs');
      expect(lookup.kind === 'match' && lookup.match.route.operationId, method).toBe('ingest');
    }
    expect(taking.lookup('OPTIONS', '/v1/inquiries')).toEqual({ kind: 'method-not-allowed', allowed: ['GET'] });
    expect(taking.lookup('GET', '/logs/x')).toEqual({ kind: 'not-found' });
  });

  it('refuses duplicate routes and operation ids', () => {
    expect(() => router.add(route('GET', '/v1/inquiries', 'other'))).toThrow(/Duplicate route/);
    expect(() => router.add(route('PUT', '/v1/x', 'list'))).toThrow(/Duplicate operationId/);
  });

  it('names parameters that are malformed, not UTF-8 or hold a NUL', () => {
    for (const id of ['%E0%A4%A', '%00', '%FF', '%C0%AF', '%ED%A0%80']) {
      const lookup = router.lookup('GET', `/v1/inquiries/${id}`);
      expect(lookup.kind === 'match' && lookup.match.unsafe, id).toEqual(['id']);
    }
    const valid = router.lookup('GET', '/v1/inquiries/abc');
    expect(valid.kind === 'match' && valid.match.unsafe).toBeUndefined();
  });
});
