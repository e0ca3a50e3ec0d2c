import { newId } from '@idt/core';
import { seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { EmailVerificationStore, NewEmailVerification } from '../../src/email-verification/store.js';
import { createKnexEmailVerificationStore } from '../../src/knex.js';
import { after, describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';
const DAY = 86_400_000;

describeStoreContract('email-verification', (world) => {
  let store: EmailVerificationStore;
  const verifications = () => {
    store ??= createKnexEmailVerificationStore(world().options);
    return store;
  };
  const link = (
    user: { id: string; email: string },
    tokenHash = newId().replace(/-/g, '').padEnd(64, '0'),
  ): NewEmailVerification => ({
    id: newId(),
    userId: user.id,
    email: user.email.toLowerCase(),
    tokenHash,
    createdAt: AT,
    expiresAt: after(AT, DAY),
  });
  const replace = (value: NewEmailVerification) => verifications().transaction((tx) => tx.replace(value));
  const matchOf = (value: NewEmailVerification) => ({ verificationId: value.id, tokenHash: value.tokenHash });

  itRunsOneUnitOfWork(world, verifications, {
    prepare: () => seedUser(world().db),
    write: (tx, probe, user) => tx.replace({ ...link(user), id: newId(), email: `${probe}@example.com` }),
    written: async (probe) =>
      (await world()
        .db('identity_email_verifications')
        .where({ email: `${probe}@example.com` })
        .first('id')) !== undefined,
  });

  describe('reads', () => {
    it('finds users by id and address, and a link with its hash', async () => {
      const user = await seedUser(world().db, { firstName: 'Vera' });
      const expected = { id: user.id, email: user.email, firstName: 'Vera', status: 'active', emailVerified: false };
      expect(await verifications().findUser(user.id)).toEqual(expected);
      expect(await verifications().findUserByEmail(user.email)).toEqual(expected);
      expect(await verifications().findUser(newId())).toBeUndefined();
      expect(await verifications().findUserByEmail('nobody@example.com')).toBeUndefined();
      const recorded = link(user);
      await replace(recorded);
      const { tokenHash, ...rest } = recorded;
      expect(await verifications().find(recorded.id)).toEqual({ ...rest, tokenHash, consumedAt: null });
    });
  });

  describe('lockUser, hasPending and replace', () => {
    it('locks and reads active users only; a new link replaces the unused earlier one', async () => {
      const user = await seedUser(world().db);
      const deactivated = await seedUser(world().db, { status: 'deactivated' });
      const locked = await verifications().transaction(async (tx) => [
        await tx.lockUser(user.id),
        await tx.lockUser(deactivated.id),
      ]);
      expect(locked).toEqual([expect.objectContaining({ id: user.id, status: 'active' }), undefined]);
      const first = link(user);
      const second = link(user);
      expect(await verifications().transaction((tx) => tx.hasPending(user.id, AT))).toBe(false);
      await replace(first);
      expect(await verifications().transaction((tx) => tx.hasPending(user.id, AT))).toBe(true);
      expect(await verifications().transaction((tx) => tx.hasPending(user.id, after(AT, DAY)))).toBe(false);
      await replace(second);
      expect(await verifications().find(first.id)).toBeUndefined();
      expect(await verifications().find(second.id)).toBeDefined();
    });
  });

  describe('consume', () => {
    it('lets exactly one of several concurrent callers consume a link', async () => {
      const user = await seedUser(world().db);
      const recorded = link(user);
      await replace(recorded);
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () =>
          verifications()
            .transaction((tx) => tx.consume(matchOf(recorded), after(AT, 1000)))
            .then((result) => result.outcome),
        ),
      );
      expect(outcomes.sort()).toEqual(['consumed', 'invalid', 'invalid', 'invalid']);
      expect((await verifications().find(recorded.id))?.consumedAt).toBe(after(AT, 1000));
    });

    it('deletes an expired link, and answers invalid for a wrong hash', async () => {
      const user = await seedUser(world().db);
      const recorded = link(user);
      await replace(recorded);
      const wrong = { ...matchOf(recorded), tokenHash: '0'.repeat(64) };
      expect((await verifications().transaction((tx) => tx.consume(wrong, AT))).outcome).toBe('invalid');
      expect((await verifications().transaction((tx) => tx.consume(matchOf(recorded), after(AT, DAY)))).outcome).toBe('expired');
      expect(await verifications().find(recorded.id)).toBeUndefined();
    });
  });

  describe('markVerified', () => {
    it('verifies an active user still using the address, once; refuses another address or a deactivated user', async () => {
      const { db } = world();
      const user = await seedUser(db);
      const deactivated = await seedUser(db, { status: 'deactivated' });
      expect(await verifications().transaction((tx) => tx.markVerified(user.id, 'other@example.com', AT))).toBe('mismatch');
      expect(await verifications().transaction((tx) => tx.markVerified(deactivated.id, deactivated.email, AT))).toBe('mismatch');
      expect(await verifications().transaction((tx) => tx.markVerified(user.id, user.email, AT))).toBe('verified');
      expect(Boolean((await db('identity_users').where({ id: user.id }).first('email_verified'))?.email_verified)).toBe(true);
      expect(await verifications().transaction((tx) => tx.markVerified(user.id, user.email, AT))).toBe('already');
    });
  });

  describe('prune', () => {
    it('deletes used and expired links only', async () => {
      const user = await seedUser(world().db);
      const other = await seedUser(world().db);
      const used = link(user);
      await replace(used);
      await verifications().transaction((tx) => tx.consume(matchOf(used), AT));
      const live = link(other);
      await replace(live);
      expect(await verifications().prune(after(AT, 1000))).toBeGreaterThanOrEqual(1);
      expect(await verifications().find(used.id)).toBeUndefined();
      expect(await verifications().find(live.id)).toBeDefined();
      await verifications().prune(after(AT, DAY));
      expect(await verifications().find(live.id)).toBeUndefined();
    });
  });
});
