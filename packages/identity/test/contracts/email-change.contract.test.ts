import { newId } from '@idt/core';
import { seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { EmailChangeStore, NewEmailChange } from '../../src/email-change/store.js';
import { createKnexEmailChangeStore } from '../../src/knex.js';
import { after, describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';
const HOUR = 3_600_000;

describeStoreContract('email-change', (world) => {
  let store: EmailChangeStore;
  const changes = () => {
    store ??= createKnexEmailChangeStore(world().options);
    return store;
  };
  const change = (userId: string, newEmail = `new-${newId().slice(-12)}@example.com`): NewEmailChange => ({
    id: newId(),
    userId,
    newEmail,
    createdAt: AT,
    expiresAt: after(AT, HOUR),
  });
  const replace = (value: NewEmailChange) => changes().transaction((tx) => tx.replace(value));
  const matchOf = (value: NewEmailChange) => ({ changeId: value.id, userId: value.userId, newEmail: value.newEmail });

  itRunsOneUnitOfWork(world, changes, {
    prepare: () => seedUser(world().db),
    write: (tx, probe, user) => tx.replace(change(user.id, `${probe}@example.com`)),
    written: async (probe) =>
      (await world()
        .db('identity_email_changes')
        .where({ new_email: `${probe}@example.com` })
        .first('id')) !== undefined,
  });

  describe('reads', () => {
    it('finds the user, tells whether another account uses an address, and finds a change', async () => {
      const user = await seedUser(world().db, { firstName: 'Grace' });
      const other = await seedUser(world().db, { email: `Taken-${newId().slice(-8)}@example.com` });
      expect(await changes().findUser(user.id)).toEqual({ id: user.id, email: user.email, firstName: 'Grace', status: 'active' });
      expect(await changes().findUser(newId())).toBeUndefined();
      expect(await changes().isAddressTaken(other.email.toLowerCase(), user.id)).toBe(true);
      expect(await changes().isAddressTaken(other.email.toLowerCase(), other.id)).toBe(false);
      const recorded = change(user.id);
      await replace(recorded);
      expect(await changes().find(recorded.id)).toEqual({ ...recorded, consumedAt: null });
    });
  });

  describe('lockUser and replace', () => {
    it('locks active users only with activeOnly, and a new change supersedes the earlier one', async () => {
      const user = await seedUser(world().db);
      const deactivated = await seedUser(world().db, { status: 'deactivated' });
      expect(
        await changes().transaction(async (tx) => [
          await tx.lockUser(user.id, { activeOnly: true }),
          await tx.lockUser(deactivated.id, { activeOnly: true }),
        ]),
      ).toEqual([true, false]);
      const first = change(user.id);
      const second = change(user.id);
      await replace(first);
      await replace(second);
      expect(await changes().find(first.id)).toBeUndefined();
      expect(await changes().find(second.id)).toBeDefined();
    });
  });

  describe('consume', () => {
    it('lets exactly one of several concurrent callers consume a change', async () => {
      const user = await seedUser(world().db);
      const recorded = change(user.id);
      await replace(recorded);
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () => changes().transaction((tx) => tx.consume(matchOf(recorded), after(AT, 1000)))),
      );
      expect(outcomes.sort()).toEqual(['consumed', 'invalid', 'invalid', 'invalid']);
      expect((await changes().find(recorded.id))?.consumedAt).toBe(after(AT, 1000));
    });

    it('deletes an expired change, and answers invalid for a change that does not match', async () => {
      const user = await seedUser(world().db);
      const recorded = change(user.id);
      await replace(recorded);
      expect(await changes().transaction((tx) => tx.consume({ ...matchOf(recorded), newEmail: 'other@example.com' }, AT))).toBe(
        'invalid',
      );
      expect(await changes().transaction((tx) => tx.consume(matchOf(recorded), after(AT, HOUR)))).toBe('expired');
      expect(await changes().find(recorded.id)).toBeUndefined();
    });
  });

  describe('setAddress', () => {
    it('moves an active user to the new address (verified), and refuses a deactivated user or a taken address', async () => {
      const { db } = world();
      const user = await seedUser(db);
      const deactivated = await seedUser(db, { status: 'deactivated' });
      const taken = await seedUser(db);
      const newEmail = `moved-${newId().slice(-8)}@example.com`;
      expect(await changes().transaction((tx) => tx.setAddress(user.id, newEmail, AT))).toEqual({
        outcome: 'changed',
        oldEmail: user.email,
      });
      expect(await db('identity_users').where({ id: user.id }).first('email', 'username')).toEqual({
        email: newEmail,
        username: newEmail,
      });
      expect(Boolean((await db('identity_users').where({ id: user.id }).first('email_verified'))?.email_verified)).toBe(true);
      expect(await changes().transaction((tx) => tx.setAddress(deactivated.id, 'x@example.com', AT))).toEqual({
        outcome: 'inactive',
      });
      // A taken address aborts the transaction on PostgreSQL: the caller throws to roll it back.
      await expect(
        changes().transaction(async (tx) => {
          const outcome = await tx.setAddress(user.id, taken.email, AT);
          throw new Error(outcome.outcome);
        }),
      ).rejects.toThrow('taken');
      expect((await db('identity_users').where({ id: user.id }).first('email'))?.email).toBe(newEmail);
    });
  });

  describe('prune', () => {
    it('deletes consumed and expired changes only', async () => {
      const user = await seedUser(world().db);
      const other = await seedUser(world().db);
      const consumed = change(user.id);
      const live = { ...change(other.id), expiresAt: '2040-01-01T00:00:00.000Z' };
      await replace(consumed);
      await replace(live);
      await changes().transaction((tx) => tx.consume(matchOf(consumed), AT));
      expect(await changes().prune(after(AT, 1000))).toBeGreaterThanOrEqual(1);
      expect(await changes().find(consumed.id)).toBeUndefined();
      expect(await changes().find(live.id)).toBeDefined();
    });
  });
});
