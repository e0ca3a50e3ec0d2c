import { newId } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { createKnexClientLockoutStore, createKnexClientStore } from '../../src/knex.js';
import type { ClientLockoutChange, ClientLockoutStore } from '../../src/policy/client-lockout.js';
import { storedClientRecord } from '../support/clients.js';
import { after, describeStoreContract } from './harness.js';

const START = '2030-01-01T00:00:00.000Z';

/**
 * The persisted failures and locks of the invalid-client lockout: failures
 * add up atomically, every change reaches every instance once it commits,
 * and what is recent is judged by the times given.
 */
describeStoreContract('client lockout', (world) => {
  let store: ClientLockoutStore | undefined;
  const lockouts = () => {
    store ??= createKnexClientLockoutStore(world().db, world().invalidator);
    return store;
  };
  const seedClient = async (status: 'active' | 'suspended' = 'active') => {
    const clientId = `app-${newId()}`;
    await createKnexClientStore(world().db, world().invalidator).insert(storedClientRecord({ clientId, status }));
    return clientId;
  };
  const totalOf = async (clientId: string) =>
    Number((await world().db('oidc_client_auth_failures').where({ client_id: clientId }).first('total'))?.total);

  describe('isRegistered', () => {
    it('answers whether a client of that id is registered, whatever its status', async () => {
      expect(await lockouts().isRegistered(await seedClient())).toBe(true);
      expect(await lockouts().isRegistered(await seedClient('suspended'))).toBe(true);
      expect(await lockouts().isRegistered(`app-${newId()}`)).toBe(false);
    });
  });

  describe('addFailure', () => {
    it('counts every one of concurrent failures, and keeps the time of the last one recorded', async () => {
      const clientId = await seedClient();
      expect(await lockouts().find(clientId)).toBeUndefined();
      await Promise.all(Array.from({ length: 6 }, () => lockouts().addFailure(clientId, new Date(START))));
      expect(await totalOf(clientId)).toBe(6);
      await lockouts().addFailure(clientId, after(START, 1000));
      expect(await totalOf(clientId)).toBe(7);
      expect(await lockouts().find(clientId)).toEqual({ clientId, lockedUntil: undefined, lastFailureAt: after(START, 1000) });
    });
  });

  describe('lock', () => {
    it('locks a client until the given time', async () => {
      const clientId = await seedClient();
      await lockouts().addFailure(clientId, new Date(START));
      await lockouts().lock(clientId, after(START, 300_000));
      expect(await lockouts().find(clientId)).toEqual({
        clientId,
        lockedUntil: after(START, 300_000),
        lastFailureAt: new Date(START),
      });
    });
  });

  describe('recent', () => {
    it('answers the clients locked after the given time or failed after the given time, and no other', async () => {
      const now = new Date('2031-06-01T00:00:00.000Z');
      const failedSince = after(now, -300_000);
      const [locked, lockExpired, failedRecently, failedLongAgo] = [
        await seedClient(),
        await seedClient(),
        await seedClient(),
        await seedClient(),
      ];
      await lockouts().addFailure(locked, after(failedSince, -1000));
      await lockouts().lock(locked, after(now, 1));
      await lockouts().addFailure(lockExpired, after(failedSince, -1000));
      await lockouts().lock(lockExpired, now);
      await lockouts().addFailure(failedRecently, after(failedSince, 1));
      await lockouts().addFailure(failedLongAgo, failedSince);
      const recent = (await lockouts().recent(now, failedSince)).map((row) => row.clientId);
      expect(recent).toEqual(expect.arrayContaining([locked, failedRecently]));
      expect(recent).not.toContain(lockExpired);
      expect(recent).not.toContain(failedLongAgo);
    });
  });

  describe('subscribe', () => {
    it('tells of every failure and lock once it commits (at least once), until unsubscribed', async () => {
      const [clientId, later] = [await seedClient(), await seedClient()];
      const changes: ClientLockoutChange[] = [];
      const seen = (of: string, list = changes) => [
        ...new Set(list.filter((change) => 'clientId' in change && change.clientId === of).map((change) => change.kind)),
      ];
      const unsubscribe = lockouts().subscribe((change) => changes.push(change));
      await lockouts().addFailure(clientId, new Date(START));
      await expect.poll(() => seen(clientId)).toEqual(['failed']);
      await lockouts().lock(clientId, after(START, 300_000));
      await expect.poll(() => seen(clientId)).toEqual(['failed', 'locked']);

      unsubscribe();
      // Another listener sees the next change: the unsubscribed one never does.
      const others: ClientLockoutChange[] = [];
      const stop = lockouts().subscribe((change) => others.push(change));
      await lockouts().addFailure(later, new Date(START));
      await expect.poll(() => seen(later, others)).toEqual(['failed']);
      stop();
      expect(seen(later)).toEqual([]);
    });
  });
});
