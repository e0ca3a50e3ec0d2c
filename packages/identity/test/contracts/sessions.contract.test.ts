import { newId } from '@idt/core';
import { seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexSessionStore } from '../../src/knex.js';
import type { NewSession, SessionStore } from '../../src/sessions/store.js';
import { after, describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const START = '2030-01-01T00:00:00.000Z';
const DAY = 86_400_000;

describeStoreContract('sessions', (world) => {
  let store: SessionStore;
  const sessions = () => {
    store ??= createKnexSessionStore(world().options);
    return store;
  };
  const newSession = (userId: string, createdAt = START, lifetimeMs = DAY): NewSession => ({
    id: newId(),
    userId,
    tokenHash: newId().replaceAll('-', ''),
    createdAt,
    expiresAt: after(createdAt, lifetimeMs),
    ipAddress: '203.0.113.7',
    userAgent: 'contract',
    amr: ['pwd'],
  });
  const insert = (session: NewSession) => sessions().transaction((tx) => tx.insert(session));
  const revokedAt = async (id: string) => (await world().db('identity_sessions').where({ id }).first('revoked_at'))?.revoked_at;

  itRunsOneUnitOfWork(world, sessions, {
    prepare: () => seedUser(world().db),
    write: (tx, probe, user) => tx.insert({ ...newSession(user.id), userAgent: probe }),
    written: async (probe) => (await world().db('identity_sessions').where({ user_agent: probe }).first('id')) !== undefined,
  });

  describe('lockUser', () => {
    it('answers whether the user exists, and with activeOnly whether they are active', async () => {
      const active = await seedUser(world().db);
      const deactivated = await seedUser(world().db, { status: 'deactivated' });
      const locks = await sessions().transaction(async (tx) => [
        await tx.lockUser(active.id, { activeOnly: true }),
        await tx.lockUser(deactivated.id, { activeOnly: true }),
        await tx.lockUser(deactivated.id),
        await tx.lockUser(newId()),
      ]);
      expect(locks).toEqual([true, false, true, false]);
    });
  });

  describe('reads', () => {
    it('finds a session by its token hash in any state, and lists the live ones newest first', async () => {
      const user = await seedUser(world().db);
      const first = newSession(user.id, START);
      const second = newSession(user.id, after(START, 1000));
      const expired = newSession(user.id, after(START, -2 * DAY));
      const revoked = newSession(user.id, after(START, 2000));
      for (const session of [first, second, expired, revoked]) await insert(session);
      await sessions().transaction((tx) => tx.revoke(user.id, revoked.id, 'logout', after(START, 3000)));

      expect(await sessions().findByTokenHash(revoked.tokenHash)).toEqual({
        id: revoked.id,
        userId: user.id,
        createdAt: revoked.createdAt,
        lastActivityAt: revoked.createdAt,
        expiresAt: revoked.expiresAt,
        revokedAt: after(START, 3000),
      });
      expect(await sessions().findByTokenHash('0'.repeat(64))).toBeUndefined();
      expect((await sessions().listActive(user.id, after(START, 5000))).map((session) => session.id)).toEqual([
        second.id,
        first.id,
      ]);
    });

    it('gives the live session ids oldest first, and every unrevoked one', async () => {
      const user = await seedUser(world().db);
      const older = newSession(user.id, START);
      const newer = newSession(user.id, after(START, 1000));
      const expired = newSession(user.id, after(START, -2 * DAY));
      for (const session of [newer, expired, older]) await insert(session);
      const [live, unrevoked] = await sessions().transaction(async (tx) => [
        await tx.liveIds(user.id, after(START, 5000)),
        await tx.unrevokedIds(user.id),
      ]);
      expect(live).toEqual([older.id, newer.id]);
      expect([...unrevoked].sort()).toEqual([older.id, newer.id, expired.id].sort());
    });
  });

  describe('revoke', () => {
    it('lets exactly one of several concurrent callers revoke a session, and writes its watermark', async () => {
      const user = await seedUser(world().db);
      const session = newSession(user.id);
      await insert(session);
      const at = after(START, 60_000);
      const won = await winners(
        Array.from({ length: 4 }, () => sessions().transaction((tx) => tx.revoke(user.id, session.id, 'revoked', at))),
      );
      expect(won).toBe(1);
      expect(await revokedAt(session.id)).toBeTruthy();
      expect(
        await world().db('identity_token_revocations').where({ subject_type: 'session', subject_id: session.id }).first(),
      ).toBeTruthy();
    });

    it("revokes no other user's session", async () => {
      const owner = await seedUser(world().db);
      const other = await seedUser(world().db);
      const session = newSession(owner.id);
      await insert(session);
      expect(await sessions().transaction((tx) => tx.revoke(other.id, session.id, 'revoked', START))).toBe(false);
      expect(await revokedAt(session.id)).toBeNull();
    });
  });

  describe('end', () => {
    it('ends the given sessions, keeps an earlier revocation, and writes nothing for an empty list', async () => {
      const user = await seedUser(world().db);
      const [a, b] = [newSession(user.id), newSession(user.id)];
      await insert(a);
      await insert(b);
      await sessions().transaction((tx) => tx.revoke(user.id, a.id, 'logout', START));
      await sessions().transaction((tx) => tx.end([a.id, b.id], 'evicted', after(START, 1000)));
      await sessions().transaction((tx) => tx.end([], 'evicted', after(START, 2000)));
      const rows = await world().db('identity_sessions').whereIn('id', [a.id, b.id]).select('id', 'revoked_reason');
      expect(Object.fromEntries(rows.map((row) => [row.id, row.revoked_reason]))).toEqual({
        [a.id]: 'logout',
        [b.id]: 'evicted',
      });
    });
  });

  describe('touch', () => {
    it('records activity at most once per interval, and not on a revoked session', async () => {
      const user = await seedUser(world().db);
      const session = newSession(user.id);
      await insert(session);
      const later = after(START, 120_000);
      expect(await sessions().touch(session.id, later, after(later, -60_000))).toBe(later);
      // Within the interval of that write: nothing is written, the last write is answered.
      expect(await sessions().touch(session.id, after(later, 1000), after(later, -59_000))).toBe(later);
      await sessions().transaction((tx) => tx.revoke(user.id, session.id, 'logout', later));
      expect(await sessions().touch(session.id, after(later, 120_000), after(later, 60_000))).toBeUndefined();
    });
  });

  describe('prune', () => {
    it('deletes the revoked and the expired sessions only', async () => {
      const user = await seedUser(world().db);
      const live = newSession(user.id, '2040-01-01T00:00:00.000Z');
      const expired = newSession(user.id, '2039-01-01T00:00:00.000Z');
      await insert(live);
      await insert(expired);
      expect(await sessions().prune('2040-01-01T12:00:00.000Z')).toBeGreaterThanOrEqual(1);
      expect(await sessions().findByTokenHash(expired.tokenHash)).toBeUndefined();
      expect(await sessions().findByTokenHash(live.tokenHash)).toBeDefined();
    });
  });
});
