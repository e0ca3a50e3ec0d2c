import { createManualClock, newId, sha256Hex, silentLogger } from '@idt/core';
import { CacheNamespaces, OidcSessionEndedEvent } from '@idt/identity';
import { REVOKE_ALL } from '@idt/identity/knex';
import { describe, expect, it } from 'vitest';
import { createKnexProviderStateStore } from '../../src/knex/provider-state-store.js';
import { createSessionEnd } from '../../src/logout/session-end.js';
import type { ProviderStateStore } from '../../src/provider/store.js';
import { after, describeStoreContract, itRunsOneUnitOfWork, providerAdapter, winners } from './harness.js';

const START = '2030-01-01T00:00:00.000Z';

/**
 * The provider's sessions and token families beyond the adapter: the reads
 * logout and eviction start from, and the primitives session-end runs in one
 * transaction (delete sessions, delete a grant's rows, refuse a grant's
 * access tokens), beside the events and evictions it decides on.
 */
describeStoreContract('provider state', (world) => {
  let store: ProviderStateStore | undefined;
  const providerState = () => {
    store ??= createKnexProviderStateStore(world().options);
    return store;
  };
  const clock = createManualClock(START);
  /** The provider's own writes, as the rows the store reads and deletes. */
  const adapter = providerAdapter(world, clock);
  const seedSession = async (userId: string, sid: string, grants: Record<string, string>) => {
    const id = newId();
    const authorizations = Object.fromEntries(Object.entries(grants).map(([clientId, grantId]) => [clientId, { sid, grantId }]));
    await adapter('Session').upsert(id, { uid: newId(), accountId: userId, authorizations }, 3600);
    return id;
  };
  const seedGrant = async (userId: string, clientId: string, grantId = newId()) => {
    await adapter('Grant').upsert(grantId, { accountId: userId, clientId }, 3600);
    await adapter('AuthorizationCode').upsert(`code-${grantId}`, { jti: `code-${grantId}`, grantId }, 60);
    await adapter('RefreshToken').upsert(`refresh-${grantId}`, { jti: `refresh-${grantId}`, grantId }, 3600);
    return grantId;
  };
  const rowsOfGrant = async (grantId: string) =>
    Number((await world().db('oidc_payloads').where({ grant_id: grantId }).count({ count: '*' }).first())?.count);
  const watermark = (grantId: string) =>
    world().db('identity_token_revocations').where({ subject_type: 'grant', subject_id: grantId }).first();

  itRunsOneUnitOfWork(world, providerState, {
    prepare: async () => undefined,
    write: (tx, probe) => tx.refuseGrants([probe], new Date(START)),
    written: async (probe) => (await watermark(probe)) !== undefined,
    writesNoEventOfItsOwn: true,
  });

  describe('findSessions', () => {
    it('finds the provider sessions of an identity session, of a user, or of both, with their clients and grants', async () => {
      const [user, other] = [newId(), newId()];
      const first = await seedSession(user, 'sid-a', { app: 'grant-a1', spa: 'grant-a2' });
      const second = await seedSession(user, 'sid-b', { app: 'grant-b1' });
      await seedSession(other, 'sid-c', { app: 'grant-c1' });

      expect(await providerState().findSessions({ sessionId: 'sid-a' })).toEqual([
        { id: first, userId: user, sessionId: 'sid-a', clientIds: ['app', 'spa'], grantIds: ['grant-a1', 'grant-a2'] },
      ]);
      expect((await providerState().findSessions({ userId: user })).map((session) => session.id).sort()).toEqual(
        [first, second].sort(),
      );
      expect((await providerState().findSessions({ sessionId: 'sid-b', userId: user })).map((session) => session.id)).toEqual([
        second,
      ]);
      // Another user's session is not found under this user's, even by its session id.
      expect(await providerState().findSessions({ sessionId: 'sid-c', userId: user })).toEqual([]);
      // No filter finds nothing rather than everything.
      expect(await providerState().findSessions({})).toEqual([]);
    });
  });

  describe('grantIdsOf', () => {
    it("answers a user's grants once each, with one client's only when it is given, and no other user's", async () => {
      const [user, other] = [newId(), newId()];
      const app = await seedGrant(user, 'app');
      const spa = await seedGrant(user, 'spa');
      await seedGrant(other, 'app');
      expect((await providerState().grantIdsOf(user)).sort()).toEqual([app, spa].sort());
      expect(await providerState().grantIdsOf(user, 'spa')).toEqual([spa]);
      expect(await providerState().grantIdsOf(user, 'unknown')).toEqual([]);
      expect(await providerState().grantIdsOf(newId())).toEqual([]);
    });
  });

  describe('deleteSessions', () => {
    it('deletes the given provider sessions only, answers how many, and writes nothing for an empty list', async () => {
      const user = newId();
      const [ended, kept] = [await seedSession(user, 'sid-d', {}), await seedSession(user, 'sid-e', {})];
      // A row of another model with the same id is not a session.
      await adapter('Interaction').upsert(ended, { uid: newId() }, 60);
      const deleted = await providerState().transaction((tx) => tx.deleteSessions([ended, newId()]));
      expect(deleted).toBe(1);
      expect(await adapter('Session').find(ended)).toBeUndefined();
      expect(await adapter('Session').find(kept)).toBeDefined();
      expect(await adapter('Interaction').find(ended)).toBeDefined();
      expect(await providerState().transaction((tx) => tx.deleteSessions([]))).toBe(0);
    });
  });

  describe('deleteGrantRows', () => {
    it('deletes every row of the grants (grant, codes, refresh tokens) and no other grant', async () => {
      const user = newId();
      const [ended, kept] = [await seedGrant(user, 'app'), await seedGrant(user, 'app')];
      expect(await rowsOfGrant(ended)).toBe(3);
      const deleted = await providerState().transaction((tx) => tx.deleteGrantRows([ended, ended]));
      expect(deleted).toBe(3);
      expect(await rowsOfGrant(ended)).toBe(0);
      expect(await adapter('RefreshToken').find(`refresh-${ended}`)).toBeUndefined();
      expect(
        await world()
          .db('oidc_payloads')
          .where({ model: 'RefreshToken', id: sha256Hex(`refresh-${kept}`) })
          .first(),
      ).toBeTruthy();
      expect(await rowsOfGrant(kept)).toBe(3);
      expect(await providerState().transaction((tx) => tx.deleteGrantRows([]))).toBe(0);
    });

    it('lets exactly one of several concurrent transactions delete a grant', async () => {
      const grantId = newId();
      await adapter('Grant').upsert(grantId, { accountId: newId(), clientId: 'app' }, 3600);
      const won = await winners(
        Array.from({ length: 4 }, () => providerState().transaction(async (tx) => (await tx.deleteGrantRows([grantId])) === 1)),
      );
      expect(won).toBe(1);
      expect(await rowsOfGrant(grantId)).toBe(0);
    });
  });

  describe('refuseGrants', () => {
    it("writes a 'refuse every token' watermark per grant at the given time, and nothing for an empty list", async () => {
      const [first, second] = [newId(), newId()];
      const at = after(START, 60_000);
      await providerState().transaction((tx) => tx.refuseGrants([first, second], at));
      for (const grantId of [first, second]) {
        const row = await watermark(grantId);
        expect(Number(row?.not_before)).toBe(REVOKE_ALL);
        expect(new Date(row?.created_at).toISOString()).toBe(at.toISOString());
      }
      const before = Number((await world().db('identity_token_revocations').count({ count: '*' }).first())?.count);
      await providerState().transaction((tx) => tx.refuseGrants([], at));
      expect(Number((await world().db('identity_token_revocations').count({ count: '*' }).first())?.count)).toBe(before);
    });

    it('evicts nothing by itself: the caller evicts the watermarks it wrote', async () => {
      const grantId = newId();
      await providerState().transaction((tx) => tx.refuseGrants([grantId], new Date(START)));
      expect(world().evicted.filter((eviction) => eviction.key === `grant:${grantId}`)).toEqual([]);
    });
  });

  describe('pruneFamilies', () => {
    it("forgets the grants' 'refuse every token' watermarks written before the given time only", async () => {
      const [old, recent] = [newId(), newId()];
      const cutoff = after('2031-01-01T00:00:00.000Z', 0);
      await providerState().transaction((tx) => tx.refuseGrants([old], after(cutoff, -1)));
      await providerState().transaction((tx) => tx.refuseGrants([recent], cutoff));
      // A session's watermark is not a token family's.
      const sessionId = newId();
      await world()
        .db('identity_token_revocations')
        .insert({
          subject_type: 'session',
          subject_id: sessionId,
          not_before: REVOKE_ALL,
          created_at: after(cutoff, -1).toISOString(),
        });

      expect(await providerState().pruneFamilies(cutoff)).toBeGreaterThanOrEqual(1);
      expect(await watermark(old)).toBeUndefined();
      expect(await watermark(recent)).toBeDefined();
      expect(
        await world().db('identity_token_revocations').where({ subject_type: 'session', subject_id: sessionId }).first(),
      ).toBeDefined();
    });
  });

  describe('pruneGrantContexts', () => {
    it('deletes the grant contexts expired by the given time, and keeps the later ones', async () => {
      const now = after('2032-01-01T00:00:00.000Z', 0);
      const context = (grantId: string, expiresAt: Date) => ({
        grant_id: grantId,
        organization_id: null,
        refresh_token_lifetime: 3600,
        created_at: START,
        expires_at: expiresAt.toISOString(),
      });
      const [expired, expiring, live] = [newId(), newId(), newId()];
      await world()
        .db('oidc_grant_contexts')
        .insert([context(expired, after(now, -1000)), context(expiring, now), context(live, after(now, 1))]);
      expect(await providerState().pruneGrantContexts(now)).toBeGreaterThanOrEqual(2);
      const left = await world().db('oidc_grant_contexts').whereIn('grant_id', [expired, expiring, live]).pluck('grant_id');
      expect(left).toEqual([live]);
    });
  });

  describe('as session-end runs it', () => {
    const sessionEnd = (state: ProviderStateStore) =>
      createSessionEnd({
        providerState: state,
        endIdentitySession: async () => undefined,
        findClient: async () => undefined,
        backchannel: { notify: async () => [], logoutToken: async () => '' },
        clock,
        logger: silentLogger,
      });

    it('ends the sessions and their grants in one transaction, and publishes and evicts what it ended on commit', async () => {
      const user = newId();
      const grantId = await seedGrant(user, 'app');
      const session = await seedSession(user, 'sid-f', { app: grantId });
      expect(await sessionEnd(providerState()).endSessions({ sessionId: 'sid-f' }, 'revoked')).toBe(1);
      expect(await adapter('Session').find(session)).toBeUndefined();
      expect(await rowsOfGrant(grantId)).toBe(0);
      expect(Number((await watermark(grantId))?.not_before)).toBe(REVOKE_ALL);
      expect((await world().events(OidcSessionEndedEvent.type)).filter((event) => event.sessionId === 'sid-f')).toEqual([
        { userId: user, sessionId: 'sid-f', clientIds: 'app', reason: 'revoked', endedAt: clock.now().toISOString() },
      ]);
      await expect
        .poll(() => world().evicted.filter((eviction) => eviction.key === `grant:${grantId}`))
        .toEqual([{ namespace: CacheNamespaces.revocations, key: `grant:${grantId}` }]);
    });

    it('leaves the sessions, the grants and the outbox as they were when the transaction fails', async () => {
      const user = newId();
      const grantId = await seedGrant(user, 'app');
      const session = await seedSession(user, 'sid-g', { app: grantId });
      // The outbox refuses the event: the deletions and the watermark written before it roll back with it.
      const failing: ProviderStateStore = {
        ...providerState(),
        transaction: (work) =>
          providerState().transaction((tx) =>
            work({ ...tx, publish: async () => Promise.reject(new Error('outbox unavailable')) }),
          ),
      };
      await expect(sessionEnd(failing).endSessions({ sessionId: 'sid-g' }, 'revoked')).rejects.toThrow('outbox unavailable');
      expect(await adapter('Session').find(session)).toBeDefined();
      expect(await rowsOfGrant(grantId)).toBe(3);
      expect(await watermark(grantId)).toBeUndefined();
      expect((await world().events(OidcSessionEndedEvent.type)).filter((event) => event.sessionId === 'sid-g')).toEqual([]);
      expect(world().evicted.filter((eviction) => eviction.key === `grant:${grantId}`)).toEqual([]);
    });

    it("refuses a grant's access tokens for family revocation, and evicts its watermark on commit", async () => {
      const grantId = newId();
      const at = after(START, 5_000);
      await sessionEnd(providerState()).refuseAccessTokens(grantId, at);
      expect(Number((await watermark(grantId))?.not_before)).toBe(REVOKE_ALL);
      await expect
        .poll(() => world().evicted.filter((eviction) => eviction.key === `grant:${grantId}`))
        .toEqual([{ namespace: CacheNamespaces.revocations, key: `grant:${grantId}` }]);
    });
  });
});
