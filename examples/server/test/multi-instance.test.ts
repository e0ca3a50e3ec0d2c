import {
  bearer,
  bootstrapAdmin,
  mintAccessToken,
  seedOrganization,
  startTestServer,
  type TestAdmin,
  type TestClient,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** How soon a change made on one instance must be seen on the others. */
const PROPAGATION_MS = 1_000;

/**
 * Repeats `attempt` until it answers `true`, failing once the deadline
 * passes; every attempt is a real HTTP request to another instance, so no
 * sleep is needed between them.
 */
async function within(deadlineMs: number, what: string, attempt: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + deadlineMs;
  for (let attempts = 1; !(await attempt()); attempts++) {
    if (performance.now() > deadline) throw new Error(`${what}: not seen within ${deadlineMs} ms (${attempts} attempts)`);
  }
}

let nextIp = 0;
/** A fresh caller address per request, so only the test about the auth window fills one. */
const freshIp = () => {
  nextIp += 1;
  return `10.77.${nextIp >> 8}.${nextIp & 255}`;
};

/** A client_secret_post token request from a caller address (sent as X-Forwarded-For); counted for the client's organization. */
function tokenRequest(server: TestServer, client: { clientId: string; clientSecret: string }, ip = freshIp()) {
  return server.fetch('/connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      scope: 'users.read',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }).toString(),
  });
}

// Three instances of the reference server on one Postgres database, the way a deployment scales out;
// requests go round-robin across them.
describe.skipIf(!testDialects().includes('postgres'))('three instances on one Postgres database', () => {
  const AUTH_LIMIT = 12;
  let instances: TestServer[] = [];
  let admin: TestAdmin;
  const at = (index: number) => instances[index % instances.length] as TestServer;

  /**
   * A service account of an organization of its own: the auth window is the
   * client's organization's, so only the test about the window fills one.
   */
  async function serviceAccount(name: string): Promise<TestClient> {
    const organization = await seedOrganization(at(0).database.db, { name });
    const response = await at(0).fetch('/v1/identity/clients', {
      method: 'POST',
      headers: { ...bearer(await admin.token()), 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: organization.id, kind: 'service-account', name, scopes: ['users.read'] }),
    });
    expect(response.status).toBe(201);
    const registration = (await response.json()) as { client: Record<string, unknown>; clientSecret: string };
    return {
      clientId: String(registration.client.clientId),
      clientSecret: registration.clientSecret,
      record: registration.client,
    };
  }

  beforeAll(async () => {
    const env = {
      IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: String(AUTH_LIMIT),
      IDT_RATE_LIMIT_AUTH_WINDOW_SECONDS: '60',
      IDT_TRUST_PROXY: 'true',
    };
    const first = await startTestServer({ dialect: 'postgres', env });
    instances.push(first);
    // One issuer for all, as behind a load balancer: tokens of one instance are valid on the others.
    for (let i = 0; i < 2; i++) {
      instances.push(await startTestServer({ database: first.database, env, config: { issuer: first.origin } }));
    }
  }, 30_000);
  afterAll(async () => {
    // The first instance owns the database: it goes last.
    for (const instance of instances.slice(1)) await instance.close();
    await instances[0]?.close();
    instances = [];
  });

  it('lifts the setup gate on every instance once setup completes through one', async () => {
    const [a, b, c] = instances as [TestServer, TestServer, TestServer];
    // Asked first, so an instance that cached "setup required" would still have it.
    for (const instance of [a, b, c]) expect((await instance.fetch('/v1/identity/users')).status).toBe(503);
    admin = await bootstrapAdmin(a);
    for (const instance of [b, c]) {
      await within(PROPAGATION_MS, 'setup on another instance', async () => {
        const status = (await instance.fetch('/v1/identity/users')).status;
        return status === 401;
      });
    }
  });

  it('shares the auth rate-limit window: the 13th token request is refused, on whichever instance', async () => {
    const client = await serviceAccount('Windowed');
    const ip = '203.0.113.12';
    for (let i = 0; i < AUTH_LIMIT; i++) expect((await tokenRequest(at(i), client, ip)).status).toBe(200);
    for (let i = AUTH_LIMIT; i < AUTH_LIMIT + 3; i++) {
      const refused = await tokenRequest(at(i), client, ip);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(await refused.json()).toMatchObject({ code: 'RateLimit.Exceeded', error: 'rate_limit_exceeded' });
    }
    // The window is the client's organization's, whatever address the requests come from.
    expect((await tokenRequest(at(0), client)).status).toBe(429);
  });

  it('refuses a rotated secret and its revoked tokens on every instance within a second', async () => {
    const [a, b, c] = instances as [TestServer, TestServer, TestServer];
    const client = await serviceAccount('Rotated');
    const issued = (await (await tokenRequest(a, client)).json()) as { access_token: string };
    // Every instance has used the secret and the token: whatever they cache is warm.
    for (const instance of [b, c]) {
      expect((await tokenRequest(instance, client)).status).toBe(200);
      expect((await instance.fetch('/v1/identity/users', { headers: bearer(issued.access_token) })).status).toBe(200);
    }

    const rotated = await a.fetch(`/v1/identity/clients/${client.clientId}/rotate-secret`, {
      method: 'POST',
      headers: { ...bearer(await admin.token()), 'content-type': 'application/json' },
      body: JSON.stringify({ revokeActiveTokens: true }),
    });
    expect(rotated.status).toBe(200);
    for (const instance of [b, c]) {
      await within(PROPAGATION_MS, 'a revoked token', async () => {
        const response = await instance.fetch('/v1/identity/users', { headers: bearer(issued.access_token) });
        return response.status === 401;
      });
      await within(PROPAGATION_MS, 'a rotated secret', async () => (await tokenRequest(instance, client)).status === 401);
    }
  });

  it('refuses a revoked session on every instance within a second', async () => {
    const [a, b, c] = instances as [TestServer, TestServer, TestServer];
    const { session } = await a.idt.services.identity.credentials.sessions.start(admin.userId);
    const token = await mintAccessToken(a, { sub: admin.userId, org_id: admin.organizationId, sid: session.id });
    for (const instance of [b, c])
      expect((await instance.fetch('/v1/identity/sessions', { headers: bearer(token) })).status).toBe(200);

    expect((await a.fetch(`/v1/identity/sessions/${session.id}`, { method: 'DELETE', headers: bearer(token) })).status).toBe(204);
    for (const instance of [b, c]) {
      await within(PROPAGATION_MS, 'a revoked session', async () => {
        const response = await instance.fetch('/v1/identity/sessions', { headers: bearer(token) });
        return response.status === 401;
      });
    }
  });

  it('locks a client out on every instance after five failures spread over them', async () => {
    const client = await serviceAccount('Locked');
    const wrong = { clientId: client.clientId, clientSecret: 'wrong' };
    for (let i = 0; i < 5; i++) expect((await tokenRequest(at(i), wrong)).status).toBe(401);
    // The fifth failure landed on the second instance; the others learn of the lock from the database.
    for (const instance of instances) {
      await within(PROPAGATION_MS, 'a lockout', async () => (await tokenRequest(instance, client)).status === 401);
      expect(instance.idt.services.oidc.lockout.isLocked(client.clientId)).toBe(true);
    }
    const row = await at(0).database.db('oidc_client_auth_failures').where({ client_id: client.clientId }).first();
    expect(row.locked_until).toBeTruthy();
  });
});
