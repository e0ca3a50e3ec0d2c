import { caller, createTestIdt, seedWorld, type TestIdt, testDialects } from '@idt/testing';
import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const admin = {
  email: 'ada@example.com',
  password: 'correct horse battery staple',
  firstName: 'Ada',
  lastName: 'Lovelace',
  organizationName: 'Acme Platform',
};

function post(server: TestIdt, path: string, body: unknown) {
  return server.fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function expectProblem(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ type: 'about:blank', status, code });
  expect(body.traceId).toMatch(/^[0-9a-f]{32}$/);
  for (const forbidden of ['instance', 'api', 'version']) expect(body).not.toHaveProperty(forbidden);
  return body;
}

describe.each(testDialects())('reference server foundation on %s', (dialect) => {
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt({ dialect });
  });
  afterAll(async () => {
    await server.close();
  });

  it('starts in setup mode', async () => {
    const response = await server.fetch('/v1/identity/setup/status');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ setupRequired: true });
  });

  it('answers 503 Setup.Required everywhere outside the allowlist while setup is required', async () => {
    const body = await expectProblem(await server.fetch('/v1/anything'), 503, 'Setup.Required');
    expect(body.title).toBe('Service Unavailable');
    for (const path of ['/v1/identity/users', '/v1/nope', '/asyncapi', '/hubs/realtime', '/', '/v2/x', '/healthz', '/openapix']) {
      await expectProblem(await server.fetch(path), 503, 'Setup.Required');
    }
    await expectProblem(await server.fetch('/v1/identity/users', { method: 'DELETE' }), 503, 'Setup.Required');
  });

  it('keeps the allowlisted paths reachable while setup is required', async () => {
    expect((await server.fetch('/health')).status).toBe(200);
    expect((await server.fetch('/health/ready')).status).toBe(200);
    expect((await server.fetch('/openapi/v1.json')).status).toBe(200);
    expect((await server.fetch('/scalar')).status).toBe(200);
    expect((await server.fetch('/v1/identity/setup/status')).status).toBe(200);
    // Allowlisted prefixes without a route fall through to routing: 404, never 503.
    for (const path of ['/connect/nothing', '/.well-known/nothing', '/v1/identity/setup/nothing']) {
      await expectProblem(await server.fetch(path), 404, 'Http.NotFound');
    }
  });

  it('reports readiness with the database check', async () => {
    expect(await (await server.fetch('/health/ready')).json()).toEqual({ status: 'Healthy', checks: { database: 'Healthy' } });
    expect(await (await server.fetch('/health')).json()).toEqual({ status: 'Healthy' });
  });

  it('refuses a bad setup body with errors keyed by field and writes nothing', async () => {
    const body = await expectProblem(
      await post(server, '/v1/identity/setup/admin', { email: 'not-an-email', password: 'short', firstName: '  ' }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(body.errors as object).sort()).toEqual(['email', 'firstName', 'lastName', 'organizationName', 'password']);
    await expectProblem(await post(server, '/v1/identity/setup/admin', '{"email":'), 400, 'Http.ClientError');
    await expectProblem(await post(server, '/v1/identity/setup/admin', '[]'), 400, 'Validation.Failed');
    expect(await (await server.fetch('/v1/identity/setup/status')).json()).toEqual({ setupRequired: true });
  });

  it('lets exactly one of two concurrent setups win, then answers 409', async () => {
    const [a, b] = await Promise.all([
      post(server, '/v1/identity/setup/admin', admin),
      post(server, '/v1/identity/setup/admin', { ...admin, email: 'grace@example.com' }),
    ]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([201, 409]);
    const winner = a.status === 201 ? a : b;
    const created = (await winner.json()) as { userId: string; organizationId: string };
    expect(created.userId).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.organizationId).toMatch(/^[0-9a-f-]{36}$/);
    await expectProblem(a.status === 409 ? a : b, 409, 'Setup.AlreadyCompleted');
    await expectProblem(await post(server, '/v1/identity/setup/admin', admin), 409, 'Setup.AlreadyCompleted');
    expect(await (await server.fetch('/v1/identity/setup/status')).json()).toEqual({ setupRequired: false });
  });

  it('routes normally once setup is complete', async () => {
    await expectProblem(await server.fetch('/v1/nope'), 404, 'Http.NotFound');
    const methodNotAllowed = await server.fetch('/health', { method: 'DELETE' });
    expect(methodNotAllowed.headers.get('allow')).toBe('GET, HEAD');
    await expectProblem(methodNotAllowed, 405, 'Http.MethodNotAllowed');
  });

  it('echoes x-request-id and honours traceparent over HTTP', async () => {
    const response = await server.fetch('/v1/nope', {
      headers: { 'x-request-id': 'req-42', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    });
    expect(response.headers.get('x-request-id')).toBe('req-42');
    expect(((await response.json()) as { traceId: string }).traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect((await server.fetch('/health')).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves a valid OpenAPI 3.1 document with the setup routes and the ErrorCode enum', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as Record<string, any>;
    expect(document.openapi).toMatch(/^3\.1\./);
    const result = await validate(structuredClone(document) as Parameters<typeof validate>[0]);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/v1/identity/setup/status', '/v1/identity/setup/admin']),
    );
    expect(document.paths['/v1/identity/setup/admin'].post.requestBody.content['application/json'].schema.required).toEqual([
      'email',
      'password',
      'firstName',
      'lastName',
      'organizationName',
    ]);
    const codes = document.components.schemas.ErrorCode.enum as string[];
    expect(codes).toEqual(
      expect.arrayContaining([
        'Validation.Failed',
        'Setup.Required',
        'Setup.AlreadyCompleted',
        'Http.NotFound',
        'Tenant.Required',
      ]),
    );
    expect(document.paths).not.toHaveProperty('/openapi/v1.json');
    expect(document.servers).toEqual([{ url: server.url }]);
  });

  it('serves the Scalar viewer from the installed package with no other origin', async () => {
    const page = await server.fetch('/scalar');
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('data-url="/openapi/v1.json"');
    expect(html).not.toMatch(/https?:\/\//);
    const script = await server.fetch('/scalar/standalone.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(Number(script.headers.get('content-length'))).toBeGreaterThan(100_000);
  });
});

describe('reference server under a deployment path prefix', () => {
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt({ env: { IDT_PATH_PREFIX: '/idt' } });
  });
  afterAll(async () => {
    await server.close();
  });

  it('mounts every route under the prefix', async () => {
    expect(server.url).toMatch(/\/idt$/);
    expect((await server.fetch('/health')).status).toBe(200);
    expect(await (await server.fetch('/v1/identity/setup/status')).json()).toEqual({ setupRequired: true });
    expect((await server.send(`${server.origin}/health`)).status).toBe(404);
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as { servers: Array<{ url: string }> };
    expect(document.servers[0]?.url).toBe(server.url);
    expect(await (await server.fetch('/scalar')).text()).toContain('src="/idt/scalar/standalone.js"');
  });

  it("answers a 201's Location with the prefix, a path the client can follow", async () => {
    const world = await seedWorld(server);
    const call = caller(server);
    const created = await call('POST', '/v1/identity/organizations', { token: world.outsiderToken, body: { name: 'Prefixed' } });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const location = created.headers.get('location') ?? '';
    expect(location).toBe(`/idt/v1/identity/organizations/${id}`);
    const followed = await server.send(new URL(location, server.url), {
      headers: { authorization: `Bearer ${world.outsiderToken}` },
    });
    expect(followed.status).not.toBe(404);
  });
});
