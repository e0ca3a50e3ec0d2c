import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { SecondFactorStore } from '../../src/factors/store.js';
import { createKnexSecondFactorStore, createKnexSessionStore } from '../../src/knex.js';
import { after, describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';
const MINUTE = 60_000;

describeStoreContract('second-factors', (world) => {
  let store: SecondFactorStore;
  const factors = () => {
    store ??= createKnexSecondFactorStore(world().options);
    return store;
  };
  const totp = (userId: string, lastUsedStep: number | null = null) => ({
    id: newId(),
    userId,
    secretSealed: `v1.sealed-${userId}`,
    lastUsedStep,
    createdAt: AT,
  });

  itRunsOneUnitOfWork(world, factors, {
    prepare: () => seedUser(world().db),
    write: (tx, probe, user) => tx.replaceRecoveryCodes(user.id, [probe.padEnd(64, '0').slice(0, 64)], AT),
    written: async (probe) =>
      (await world()
        .db('identity_recovery_codes')
        .where({ code_hash: probe.padEnd(64, '0').slice(0, 64) })
        .first('id')) !== undefined,
  });

  describe('lockUser and status', () => {
    it("locks a user of any status and reads the address; reads a user's factors", async () => {
      const { db } = world();
      const user = await seedUser(db, { email: `Factor-${newId()}@example.com` });
      const deactivated = await seedUser(db, { status: 'deactivated' });
      const locked = await factors().transaction(async (tx) => [
        await tx.lockUser(user.id),
        await tx.lockUser(deactivated.id),
        await tx.lockUser(newId()),
      ]);
      expect(locked).toEqual([
        { email: user.email, status: 'active' },
        { email: deactivated.email, status: 'deactivated' },
        undefined,
      ]);
      expect(await factors().status(user.id)).toEqual({ totp: false, recoveryCodesLeft: 0, passkeys: 0 });
      await factors().transaction(async (tx) => {
        await tx.putTotp(totp(user.id));
        await tx.replaceRecoveryCodes(user.id, ['a'.repeat(64), 'b'.repeat(64)], AT);
      });
      expect(await factors().status(user.id)).toEqual({ totp: true, recoveryCodesLeft: 2, passkeys: 0 });
      expect(await factors().passwordHash(user.id)).toBeNull();
      expect(await factors().passwordHash(deactivated.id)).toBeUndefined();
    });
  });

  describe('enrolments', () => {
    it('keeps one pending enrolment per user, finds it until it expires, and prunes it after', async () => {
      const user = await seedUser(world().db);
      const enrolment = (id = newId()) => ({
        id,
        userId: user.id,
        secretSealed: 'v1.sealed',
        createdAt: AT,
        expiresAt: after(AT, 15 * MINUTE),
      });
      const first = enrolment();
      const second = enrolment();
      await factors().transaction((tx) => tx.insertEnrolment(first));
      await factors().transaction((tx) => tx.insertEnrolment(second));
      const found = await factors().transaction(async (tx) => [
        await tx.findEnrolment(user.id, first.id, AT),
        await tx.findEnrolment(user.id, second.id, AT),
        await tx.findEnrolment(newId(), second.id, AT),
        await tx.findEnrolment(user.id, second.id, after(AT, 15 * MINUTE)),
      ]);
      expect(found).toEqual([undefined, second, undefined, undefined]);
      expect(await factors().pruneEnrolments(AT)).toBe(0);
      expect(await factors().pruneEnrolments(after(AT, 15 * MINUTE))).toBeGreaterThanOrEqual(1);
      expect(await factors().transaction((tx) => tx.findEnrolment(user.id, second.id, AT))).toBeUndefined();
    });
  });

  describe('TOTP', () => {
    it('replaces a TOTP, and lets exactly one concurrent caller use a time step', async () => {
      const user = await seedUser(world().db);
      await factors().transaction((tx) => tx.putTotp(totp(user.id, 5)));
      const replacement = totp(user.id, 10);
      await factors().transaction((tx) => tx.putTotp(replacement));
      expect(await factors().transaction((tx) => tx.findTotp(user.id))).toEqual(replacement);
      const outcomes = await Promise.all(Array.from({ length: 4 }, () => factors().transaction((tx) => tx.useStep(user.id, 11))));
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      expect(await factors().transaction((tx) => tx.useStep(user.id, 11))).toBe(false);
      expect(await factors().transaction((tx) => tx.useStep(user.id, 9))).toBe(false);
      expect(await factors().transaction((tx) => tx.useStep(user.id, 12))).toBe(true);
      expect((await factors().transaction((tx) => tx.findTotp(user.id)))?.lastUsedStep).toBe(12);
      expect(await factors().transaction((tx) => tx.deleteTotp(user.id))).toBe(true);
      expect(await factors().transaction((tx) => tx.deleteTotp(user.id))).toBe(false);
      expect(await factors().transaction((tx) => tx.useStep(user.id, 13))).toBe(false);
    });
  });

  describe('recovery codes', () => {
    it('lets exactly one concurrent caller use a code; a new set ends the old one', async () => {
      const user = await seedUser(world().db);
      const other = await seedUser(world().db);
      const [a, b, c] = ['a', 'b', 'c'].map((letter) => letter.repeat(64)) as [string, string, string];
      await factors().transaction((tx) => tx.replaceRecoveryCodes(user.id, [a, b], AT));
      await factors().transaction((tx) => tx.replaceRecoveryCodes(other.id, [a], AT));
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () => factors().transaction((tx) => tx.useRecoveryCode(user.id, a, AT))),
      );
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      expect(await factors().transaction((tx) => tx.unusedRecoveryCodes(user.id))).toBe(1);
      // The same hash of another user is theirs.
      expect(await factors().transaction((tx) => tx.useRecoveryCode(other.id, a, AT))).toBe(true);
      await factors().transaction((tx) => tx.replaceRecoveryCodes(user.id, [c], AT));
      expect(await factors().transaction((tx) => tx.useRecoveryCode(user.id, b, AT))).toBe(false);
      expect(await factors().transaction((tx) => tx.deleteRecoveryCodes(user.id))).toBe(1);
      expect(await factors().status(user.id)).toEqual({ totp: false, recoveryCodesLeft: 0, passkeys: 0 });
    });
  });

  describe('attempts', () => {
    it('saves, reads and clears the misses and the lock', async () => {
      const user = await seedUser(world().db);
      const state = { failures: 3, windowStartedAt: AT, lockedUntil: null };
      await factors().transaction((tx) => tx.saveAttempts(user.id, state));
      expect(await factors().transaction((tx) => tx.attempts(user.id))).toEqual(state);
      const locked = { failures: 0, windowStartedAt: AT, lockedUntil: after(AT, 5 * MINUTE) };
      await factors().transaction((tx) => tx.saveAttempts(user.id, locked));
      expect(await factors().transaction((tx) => tx.attempts(user.id))).toEqual(locked);
      await factors().transaction((tx) => tx.saveAttempts(user.id, undefined));
      expect(await factors().transaction((tx) => tx.attempts(user.id))).toBeUndefined();
    });
  });

  describe('memberships', () => {
    it('tells owners, platform administrators and members apart', async () => {
      const { db } = world();
      const organization = await seedOrganization(db, { name: `Org ${newId()}` });
      const platform = await seedOrganization(db, { name: `Platform ${newId()}`, isPlatform: true });
      const owner = await seedUser(db);
      const admin = await seedUser(db);
      const suspended = await seedUser(db);
      const administrator = await seedUser(db);
      const outsider = await seedUser(db);
      await seedMembership(db, { userId: owner.id, organizationId: organization.id, roles: ['owner'] });
      await seedMembership(db, { userId: admin.id, organizationId: organization.id, roles: ['admin'] });
      await seedMembership(db, { userId: suspended.id, organizationId: organization.id, roles: ['owner'], status: 'suspended' });
      await seedMembership(db, { userId: administrator.id, organizationId: platform.id, roles: ['admin'] });
      expect(await factors().isOwner(owner.id, organization.id)).toBe(true);
      expect(await factors().isOwner(admin.id, organization.id)).toBe(false);
      expect(await factors().isOwner(suspended.id, organization.id)).toBe(false);
      expect(await factors().isMember(suspended.id, organization.id)).toBe(true);
      expect(await factors().isMember(outsider.id, organization.id)).toBe(false);
      expect(await factors().isPlatformAdministrator(administrator.id, platform.id)).toBe(true);
      expect(await factors().isPlatformAdministrator(administrator.id)).toBe(true);
      expect(await factors().isPlatformAdministrator(administrator.id, organization.id)).toBe(false);
      expect(await factors().isPlatformAdministrator(owner.id)).toBe(false);
    });
  });

  describe('sessions: authenticated_at', () => {
    it('starts at the sign-in and moves with a re-authentication of a live session', async () => {
      const sessions = createKnexSessionStore(world().options);
      const user = await seedUser(world().db);
      const id = newId();
      await sessions.transaction((tx) =>
        tx.insert({
          id,
          userId: user.id,
          tokenHash: newId().replace(/-/g, '').padEnd(64, '0'),
          createdAt: AT,
          expiresAt: after(AT, 24 * 60 * MINUTE),
          ipAddress: null,
          userAgent: null,
          amr: ['pwd'],
        }),
      );
      expect(await sessions.authentication(id, AT)).toEqual({ userId: user.id, authenticatedAt: AT, amr: ['pwd'] });
      expect(await sessions.markAuthenticated(id, ['pwd', 'otp', 'mfa'], after(AT, 10 * MINUTE))).toBe(true);
      expect(await sessions.authentication(id, after(AT, 11 * MINUTE))).toEqual({
        userId: user.id,
        authenticatedAt: after(AT, 10 * MINUTE),
        amr: ['pwd', 'otp', 'mfa'],
      });
      expect(await sessions.authentication(id, after(AT, 24 * 60 * MINUTE))).toBeUndefined();
      await sessions.transaction((tx) => tx.revoke(user.id, id, 'logout', AT));
      expect(await sessions.authentication(id, AT)).toBeUndefined();
      expect(await sessions.markAuthenticated(id, ['pwd'], AT)).toBe(false);
      expect(await sessions.markAuthenticated(newId(), ['pwd'], AT)).toBe(false);
    });
  });
});
