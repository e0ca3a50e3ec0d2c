import {
  type BffSession,
  type BffSessionStore,
  bffConfigFromEnv,
  createBffCookies,
  createBffSessions,
  createMemoryBffSessionStore,
  RefreshLockTimeoutError,
  type RefreshOutcome,
} from '@idt/bff';
import { BFF_SESSIONS_TABLE, bffMigrations, createKnexBffSessionStore } from '@idt/bff/knex';
import { createManualClock, sha256Hex } from '@idt/core';
import { connectTestDatabase, createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OFFLINE_BFF_ENV } from './support.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');

let sequence = 0;
function session(overrides: Partial<BffSession> = {}): BffSession {
  sequence += 1;
  return {
    id: `session-${sequence}-${Math.random().toString(36).slice(2)}`,
    user: { sub: 'user-1', name: 'Ada Admin', email: 'ada@example.com', orgId: 'org-1', orgName: 'Acme', roles: ['owner'] },
    sid: 'sid-a',
    accessToken: `access-${sequence}`,
    accessTokenExpiresAt: T0 + 900_000,
    refreshToken: `refresh-${sequence}`,
    idToken: `id-${sequence}`,
    csrfToken: `csrf-${sequence}`,
    createdAt: T0,
    expiresAt: T0 + 86_400_000,
    ...overrides,
  };
}

/** A deferred promise: the test decides when it settles. */
function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** The contract every BFF session store meets. */
function storeContract(make: () => BffSessionStore) {
  it('creates and reads a session until it expires', async () => {
    const store = make();
    const created = session();
    await store.create(created);
    expect(await store.read(created.id, T0)).toEqual(created);
    expect(await store.read(created.id, created.expiresAt - 1)).toEqual(created);
    expect(await store.read(created.id, created.expiresAt)).toBeUndefined();
    expect(await store.read('unknown', T0)).toBeUndefined();
  });

  it('refuses a second session with a taken id, keeping the stored one', async () => {
    const store = make();
    const created = session();
    await store.create(created);
    await expect(store.create({ ...session(), id: created.id })).rejects.toThrow();
    expect(await store.read(created.id, T0)).toEqual(created);
  });

  it('keeps null members and an empty role list', async () => {
    const store = make();
    const bare = session({
      user: { sub: 'user-2', name: null, email: null, orgId: null, orgName: null, roles: [] },
      sid: null,
      refreshToken: null,
      idToken: null,
    });
    await store.create(bare);
    expect(await store.read(bare.id, T0)).toEqual(bare);
  });

  it('updates the tokens of a live session, and nothing once it is gone', async () => {
    const store = make();
    const created = session();
    await store.create(created);
    const refreshed = {
      ...created,
      accessToken: 'access-new',
      refreshToken: 'refresh-new',
      accessTokenExpiresAt: T0 + 1_800_000,
    };
    expect(await store.update(refreshed)).toBe(true);
    expect(await store.read(created.id, T0)).toEqual(refreshed);
    expect(await store.destroy(created.id)).toBe(true);
    expect(await store.destroy(created.id)).toBe(false);
    expect(await store.update({ ...refreshed, accessToken: 'access-newer' })).toBe(false);
    expect(await store.read(created.id, T0)).toBeUndefined();
  });

  it('revokes by provider session id and by subject', async () => {
    const store = make();
    const sub = `user-${Math.random()}`;
    const user = { sub, name: null, email: null, orgId: null, orgName: null, roles: [] };
    const a1 = session({ sid: `a-${sub}`, user });
    const a2 = session({ sid: `a-${sub}`, user });
    const b = session({ sid: `b-${sub}`, user });
    const other = session({ sid: `c-${sub}` });
    for (const s of [a1, a2, b, other]) await store.create(s);
    expect(await store.revokeBySid(`a-${sub}`)).toBe(2);
    expect(await store.revokeBySid(`a-${sub}`)).toBe(0);
    expect(await store.read(a1.id, T0)).toBeUndefined();
    expect(await store.read(b.id, T0)).toBeDefined();
    expect(await store.revokeBySubject(sub)).toBe(1);
    expect(await store.read(b.id, T0)).toBeUndefined();
    expect(await store.read(other.id, T0)).toBeDefined();
  });

  it('prunes expired sessions only', async () => {
    const store = make();
    await store.prune(T0 + 365 * 86_400_000);
    const short = session({ expiresAt: T0 + 1000 });
    const long = session();
    await store.create(short);
    await store.create(long);
    expect(await store.prune(T0 + 999)).toBe(0);
    expect(await store.prune(T0 + 1000)).toBe(1);
    expect(await store.read(long.id, T0 + 1000)).toBeDefined();
  });

  it('runs one refresh-locked function at a time per session', async () => {
    const store = make();
    const created = session();
    await store.create(created);
    let active = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 5 }, (_, index) =>
        store.withRefreshLock(created.id, async () => {
          active += 1;
          most = Math.max(most, active);
          await new Promise((resolve) => setImmediate(resolve));
          order.push(index);
          active -= 1;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(order).toHaveLength(5);
    // A failing holder releases the lock.
    await expect(store.withRefreshLock(created.id, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await store.withRefreshLock(created.id, async () => 'next')).toBe('next');
  });

  it('runs the refresh-locked function of a session that is gone (it finds nothing to refresh)', async () => {
    const store = make();
    const created = session();
    await store.create(created);
    await store.destroy(created.id);
    expect(await store.withRefreshLock(created.id, async () => store.read(created.id, T0))).toBeUndefined();
    expect(await store.withRefreshLock('never-created', async () => 'ran')).toBe('ran');
  });
}

describe('memory BFF session store', () => {
  storeContract(() => createMemoryBffSessionStore());
});

describe.each(testDialects())('knex BFF session store on %s', (dialect) => {
  let database: TestDatabase;
  let second: TestDatabase;
  const keyring = bffConfigFromEnv(OFFLINE_BFF_ENV).cookie.keyring;
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [bffMigrations]);
    second = connectTestDatabase(database);
  });
  afterAll(async () => {
    await second?.destroy();
    await database?.destroy();
  });

  storeContract(() => createKnexBffSessionStore({ db: database.db, secrets: keyring }));

  it('keys rows by the SHA-256 of the session id and keeps no token in the clear', async () => {
    const store = createKnexBffSessionStore({ db: database.db, secrets: keyring });
    const created = session({ accessToken: 'eyJ-access-secret', refreshToken: 'refresh-secret', idToken: 'eyJ-id-secret' });
    await store.create(created);
    const rows = await database.db(BFF_SESSIONS_TABLE).where({ id_hash: sha256Hex(created.id) });
    expect(rows).toHaveLength(1);
    const dump = JSON.stringify(rows);
    for (const secret of [created.id, created.accessToken, created.refreshToken, created.idToken, created.csrfToken]) {
      expect(dump).not.toContain(secret);
    }
    expect(rows[0]).toMatchObject({ sub: 'user-1', sid: 'sid-a', key_id: 'default' });
  });

  it('opens tokens sealed under an older key while it is configured, and re-seals them under the current one on update', async () => {
    const oldStore = createKnexBffSessionStore({ db: database.db, secrets: 'o'.repeat(32) });
    const created = session();
    await oldStore.create(created);
    const rotated = {
      currentKeyId: 'k2',
      secrets: new Map([
        ['k2', 'n'.repeat(32)],
        ['default', 'o'.repeat(32)],
      ]),
    };
    const store = createKnexBffSessionStore({ db: database.db, secrets: rotated });
    expect(await store.read(created.id, T0)).toEqual(created);
    await store.update({ ...created, accessToken: 'rotated' });
    expect(
      (
        await database
          .db(BFF_SESSIONS_TABLE)
          .where({ id_hash: sha256Hex(created.id) })
          .first()
      ).key_id,
    ).toBe('k2');
    // Once the old secret is dropped, sessions it sealed cannot be opened (they are treated as gone).
    const other = session();
    await oldStore.create(other);
    const retired = createKnexBffSessionStore({ db: database.db, secrets: 'n'.repeat(32) });
    expect(await retired.read(other.id, T0)).toBeUndefined();
  });

  it('serializes the refresh lock across two instances sharing the database', async () => {
    const a = createKnexBffSessionStore({ db: database.db, secrets: keyring });
    const b = createKnexBffSessionStore({ db: second.db, secrets: keyring, lockPollMs: 5 });
    const created = session();
    await a.create(created);
    const release = deferred();
    const entered = deferred();
    const events: string[] = [];
    const first = a.withRefreshLock(created.id, async () => {
      events.push('a:start');
      entered.resolve();
      await release.promise;
      events.push('a:end');
    });
    await entered.promise;
    const secondCall = b.withRefreshLock(created.id, async () => {
      events.push('b:start');
    });
    // b polls while a holds the lease: give it a few polls, then let a finish.
    await vi.waitFor(async () => {
      const row = await database
        .db(BFF_SESSIONS_TABLE)
        .where({ id_hash: sha256Hex(created.id) })
        .first();
      expect(row.lock_owner).toBeTruthy();
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(events).toEqual(['a:start']);
    release.resolve();
    await Promise.all([first, secondCall]);
    expect(events).toEqual(['a:start', 'a:end', 'b:start']);
    const row = await database
      .db(BFF_SESSIONS_TABLE)
      .where({ id_hash: sha256Hex(created.id) })
      .first();
    expect(row.lock_owner).toBeNull();
  });

  it('takes over a lapsed lease, and gives up on a live one after the bounded wait', async () => {
    const clock = createManualClock(T0);
    const created = session();
    const store = createKnexBffSessionStore({ db: database.db, secrets: keyring, clock, lockWaitMs: 60, lockPollMs: 5 });
    await store.create(created);
    // An instance that crashed while holding the lease.
    await database
      .db(BFF_SESSIONS_TABLE)
      .where({ id_hash: sha256Hex(created.id) })
      .update({ lock_owner: 'ghost', lock_until: new Date(T0 + 10_000).toISOString() });
    await expect(store.withRefreshLock(created.id, async () => 'ran')).rejects.toBeInstanceOf(RefreshLockTimeoutError);
    clock.advance(10_001);
    expect(await store.withRefreshLock(created.id, async () => 'ran')).toBe('ran');
    // A session that is gone has nothing to lock: the function runs (and finds no session).
    expect(await store.withRefreshLock('gone', async () => 'ran')).toBe('ran');
  });

  it('refreshes once when two BFF instances find one session due at the same time', async () => {
    const clock = createManualClock(T0);
    const config = bffConfigFromEnv(OFFLINE_BFF_ENV);
    const cookies = createBffCookies(config, clock);
    const provider = rotatingProvider('refresh-0');
    const storeA = createKnexBffSessionStore({ db: database.db, secrets: keyring, lockPollMs: 5 });
    const storeB = createKnexBffSessionStore({ db: second.db, secrets: keyring, lockPollMs: 5 });
    let waitingOnB = 0;
    const countingB: BffSessionStore = {
      ...storeB,
      withRefreshLock: (id, fn) => {
        waitingOnB += 1;
        return storeB.withRefreshLock(id, fn);
      },
    };
    const instanceA = createBffSessions({ store: storeA, cookies, refresher: provider, sessionTtlSeconds: 86_400, clock });
    const instanceB = createBffSessions({ store: countingB, cookies, refresher: provider, sessionTtlSeconds: 86_400, clock });
    const { session: created, setCookie } = await instanceA.create({
      user: { sub: 'user-1', name: null, email: null, orgId: null, orgName: null, roles: [] },
      sid: 'sid-1',
      accessToken: 'access-0',
      expiresInSeconds: 900,
      refreshToken: 'refresh-0',
      idToken: 'id-0',
    });
    const headers = new Headers({ cookie: setCookie.split(';')[0] as string });
    clock.advance(900_000 - 30_000);
    provider.hold();
    const fromA = Array.from({ length: 10 }, () => instanceA.current(headers));
    await vi.waitFor(() => expect(provider.calls).toBe(1));
    const fromB = Array.from({ length: 10 }, () => instanceB.current(headers));
    await vi.waitFor(() => expect(waitingOnB).toBe(1));
    await new Promise((resolve) => setTimeout(resolve, 30));
    provider.release();
    const results = await Promise.all([...fromA, ...fromB]);
    expect(provider.calls).toBe(1);
    for (const result of results) expect(result.session?.accessToken).toBe('access-1');
    expect((await storeA.read(created.id, clock.now().getTime()))?.refreshToken).toBe('refresh-1');
  });
});

/** A provider whose refresh tokens rotate: a redeemed one is refused (as a replay after the leeway is). */
function rotatingProvider(first: string) {
  let live = first;
  let generation = 0;
  let gate: ReturnType<typeof deferred> | undefined;
  return {
    calls: 0,
    hold() {
      gate = deferred();
    },
    release() {
      gate?.resolve();
      gate = undefined;
    },
    async refresh(refreshToken: string): Promise<RefreshOutcome> {
      this.calls += 1;
      await gate?.promise;
      if (refreshToken !== live)
        return { kind: 'refused', error: Object.assign(new Error('grant request is invalid'), { error: 'invalid_grant' }) };
      generation += 1;
      live = `refresh-${generation}`;
      return {
        kind: 'refreshed',
        tokens: {
          accessToken: `access-${generation}`,
          expiresInSeconds: 900,
          refreshToken: live,
          idToken: undefined,
          claims: undefined,
        },
      };
    },
  };
}

describe('BFF sessions (refresh rules)', () => {
  const config = bffConfigFromEnv(OFFLINE_BFF_ENV);

  async function setup(refresher: { refresh(token: string): Promise<RefreshOutcome> }) {
    const clock = createManualClock(T0);
    const store = createMemoryBffSessionStore();
    const cookies = createBffCookies(config, clock);
    const sessions = createBffSessions({ store, cookies, refresher, sessionTtlSeconds: 86_400, clock });
    const { session: created, setCookie } = await sessions.create({
      user: { sub: 'user-1', name: 'Ada', email: null, orgId: null, orgName: null, roles: [] },
      sid: 'sid-1',
      accessToken: 'access-0',
      expiresInSeconds: 900,
      refreshToken: 'refresh-0',
      idToken: 'id-0',
    });
    return { clock, store, cookies, sessions, created, headers: new Headers({ cookie: setCookie.split(';')[0] as string }) };
  }

  it('uses the access token as is until 60 seconds before it expires', async () => {
    const provider = rotatingProvider('refresh-0');
    const { clock, sessions, headers } = await setup(provider);
    clock.advance(900_000 - 60_001);
    expect((await sessions.current(headers)).session?.accessToken).toBe('access-0');
    expect(provider.calls).toBe(0);
    clock.advance(1);
    expect((await sessions.current(headers)).session?.accessToken).toBe('access-1');
    expect(provider.calls).toBe(1);
  });

  it('refreshes once for 20 concurrent callers and stores the rotated tokens before answering', async () => {
    const provider = rotatingProvider('refresh-0');
    const { clock, store, sessions, headers, created } = await setup(provider);
    clock.advance(900_000 - 30_000);
    const results = await Promise.all(Array.from({ length: 20 }, () => sessions.current(headers)));
    expect(provider.calls).toBe(1);
    for (const result of results) expect(result.session).toMatchObject({ accessToken: 'access-1', refreshToken: 'refresh-1' });
    expect(await store.read(created.id, clock.now().getTime())).toMatchObject({
      accessToken: 'access-1',
      refreshToken: 'refresh-1',
      accessTokenExpiresAt: clock.now().getTime() + 900_000,
    });
  });

  it('forces a refresh on request, unless another caller refreshed meanwhile', async () => {
    const provider = rotatingProvider('refresh-0');
    const { sessions, headers } = await setup(provider);
    expect((await sessions.current(headers, { forceRefresh: true })).session?.accessToken).toBe('access-1');
    expect(provider.calls).toBe(1);
  });

  it('ends the session when the provider refuses the refresh', async () => {
    const provider = rotatingProvider('spent');
    const { clock, store, sessions, headers, created, cookies } = await setup(provider);
    clock.advance(900_000);
    const results = await Promise.all([sessions.current(headers), sessions.current(headers)]);
    for (const result of results) {
      expect(result).toEqual({ session: null, code: 'Bff.SessionRefreshFailed', setCookie: [cookies.clearSession()] });
    }
    expect(provider.calls).toBe(1);
    expect(await store.read(created.id, clock.now().getTime())).toBeUndefined();
    // A late caller gets the same answer for a while, then the plain one.
    expect(await sessions.current(headers)).toMatchObject({ session: null, code: 'Bff.SessionRefreshFailed' });
    clock.advance(60_000);
    expect(await sessions.current(headers)).toMatchObject({ session: null, code: 'Bff.SessionMissing' });
  });

  it('keeps the session when the provider cannot be reached: the old token while valid, then 503', async () => {
    let calls = 0;
    const { clock, store, sessions, headers, created } = await setup({
      refresh: async () => {
        calls += 1;
        return { kind: 'unavailable', error: new TypeError('fetch failed') };
      },
    });
    clock.advance(900_000 - 30_000);
    expect((await sessions.current(headers)).session?.accessToken).toBe('access-0');
    clock.advance(30_000);
    expect(await sessions.current(headers)).toEqual({ session: null, code: 'Bff.UpstreamUnavailable', setCookie: [] });
    expect(calls).toBe(2);
    expect(await store.read(created.id, clock.now().getTime())).toBeDefined();
  });

  it('ends a session without a refresh token once its access token has expired', async () => {
    const clock = createManualClock(T0);
    const store = createMemoryBffSessionStore();
    const sessions = createBffSessions({
      store,
      cookies: createBffCookies(config, clock),
      refresher: rotatingProvider('x'),
      sessionTtlSeconds: 86_400,
      clock,
    });
    const { setCookie } = await sessions.create({
      user: { sub: 'u', name: null, email: null, orgId: null, orgName: null, roles: [] },
      sid: null,
      accessToken: 'a',
      expiresInSeconds: 900,
      refreshToken: null,
      idToken: null,
    });
    const headers = new Headers({ cookie: setCookie.split(';')[0] as string });
    clock.advance(900_000 - 30_000);
    expect((await sessions.current(headers)).session?.accessToken).toBe('a');
    clock.advance(30_000);
    expect(await sessions.current(headers)).toMatchObject({ session: null, code: 'Bff.SessionRefreshFailed' });
  });

  it('compares CSRF tokens exactly; an empty token never matches', async () => {
    const { sessions, created } = await setup(rotatingProvider('refresh-0'));
    expect(sessions.csrfMatches(created, created.csrfToken)).toBe(true);
    expect(sessions.csrfMatches(created, `${created.csrfToken}x`)).toBe(false);
    expect(sessions.csrfMatches(created, '')).toBe(false);
    expect(sessions.csrfMatches(created, null)).toBe(false);
    expect(sessions.csrfMatches({ ...created, csrfToken: '' }, '')).toBe(false);
  });
});
