import { AsyncLocalStorage } from 'node:async_hooks';
import { sha256Hex } from '@idt/core';
import {
  bearer,
  bootstrapAdmin,
  createTestIdt,
  redeemCode,
  refreshTokenRequest,
  signInApplication,
  type TestAdmin,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import providerContext from 'oidc-provider/lib/helpers/als.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// oidc-provider's request context (`Provider.ctx`) is on only while the provider serves a request
// (patch 0 of packages/oidc/src/provider/patches.ts): on Node.js 20 and 22 it runs on async hooks, which
// would otherwise slow every promise of every request of the process once the provider served one.

/** Whether this Node.js runs AsyncLocalStorage on async hooks (Node.js 24 runs it on context frames: nothing to turn off). */
const hooked = typeof (new AsyncLocalStorage() as unknown as { enabled?: unknown }).enabled === 'boolean';
const contextOn = () => (providerContext as unknown as { enabled: boolean }).enabled;

describe.skipIf(!hooked).each(testDialects())("oidc-provider's request context on %s", (dialect) => {
  let server: TestIdt;
  let admin: TestAdmin;
  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A signed-in application: its client and the refresh token of a redeemed code. */
  async function signedIn() {
    const { client, config, result } = await signInApplication(server, admin);
    const tokens = await redeemCode(config, result);
    return { client, refreshToken: String(tokens.refresh_token), accessToken: tokens.access_token };
  }

  it('is off once the provider has answered: sign-in, code, refresh and API reads leave it off', async () => {
    const { client, refreshToken, accessToken } = await signedIn();
    const rotated = await refreshTokenRequest(server, client, refreshToken);
    expect(rotated.status).toBe(200);
    const me = await server.fetch('/v1/identity/users/me', { headers: bearer(accessToken) });
    expect(me.status).toBe(200);
    expect(contextOn()).toBe(false);
  });

  it('keeps each of overlapping provider requests in its own context to its end', async () => {
    // Four sign-ins: with the first test's, the administrator's five sessions (a sixth would end the oldest).
    const chains = await Promise.all(Array.from({ length: 4 }, () => signedIn()));
    // Rotations rely on their own request's context (the successor of the rotated token, the consumption
    // written with it): each chain rotates once, and a replay within the leeway gets that same successor.
    const rotate = () => Promise.all(chains.map(({ client, refreshToken }) => refreshTokenRequest(server, client, refreshToken)));
    const rotations = await rotate();
    expect(rotations.map((response) => response.status)).toEqual(chains.map(() => 200));
    const successors = await Promise.all(
      rotations.map(async (response) => ((await response.json()) as { refresh_token: string }).refresh_token),
    );
    expect(new Set(successors).size).toBe(chains.length);
    const replays = await rotate();
    const replayed = await Promise.all(
      replays.map(async (response) => ((await response.json()) as { refresh_token: string }).refresh_token),
    );
    expect(replayed).toEqual(successors);
    expect(contextOn()).toBe(false);
  });

  it.runIf(dialect === 'postgres')(
    'stays on while a provider request waits for the database, and goes off when it is answered',
    async () => {
      const [held, other] = await Promise.all([signedIn(), signedIn()]);
      // Another transaction locks the held chain's refresh token: its rotation waits on that row inside the provider's route.
      const lock = await server.database.db.transaction();
      try {
        await lock('oidc_payloads')
          .where({ model: 'RefreshToken', id: sha256Hex(held.refreshToken) })
          .forUpdate()
          .select('id');
        const waiting = refreshTokenRequest(server, held.client, held.refreshToken);
        for (let attempt = 0; !contextOn() && attempt < 400; attempt++) await new Promise((resolve) => setTimeout(resolve, 5));
        expect(contextOn()).toBe(true);
        // Meanwhile another rotation and an API read are answered, and the context stays on for the one still waiting.
        const rotated = await refreshTokenRequest(server, other.client, other.refreshToken);
        expect(rotated.status).toBe(200);
        expect((await server.fetch('/v1/identity/users/me', { headers: bearer(other.accessToken) })).status).toBe(200);
        expect(contextOn()).toBe(true);
        await lock.commit();
        const answer = await waiting;
        expect(answer.status).toBe(200);
        const successor = ((await answer.json()) as { refresh_token: string }).refresh_token;
        // Its replay within the leeway gets the same successor: the rotation had its own context throughout.
        const replay = await refreshTokenRequest(server, held.client, held.refreshToken);
        expect(((await replay.json()) as { refresh_token: string }).refresh_token).toBe(successor);
      } finally {
        if (!lock.isCompleted()) await lock.rollback();
      }
      expect(contextOn()).toBe(false);
    },
  );
});
