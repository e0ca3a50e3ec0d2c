import { createManualClock, type ManualClock, sha256Hex } from '@idt/core';
import {
  bootstrapAdmin,
  codeTokenRequest,
  createTestIdt,
  discover,
  oidcClient,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  signIn,
  signInApplication,
  type TestAdmin,
  type TestIdt,
  tenantWithTokens,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';

async function refreshRow(server: TestIdt, token: string) {
  return server.database
    .db('oidc_payloads')
    .where({ model: 'RefreshToken', id: sha256Hex(token) })
    .first();
}

/** The default reuse leeway (IDT_REFRESH_TOKEN_REUSE_LEEWAY_SECONDS), in milliseconds. */
const LEEWAY_MS = 30_000;

describe.each(testDialects())('refresh-token rotation on %s', (dialect) => {
  let server: TestIdt;
  let admin: TestAdmin;
  // The leeway and the adapter's expiries read this clock. It starts on a whole second, as oidc-provider's
  // `iat` (its own Date.now()) does, so that absolute expiries come out exact to the millisecond.
  const clock: ManualClock = createManualClock(Math.floor(Date.now() / 1000) * 1000);
  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A new application and a signed-in browser with its code, not redeemed yet. */
  function authorize(extra: Record<string, unknown> = {}) {
    return signInApplication(server, admin, { redirectUri: REDIRECT, registration: extra });
  }

  async function login(extra: Record<string, unknown> = {}) {
    const { client, config, result } = await authorize(extra);
    const tokens = await redeemCode(config, result);
    return { client, config, result, tokens, refreshToken: tokens.refresh_token ?? '' };
  }

  it('stores refresh tokens only as hashes', async () => {
    const { refreshToken } = await login();
    const rows = await server.database.db('oidc_payloads').where({ model: 'RefreshToken' }).select('id', 'payload');
    expect(rows.some((row) => row.id === refreshToken || String(row.payload).includes(refreshToken))).toBe(false);
    expect(await refreshRow(server, refreshToken)).toBeTruthy();
  });

  /** Every status a bearer token gets now on the API and at userinfo. */
  async function bearerStatuses(accessToken: string) {
    const headers = { authorization: `Bearer ${accessToken}` };
    const [me, userinfo] = await Promise.all([
      server.fetch('/v1/identity/users/me', { headers }),
      server.fetch('/connect/userinfo', { headers }),
    ]);
    return [me.status, userinfo.status];
  }

  it('rotates on every redemption; a replay within the leeway gets the same successor', async () => {
    const { client, config, refreshToken } = await login();
    const rotated = await oidcClient.refreshTokenGrant(config, refreshToken);
    expect(rotated.refresh_token).toBeTruthy();
    expect(rotated.refresh_token).not.toBe(refreshToken);
    // The last millisecond of the leeway still tolerates the replay: the same successor, a new access token.
    clock.advance(LEEWAY_MS);
    const replay = await refreshTokenRequest(server, client, refreshToken);
    expect(replay.status).toBe(200);
    const replayed = (await replay.json()) as { refresh_token: string; access_token: string };
    expect(replayed.refresh_token).toBe(rotated.refresh_token);
    expect(replayed.access_token).not.toBe(rotated.access_token);
    expect(await bearerStatuses(replayed.access_token)).toEqual([200, 200]);
    // The family goes on from its one successor.
    const next = await oidcClient.refreshTokenGrant(config, rotated.refresh_token ?? '');
    expect(next.refresh_token).not.toBe(rotated.refresh_token);
    // A replay of the first token after the chain moved on, still within the leeway, gets no new branch.
    const late = await refreshTokenRequest(server, client, refreshToken);
    expect(late.status).toBe(200);
    expect(((await late.json()) as { refresh_token: string }).refresh_token).toBe(rotated.refresh_token);
  });

  it('ends the whole family on a replay after the leeway: refresh tokens, access tokens, grant', async () => {
    const { client, config, refreshToken, tokens } = await login();
    // Another family of the same user: its own sign-in with the same client.
    const other = await redeemCode(
      config,
      await signIn(config, {
        redirectUri: REDIRECT,
        scope: 'openid offline_access users.read',
        email: admin.email,
        password: admin.password,
      }),
    );
    const accessTokens = [tokens.access_token];
    let current = refreshToken;
    for (let round = 0; round < 3; round++) {
      const rotated = await oidcClient.refreshTokenGrant(config, current);
      accessTokens.push(rotated.access_token);
      current = rotated.refresh_token ?? '';
    }
    for (const accessToken of accessTokens) expect(await bearerStatuses(accessToken)).toEqual([200, 200]);
    const grantId = JSON.parse((await refreshRow(server, current)).payload).grantId as string;
    expect(await server.database.db('oidc_payloads').where({ model: 'Grant', id: grantId }).first()).toBeTruthy();

    clock.advance(LEEWAY_MS + 1);
    const replay = await refreshTokenRequest(server, client, refreshToken);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });
    const successor = await refreshTokenRequest(server, client, current);
    expect(successor.status).toBe(400);
    expect(await successor.json()).toMatchObject({ error: 'invalid_grant' });
    // Every access token of the family is refused on its next bearer request and by userinfo.
    for (const accessToken of accessTokens) expect(await bearerStatuses(accessToken)).toEqual([401, 401]);
    const refused = await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${accessTokens[0]}` } });
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    // The grant and every stored token of the family are gone.
    expect(await server.database.db('oidc_payloads').where({ grant_id: grantId }).first()).toBeUndefined();
    // The user's other family keeps working.
    expect(await bearerStatuses(other.access_token)).toEqual([200, 200]);
    const otherRotated = await oidcClient.refreshTokenGrant(config, other.refresh_token ?? '');
    expect(await bearerStatuses(otherRotated.access_token)).toEqual([200, 200]);
  });

  it('consumes atomically: 200 concurrent redemptions yield exactly one successor, and a late replay ends it', async () => {
    const { client, refreshToken } = await login();
    const results = await Promise.all(Array.from({ length: 200 }, () => refreshTokenRequest(server, client, refreshToken)));
    const bodies = (await Promise.all(results.map((response) => response.json()))) as Array<{
      refresh_token?: string;
      access_token?: string;
    }>;
    expect(results.map((response) => response.status)).toEqual(Array(200).fill(200));
    const row = await refreshRow(server, refreshToken);
    expect(row.consumed_at).toBeTruthy();
    const successors = new Set(bodies.map((body) => body.refresh_token));
    expect(successors.size).toBe(1);
    const successor = bodies[0]?.refresh_token ?? '';
    expect(successor).not.toBe(refreshToken);
    // One stored successor, live; the family has no other refresh token.
    const grantId = JSON.parse(row.payload).grantId as string;
    const family = await server.database.db('oidc_payloads').where({ model: 'RefreshToken', grant_id: grantId }).select('id');
    expect(family.map((entry) => entry.id).sort()).toEqual([sha256Hex(refreshToken), sha256Hex(successor)].sort());
    const sample = bodies[199]?.access_token ?? '';
    expect(await bearerStatuses(sample)).toEqual([200, 200]);
    clock.advance(LEEWAY_MS + 1);
    expect((await refreshTokenRequest(server, client, refreshToken)).status).toBe(400);
    expect((await refreshTokenRequest(server, client, successor)).status).toBe(400);
    expect(await bearerStatuses(sample)).toEqual([401, 401]);
  });

  /** Makes the database refuse one kind of write of a model's rows (a trigger), until the returned function is called. */
  async function refuse(write: 'insert' | 'update', model: string): Promise<() => Promise<void>> {
    const db = server.database.db;
    const name = `refuse_${write}_${model.toLowerCase()}`;
    if (dialect === 'postgres') {
      await db.raw(
        `create or replace function ${name}() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`,
      );
      await db.raw(
        `create trigger ${name} before ${write} on oidc_payloads for each row when (new.model = '${model}') execute function ${name}()`,
      );
      return async () => {
        await db.raw(`drop trigger ${name} on oidc_payloads`);
      };
    }
    await db.raw(
      `create trigger ${name} before ${write} on oidc_payloads when new.model = '${model}' begin select raise(abort, 'refused'); end`,
    );
    return async () => {
      await db.raw(`drop trigger ${name}`);
    };
  }

  it('writes a rotation whole or not at all: a successor the database refuses leaves the token usable, however late the retry', async () => {
    const { client, refreshToken } = await login();
    const allow = await refuse('insert', 'RefreshToken');
    let failed: Response;
    try {
      failed = await refreshTokenRequest(server, client, refreshToken);
    } finally {
      await allow();
    }
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ error: 'server_error' });
    expect((await refreshRow(server, refreshToken)).consumed_at).toBeNull();
    // Past the leeway, a consumed token would end the family; this one was never consumed.
    clock.advance(LEEWAY_MS + 1);
    const retried = await refreshTokenRequest(server, client, refreshToken);
    expect(retried.status).toBe(200);
    const { refresh_token: successor } = (await retried.json()) as { refresh_token: string };
    expect((await refreshRow(server, refreshToken)).consumed_at).not.toBeNull();
    expect(await refreshRow(server, successor)).toBeTruthy();
  });

  it('stores the consumption of a code the token endpoint refuses after redeeming it (a resource never granted)', async () => {
    const { client, result } = await authorize();
    const refused = await codeTokenRequest(server, client, result, { resource: 'https://elsewhere.example/' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: 'invalid_target' });
    // Nothing written after the consumption: it went out as the answer left, and the code is spent.
    const code = result.callback.searchParams.get('code') ?? '';
    const row = await server.database
      .db('oidc_payloads')
      .where({ model: 'AuthorizationCode', id: sha256Hex(code) })
      .first();
    expect(row?.consumed_at).not.toBeNull();
  });

  it('gives no tokens for a code whose consumption the database refuses, and the code stays redeemable', async () => {
    const { client, result } = await authorize();
    const redeem = () => codeTokenRequest(server, client, result);
    const allow = await refuse('update', 'AuthorizationCode');
    let refused: Response;
    try {
      refused = await redeem();
    } finally {
      await allow();
    }
    expect(refused.status).toBe(500);
    expect(await refused.text()).not.toContain('access_token');
    const redeemed = await redeem();
    expect(redeemed.status).toBe(200);
    expect(await redeemed.json()).toMatchObject({ access_token: expect.any(String), id_token: expect.any(String) });
    expect((await redeem()).status).toBe(400);
  });

  it('ends the family when an authorization code is redeemed twice', async () => {
    const { client, config, result, tokens } = await login();
    expect(await bearerStatuses(tokens.access_token)).toEqual([200, 200]);
    await expect(redeemCode(config, result)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await bearerStatuses(tokens.access_token)).toEqual([401, 401]);
    expect((await refreshTokenRequest(server, client, tokens.refresh_token ?? '')).status).toBe(400);
  });

  it('lets only the owning client introspect or revoke a refresh token, never another organization’s client', async () => {
    const { client, config, refreshToken } = await login();
    const other = await tenantWithTokens(server, `Other ${Math.random().toString(36).slice(2, 8)}`);
    const foreign = await registerClient(server, other.tokens.owner, other.organization.id, {
      kind: 'application',
      name: 'Foreign app',
      redirectUris: [REDIRECT],
      scopes: ['openid', 'offline_access'],
    });
    const foreignConfig = await discover(server, foreign);
    expect(await oidcClient.tokenIntrospection(foreignConfig, refreshToken)).toEqual({ active: false });
    await expect(oidcClient.tokenRevocation(foreignConfig, refreshToken)).rejects.toMatchObject({ error: 'invalid_request' });
    const own = await oidcClient.tokenIntrospection(config, refreshToken);
    expect(own).toMatchObject({ active: true, client_id: client.clientId, sub: admin.userId });
    // The refused revocation changed nothing.
    expect((await refreshTokenRequest(server, client, refreshToken)).status).toBe(200);
  });

  it('ends the access tokens of a refresh token revoked at the revocation endpoint (RFC 7009)', async () => {
    const { config, refreshToken, tokens } = await login();
    expect(await bearerStatuses(tokens.access_token)).toEqual([200, 200]);
    await oidcClient.tokenRevocation(config, refreshToken, { token_type_hint: 'refresh_token' });
    expect(await bearerStatuses(tokens.access_token)).toEqual([401, 401]);
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
