import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexUsersStore } from '../../src/knex.js';
import type { NewUser, UsersStore } from '../../src/users/store.js';
import { describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('users', (world) => {
  let store: UsersStore;
  /** With the in-memory cache of `find`, as the module wires it. */
  const users = () => {
    store ??= createKnexUsersStore({ ...world().options, cache: { subscribe: () => () => undefined } });
    return store;
  };
  const newUser = (email = `u-${newId()}@example.com`): NewUser => ({
    id: newId(),
    email,
    firstName: 'Ada',
    lastName: 'Lovelace',
    passwordHash: 'hash',
    createdAt: AT,
  });
  const statusOf = async (id: string) => (await world().db('identity_users').where({ id }).first('status'))?.status;

  itRunsOneUnitOfWork(world, users, {
    prepare: async () => undefined,
    write: (tx, probe) => tx.insert(newUser(`${probe}@example.com`)),
    written: async (probe) =>
      (await world()
        .db('identity_users')
        .where({ email: `${probe}@example.com` })
        .first('id')) !== undefined,
  });

  describe('insert', () => {
    it('inserts an active user whose username is the address, and refuses an address taken as e-mail or username', async () => {
      const user = newUser();
      expect(await users().transaction((tx) => tx.insert(user))).toBe(true);
      expect(await users().find(user.id)).toMatchObject({
        id: user.id,
        email: user.email,
        username: user.email,
        status: 'active',
      });
      // A taken address aborts the transaction on PostgreSQL: the caller throws to roll it back.
      await expect(
        users().transaction(async (tx) => {
          if (!(await tx.insert({ ...newUser(user.email) }))) throw new Error('taken');
        }),
      ).rejects.toThrow('taken');
      expect(Number((await world().db('identity_users').where({ email: user.email }).count({ n: '*' }).first())?.n)).toBe(1);
    });
  });

  describe('updateProfile', () => {
    it('changes the names given, and find answers the change at once (the cached copy is forgotten)', async () => {
      const user = await seedUser(world().db, { firstName: 'Old', lastName: 'Name' });
      expect((await users().find(user.id))?.firstName).toBe('Old');
      expect(await users().transaction((tx) => tx.updateProfile(user.id, { firstName: 'New' }, AT))).toBe(true);
      expect(await users().find(user.id)).toMatchObject({ firstName: 'New', lastName: 'Name' });
      expect(await users().transaction((tx) => tx.updateProfile(newId(), { lastName: 'Nobody' }, AT))).toBe(false);
    });
  });

  describe('deactivate and reactivate', () => {
    it('lets exactly one of several concurrent callers deactivate, writes the watermark, and reactivates once', async () => {
      const user = await seedUser(world().db);
      await users().find(user.id);
      const won = await winners(Array.from({ length: 4 }, () => users().transaction((tx) => tx.deactivate(user.id, AT))));
      expect(won).toBe(1);
      expect(await statusOf(user.id)).toBe('deactivated');
      expect((await users().find(user.id))?.status).toBe('deactivated');
      expect(
        await world().db('identity_token_revocations').where({ subject_type: 'user', subject_id: user.id }).first(),
      ).toBeTruthy();
      expect(await winners(Array.from({ length: 3 }, () => users().transaction((tx) => tx.reactivate(user.id, AT))))).toBe(1);
      expect(await statusOf(user.id)).toBe('active');
      expect(await users().transaction((tx) => tx.reactivate(user.id, AT))).toBe(false);
    });
  });

  describe('tenant reads', () => {
    it("lists and finds only the organization's members, oldest membership first, with cursors", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const members = [];
      for (let i = 0; i < 3; i++) {
        const user = await seedUser(db);
        const membership = await seedMembership(db, { userId: user.id, organizationId: organization.id });
        await db('identity_memberships')
          .where({ id: membership.id })
          .update({ created_at: `2030-01-01T00:00:0${i}.000Z` });
        members.push(user.id);
      }
      const outsider = await seedUser(db);
      await seedMembership(db, { userId: outsider.id, organizationId: other.id });

      const first = await users().listInOrganization(organization.id, { page: 1, pageSize: 2 });
      expect(first.totalCount).toBe(3);
      expect(first.items.map((user) => user.id)).toEqual(members.slice(0, 2));
      expect(first.next).toBeDefined();
      const second = await users().listInOrganization(organization.id, {
        page: 1,
        pageSize: 2,
        ...(first.next ? { cursor: { page: 2, after: first.next } } : {}),
      });
      expect(second.items.map((user) => user.id)).toEqual(members.slice(2));
      expect(second.next).toBeUndefined();
      expect((await users().listInOrganization(organization.id, { page: 2, pageSize: 2 })).items.map((user) => user.id)).toEqual(
        members.slice(2),
      );

      expect(await users().findInOrganization(organization.id, members[0] ?? '')).toMatchObject({ id: members[0] });
      expect(await users().findInOrganization(organization.id, outsider.id)).toBeUndefined();
    });
  });
});
