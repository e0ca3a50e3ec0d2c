import { newId } from '@idt/core';
import { seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexPasswordlessStore } from '../../src/knex.js';
import type { NewPasswordlessRequest, PasswordlessStore } from '../../src/passwordless/store.js';
import { after, describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';
const MINUTES_10 = 600_000;

describeStoreContract('passwordless', (world) => {
  let store: PasswordlessStore;
  const passwordless = () => {
    store ??= createKnexPasswordlessStore(world().options);
    return store;
  };
  const request = (
    userId: string,
    kind: 'link' | 'code',
    overrides: Partial<NewPasswordlessRequest> = {},
  ): NewPasswordlessRequest => ({
    id: newId(),
    userId,
    kind,
    codeHash: kind === 'code' ? `mac-${newId()}` : null,
    returnTo: kind === 'link' ? '/account' : null,
    createdAt: AT,
    expiresAt: after(AT, MINUTES_10),
    ...overrides,
  });
  const insert = (value: NewPasswordlessRequest) => passwordless().transaction((tx) => tx.insert(value));
  const consume = (id: string, kind: 'link' | 'code', at = after(AT, 1000)) =>
    passwordless().transaction((tx) => tx.consume(id, kind, at));

  itRunsOneUnitOfWork(world, passwordless, {
    prepare: () => seedUser(world().db),
    write: (tx, probe, user) => tx.insert(request(user.id, 'link', { returnTo: `/${probe}` })),
    written: async (probe) =>
      (await world()
        .db('identity_passwordless_requests')
        .where({ return_to: `/${probe}` })
        .first('id')) !== undefined,
  });

  describe('reads', () => {
    it('finds an active user by address, and the newest live code with attempts left', async () => {
      const user = await seedUser(world().db, { firstName: 'Ada' });
      const deactivated = await seedUser(world().db, { status: 'deactivated' });
      expect(await passwordless().findActiveUserByEmail(user.email)).toEqual({
        id: user.id,
        email: user.email,
        firstName: 'Ada',
      });
      expect(await passwordless().findActiveUserByEmail(deactivated.email)).toBeUndefined();
      const older = request(user.id, 'code', { createdAt: AT });
      const newer = request(user.id, 'code', { createdAt: after(AT, 1000) });
      await insert(older);
      await insert(newer);
      expect(await passwordless().findCode(user.id, after(AT, 2000), 5)).toEqual({
        id: newer.id,
        userId: user.id,
        codeHash: newer.codeHash,
      });
      expect(await passwordless().findCode(user.id, after(AT, MINUTES_10 + 1000), 5)).toBeUndefined();
    });
  });

  describe('retireCodes', () => {
    it("deletes the user's outstanding codes only", async () => {
      const user = await seedUser(world().db);
      const other = await seedUser(world().db);
      const code = request(user.id, 'code');
      const link = request(user.id, 'link');
      const othersCode = request(other.id, 'code');
      for (const value of [code, link, othersCode]) await insert(value);
      await passwordless().transaction((tx) => tx.retireCodes(user.id));
      expect(await passwordless().findCode(user.id, after(AT, 1000), 5)).toBeUndefined();
      expect(await passwordless().findCode(other.id, after(AT, 1000), 5)).toMatchObject({ id: othersCode.id });
      expect(await consume(link.id, 'link')).toEqual({ userId: user.id, returnTo: '/account' });
    });
  });

  describe('recordAttempt', () => {
    it('never counts more than maxAttempts attempts, concurrent ones included', async () => {
      const user = await seedUser(world().db);
      const code = request(user.id, 'code');
      await insert(code);
      const counted = await winners(Array.from({ length: 8 }, () => passwordless().recordAttempt(code.id, after(AT, 1000), 5)));
      expect(counted).toBe(5);
      expect(await passwordless().findCode(user.id, after(AT, 1000), 5)).toBeUndefined();
    });
  });

  describe('consume', () => {
    it('lets exactly one of several concurrent callers consume a request, of its kind only', async () => {
      const user = await seedUser(world().db);
      const link = request(user.id, 'link');
      await insert(link);
      expect(await consume(link.id, 'code')).toBeUndefined();
      const results = await Promise.all(Array.from({ length: 4 }, () => consume(link.id, 'link')));
      expect(results.filter((result) => result !== undefined)).toEqual([{ userId: user.id, returnTo: '/account' }]);
      expect(Boolean((await world().db('identity_users').where({ id: user.id }).first('email_verified'))?.email_verified)).toBe(
        true,
      );
    });

    it('consumes the request of a user deactivated since, signing no one in, and refuses an expired one', async () => {
      const { db } = world();
      const user = await seedUser(db);
      const link = request(user.id, 'link');
      const expired = request(user.id, 'link');
      await insert(link);
      await insert(expired);
      await db('identity_users').where({ id: user.id }).update({ status: 'deactivated' });
      expect(await consume(link.id, 'link')).toBeUndefined();
      expect((await db('identity_passwordless_requests').where({ id: link.id }).first('consumed_at'))?.consumed_at).toBeTruthy();
      expect(await consume(expired.id, 'link', after(AT, MINUTES_10))).toBeUndefined();
    });
  });

  describe('prune', () => {
    it('deletes consumed and expired requests only', async () => {
      const user = await seedUser(world().db);
      const live = request(user.id, 'link', { expiresAt: '2040-01-01T00:00:00.000Z' });
      const consumed = request(user.id, 'link');
      await insert(live);
      await insert(consumed);
      await consume(consumed.id, 'link');
      expect(await passwordless().prune(after(AT, 2000))).toBeGreaterThanOrEqual(1);
      expect(await world().db('identity_passwordless_requests').where({ id: consumed.id }).first()).toBeUndefined();
      expect(await world().db('identity_passwordless_requests').where({ id: live.id }).first()).toBeDefined();
    });
  });
});
