import { generateKeyPairSync } from 'node:crypto';
import { UnauthorizedError } from '@idt/problem';
import { describe, expect, it } from 'vitest';
import '../problems.js';
import { createHttpApp } from '../http/app.js';
import { json } from '../http/responses.js';
import { defineRoute } from '../http/route.js';
import { type CredentialResolver, createAuthenticator } from './authenticator.js';
import { createJwtVerifier, signJwt } from './jwt.js';
import type { Principal } from './principal.js';

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256' };
const { d: _d, ...publicJwk } = privateJwk;
const issuer = 'http://issuer.test';
const now = Math.floor(Date.now() / 1000);
const ORG_A = '11111111-1111-4111-8111-111111111111';
const ORG_B = '22222222-2222-4222-8222-222222222222';

const principal = (subject: string, organizationId: string | null, kind: Principal['kind'] = 'user'): Principal => ({
  kind,
  subject,
  userId: kind === 'service' ? null : subject,
  clientId: null,
  organizationId,
  permissions: new Set(['UsersRead']),
  scopes: new Set(),
  sessionId: null,
  name: null,
  credentialId: null,
});

const calls: Array<{ kind: string; tenant: string | null }> = [];
const resolver: CredentialResolver = {
  async resolveToken(claims, tenant) {
    calls.push({ kind: 'token', tenant });
    if (claims.sub === 'revoked') throw new UnauthorizedError('revoked');
    return principal(claims.sub, tenant);
  },
  async resolveApiKey(key, tenant) {
    calls.push({ kind: 'key', tenant });
    return key === 'sk_live_good' ? principal('key-owner', ORG_A, 'apiKey') : null;
  },
  async resolveSession(value, tenant) {
    calls.push({ kind: 'session', tenant });
    return value === 'session-1' ? principal('cookie-user', tenant) : null;
  },
};

const app = createHttpApp({
  environment: 'Testing',
  publicBaseUrl: 'http://api.test',
  authenticator: createAuthenticator({
    verifier: createJwtVerifier({ keys: async () => [publicJwk], issuer, audience: 'http://api.test' }),
    resolver,
    sessionCookie: { name: 'idt.session', allowedOrigins: ['http://auth.test'] },
  }),
  routes: [
    defineRoute({
      method: 'GET',
      path: '/v1/me',
      operationId: 'me',
      summary: 'me',
      tenant: 'optional',
      responses: {},
      handler: ({ principal: p }) => json({ subject: p?.subject, tenant: p?.organizationId, kind: p?.kind }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/me',
      operationId: 'updateMe',
      summary: 'update',
      tenant: 'optional',
      responses: {},
      handler: () => json({ ok: true }),
    }),
  ],
});

const token = (claims: Record<string, unknown> = {}) =>
  signJwt({ typ: 'at+jwt' }, { iss: issuer, aud: 'http://api.test', sub: 'u1', iat: now, exp: now + 600, ...claims }, privateJwk);

const call = (headers: Record<string, string>, method = 'GET') =>
  app.fetch(new Request('http://api.test/v1/me', { method, headers }));

describe('authenticator', () => {
  it('accepts a bearer token and takes the tenant from org_id', async () => {
    const response = await call({ authorization: `Bearer ${token({ org_id: ORG_A })}` });
    expect(await response.json()).toEqual({ subject: 'u1', tenant: ORG_A, kind: 'user' });
  });

  it('takes the tenant from X-Tenant-Id when the token has none', async () => {
    const response = await call({ authorization: `Bearer ${token()}`, 'x-tenant-id': ORG_B });
    expect(await response.json()).toMatchObject({ tenant: ORG_B });
  });

  it('refuses an X-Tenant-Id naming another organization than the token', async () => {
    const response = await call({ authorization: `Bearer ${token({ org_id: ORG_A })}`, 'x-tenant-id': ORG_B });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'Tenant.Forbidden' });
    const malformed = await call({ authorization: `Bearer ${token()}`, 'x-tenant-id': 'not-a-guid' });
    expect(malformed.status).toBe(403);
  });

  it('answers a bad bearer token with 401 and WWW-Authenticate invalid_token', async () => {
    for (const header of [`Bearer ${token({ iss: 'http://evil' })}`, 'Bearer garbage', 'Basic dXNlcjpwYXNz', 'Bearer']) {
      const response = await call({ authorization: header });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
      expect(await response.json()).toMatchObject({ code: 'Auth.Unauthenticated' });
    }
    const revoked = await call({ authorization: `Bearer ${token({ sub: 'revoked' })}` });
    expect(revoked.status).toBe(401);
  });

  it('prefers X-Api-Key and answers an unknown key with 401', async () => {
    expect(await (await call({ 'x-api-key': 'sk_live_good', authorization: 'Bearer garbage' })).json()).toMatchObject({
      kind: 'apiKey',
      tenant: ORG_A,
    });
    const bad = await call({ 'x-api-key': 'sk_live_bad' });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ code: 'Auth.Unauthenticated' });
  });

  it('accepts the session cookie, and unsafe methods only from the sign-in origin', async () => {
    expect(await (await call({ cookie: 'a=b; idt.session=session-1' })).json()).toMatchObject({ subject: 'cookie-user' });
    const crossSite = await call({ cookie: 'idt.session=session-1', origin: 'http://evil.test' }, 'POST');
    expect(crossSite.status).toBe(403);
    const noOrigin = await call({ cookie: 'idt.session=session-1' }, 'POST');
    expect(noOrigin.status).toBe(403);
    expect((await call({ cookie: 'idt.session=session-1', origin: 'http://auth.test' }, 'POST')).status).toBe(200);
    expect((await call({ cookie: 'idt.session=ended' })).status).toBe(401);
  });

  it('answers 401 when no credential is sent to a protected route', async () => {
    const response = await call({});
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
  });
});
