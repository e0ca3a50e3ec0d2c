import { createManualClock, type ManualClock, sha256Hex } from '@idt/core';
import {
  bootstrapAdmin,
  discover,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  signIn,
  startTestServer,
  type TestAdmin,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';

async function refreshRow(server: TestServer, token: string) {
  return server.database
    .db('oidc_payloads')
    .where({ model: 'RefreshToken', id: sha256Hex(token) })
    .first();
}

/** The default reuse leeway (IDT_REFRESH_TOKEN_REUSE_LEEWAY_SECONDS), in milliseconds. */
const LEEWAY_MS = 30_000;

describe.each(testDialects())('refresh-token rotation on %s', (dialect) => {
  let server: TestServer;
  let admin: TestAdmin;
  // The leeway and the adapter's expiries read this clock. It starts on a whole second, as oidc-provider's
  // `iat` (its own Date.now()) does, so that absolute expiries come out exact to the millisecond.
  const clock: ManualClock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  beforeAll(async () => {
    server = await startTestServer({ dialect, clock });
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  async function login(extra: Record<string, unknown> = {}) {
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: `App ${Math.random().toString(36).slice(2, 8)}`,
      redirectUris: [REDIRECT],
      scopes: ['openid', 'offline_access', 'users.read'],
      ...extra,
    });
    const config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid offline_access users.read',
      email: admin.email,
      password: admin.password,
    });
    const tokens = await redeemCode(config, result);
    return { client, config, tokens, refreshToken: tokens.refresh_token ?? '' };
  }

  it('stores refresh tokens only as hashes', async () => {
    const { refreshToken } = await login();
    const rows = await server.database.db('oidc_payloads').where({ model: 'RefreshToken' }).select('id', 'payload');
    expect(rows.some((row) => row.id === refreshToken || String(row.payload).includes(refreshToken))).toBe(false);
    expect(await refreshRow(server, refreshToken)).toBeTruthy();
  });

  it('rotates on every redemption and tolerates a replay within the leeway', async () => {
    const { client, refreshToken } = await login();
    const first = await refreshTokenRequest(server, client, refreshToken);
    expect(first.status).toBe(200);
    const rotated = (await first.json()) as { refresh_token: string; access_token: string };
    expect(rotated.refresh_token).not.toBe(refreshToken);
    // The last millisecond of the leeway still tolerates the replay.
    clock.advance(LEEWAY_MS);
    const replay = await refreshTokenRequest(server, client, refreshToken);
    expect(replay.status).toBe(200);
    const replayed = (await replay.json()) as { refresh_token: string };
    expect(replayed.refresh_token).not.toBe(rotated.refresh_token);
    // The family is intact: both successors still work.
    expect((await refreshTokenRequest(server, client, rotated.refresh_token)).status).toBe(200);
    expect((await refreshTokenRequest(server, client, replayed.refresh_token)).status).toBe(200);
  });

  it('revokes the whole family on a replay after the leeway', async () => {
    const { client, refreshToken, tokens } = await login();
    const rotated = (await (await refreshTokenRequest(server, client, refreshToken)).json()) as { refresh_token: string };
    const next = (await (await refreshTokenRequest(server, client, rotated.refresh_token)).json()) as { refresh_token: string };
    clock.advance(LEEWAY_MS + 1);
    const replay = await refreshTokenRequest(server, client, refreshToken);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });
    const successor = await refreshTokenRequest(server, client, next.refresh_token);
    expect(successor.status).toBe(400);
    expect(await successor.json()).toMatchObject({ error: 'invalid_grant' });
    expect(tokens.access_token).toBeTruthy();
  });

  it('consumes atomically: concurrent redemptions stay in one family that a late replay ends', async () => {
    const { client, refreshToken } = await login();
    const results = await Promise.all(Array.from({ length: 5 }, () => refreshTokenRequest(server, client, refreshToken)));
    const bodies = (await Promise.all(results.map((response) => response.json()))) as Array<{ refresh_token?: string }>;
    expect(results.every((response) => response.status === 200)).toBe(true);
    const row = await server.database
      .db('oidc_payloads')
      .where({ model: 'RefreshToken', id: sha256Hex(refreshToken) })
      .first();
    expect(row.consumed_at).toBeTruthy();
    const successors = bodies.map((body) => body.refresh_token ?? '');
    expect(new Set(successors).size).toBe(5);
    const grantIds = new Set(
      await Promise.all(successors.map(async (token) => JSON.parse((await refreshRow(server, token)).payload).grantId as string)),
    );
    expect(grantIds.size).toBe(1);
    clock.advance(LEEWAY_MS + 1);
    expect((await refreshTokenRequest(server, client, refreshToken)).status).toBe(400);
    for (const token of successors) expect((await refreshTokenRequest(server, client, token)).status).toBe(400);
  });

  it('keeps the absolute expiry through rotations (no sliding) and follows the lifetime precedence', async () => {
    const custom = await login({ refreshTokenLifetime: 600 });
    const firstRow = await refreshRow(server, custom.refreshToken);
    const firstExpiry = new Date(firstRow.expires_at).getTime();
    expect(firstExpiry - Date.now()).toBeGreaterThan(590_000);
    expect(firstExpiry - Date.now()).toBeLessThanOrEqual(600_000);
    // Five minutes on: a sliding expiry would move by as much.
    clock.advance(300_000);
    const rotated = (await (await refreshTokenRequest(server, custom.client, custom.refreshToken)).json()) as {
      refresh_token: string;
    };
    const rotatedExpiry = new Date((await refreshRow(server, rotated.refresh_token)).expires_at).getTime();
    expect(Math.abs(rotatedExpiry - firstExpiry)).toBeLessThan(2000);
    // A lifetime change applies to new logins only.
    const patch = await server.fetch(`/v1/identity/organizations/${admin.organizationId}/clients/${custom.client.clientId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${await admin.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ refreshTokenLifetime: 3600 }),
    });
    expect(patch.status).toBe(200);
    const again = (await (await refreshTokenRequest(server, custom.client, rotated.refresh_token)).json()) as {
      refresh_token: string;
    };
    const againExpiry = new Date((await refreshRow(server, again.refresh_token)).expires_at).getTime();
    expect(Math.abs(againExpiry - firstExpiry)).toBeLessThan(2000);
    // The chain ends at that instant, by the server's clock.
    clock.set(againExpiry);
    const expired = await refreshTokenRequest(server, custom.client, again.refresh_token);
    expect(expired.status).toBe(400);
    expect(await expired.json()).toMatchObject({ error: 'invalid_grant' });
    // An application without its own lifetime gets the one-day default.
    const plain = await login();
    const plainExpiry = new Date((await refreshRow(server, plain.refreshToken)).expires_at).getTime() - Date.now();
    expect(plainExpiry).toBeGreaterThan(86_000_000);
    expect(plainExpiry).toBeLessThanOrEqual(86_400_000);
  });

  it('gives first-party clients the seven-day default', async () => {
    const registration = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      null,
      { kind: 'application', name: 'First party', redirectUris: [REDIRECT], scopes: ['openid', 'offline_access'] },
      { firstParty: true },
    );
    const client = { clientId: registration.client.clientId, clientSecret: registration.clientSecret, record: {} };
    const config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid offline_access',
      email: admin.email,
      password: admin.password,
    });
    const tokens = await redeemCode(config, result);
    const expiry = new Date((await refreshRow(server, tokens.refresh_token ?? '')).expires_at).getTime() - Date.now();
    expect(expiry).toBeGreaterThan(604_000_000);
    expect(expiry).toBeLessThanOrEqual(604_800_000);
  });
});
