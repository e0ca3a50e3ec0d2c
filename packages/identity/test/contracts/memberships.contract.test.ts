import { newId } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexMembershipsStore } from '../../src/knex.js';
import type { MembershipSnapshot, MembershipsStore } from '../../src/memberships/store.js';
import { describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

function codeOf(error: unknown): string | undefined {
  return error instanceof ProblemError ? error.code : undefined;
}

describeStoreContract('memberships', (world) => {
  let store: MembershipsStore;
  const memberships = () => {
    store ??= createKnexMembershipsStore(world().options);
    return store;
  };
  const enrollment = (organizationId: string, userId: string) => ({ organizationId, userId, membershipId: newId(), at: AT });
  const request = (organizationId: string, userId: string, actorUserId: string | null = null) => ({
    organizationId,
    userId,
    actorUserId,
    at: AT,
  });

  itRunsOneUnitOfWork(world, memberships, {
    prepare: async () => ({ organization: await seedOrganization(world().db), user: await seedUser(world().db) }),
    write: (tx, probe, { organization, user }) =>
      tx.enroll({ ...enrollment(organization.id, user.id), membershipId: newId() }, () => ({ status: 'active', roles: [probe] })),
    written: async (probe) => (await world().db('identity_membership_roles').where({ role: probe }).first('role')) !== undefined,
  });

  describe('change', () => {
    it('hands decide the snapshot under the lock, applies an update and answers the member after it', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const owner = await seedUser(db);
      const member = await seedUser(db);
      await seedMembership(db, { userId: owner.id, organizationId: organization.id, roles: ['owner'] });
      await seedMembership(db, { userId: member.id, organizationId: organization.id, roles: ['user'] });
      await db('identity_roles').insert({
        id: newId(),
        organization_id: organization.id,
        name: 'auditor',
        description: '',
        permissions: JSON.stringify(['UsersRead']),
        created_at: AT,
        updated_at: AT,
      });
      let seen: MembershipSnapshot | undefined;
      const { decision, member: after } = await memberships().transaction((tx) =>
        tx.change(request(organization.id, member.id, owner.id), (snapshot) => {
          seen = snapshot;
          return { kind: 'update', status: 'suspended', roles: ['auditor', 'user'], marker: 'kept' } as const;
        }),
      );
      expect(seen).toMatchObject({
        organization: { id: organization.id },
        actorRoles: ['owner'],
        activeOwnerIds: [owner.id],
        member: { userId: member.id, status: 'active', roles: ['user'] },
      });
      expect(seen?.customRoles.get('auditor')).toEqual(['UsersRead']);
      // The decision comes back as decide returned it (the service publishes its events).
      expect(decision.marker).toBe('kept');
      expect(after).toMatchObject({ userId: member.id, status: 'suspended', roles: ['auditor', 'user'], updatedAt: AT });
      expect(await memberships().find(organization.id, member.id)).toEqual(after);
    });

    it('writes nothing when decide refuses, removes on remove, and refuses a non-member or an unknown organization', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const member = await seedUser(db);
      await seedMembership(db, { userId: member.id, organizationId: organization.id, roles: ['user'] });
      await expect(
        memberships().transaction((tx) =>
          tx.change(request(organization.id, member.id), () => {
            throw new ProblemError('Identity.LastOwner');
          }),
        ),
      ).rejects.toSatisfy((error) => codeOf(error) === 'Identity.LastOwner');
      expect(await memberships().statusOf(member.id, organization.id)).toBe('active');

      const removed = await memberships().transaction((tx) =>
        tx.change(request(organization.id, member.id), () => ({ kind: 'remove' })),
      );
      expect(removed.member).toBeUndefined();
      expect(await memberships().statusOf(member.id, organization.id)).toBeUndefined();

      await expect(
        memberships().transaction((tx) => tx.change(request(organization.id, member.id), () => ({ kind: 'remove' }))),
      ).rejects.toSatisfy((error) => codeOf(error) === 'Identity.MemberNotFound');
      await expect(
        memberships().transaction((tx) => tx.change(request(newId(), member.id), () => ({ kind: 'remove' }))),
      ).rejects.toSatisfy((error) => codeOf(error) === 'Identity.OrganizationNotFound');
    });
  });

  describe('enroll', () => {
    it('keeps a member as they are, inserts nothing when decide declines, and inserts what it decides', async () => {
      const { db } = world();
      const organization = await seedOrganization(db, { enrollmentPolicy: 'approval_required' });
      const member = await seedUser(db);
      const newcomer = await seedUser(db);
      await seedMembership(db, { userId: member.id, organizationId: organization.id, status: 'suspended' });
      const decided: string[] = [];
      const kept = await memberships().transaction((tx) =>
        tx.enroll(enrollment(organization.id, member.id), () => {
          decided.push('member');
          return { status: 'active', roles: ['user'] };
        }),
      );
      expect(kept).toEqual({ status: 'suspended' });
      expect(decided).toEqual([]);

      expect(
        await memberships().transaction((tx) => tx.enroll(enrollment(organization.id, newcomer.id), () => undefined)),
      ).toEqual({
        status: undefined,
      });
      expect(await memberships().statusOf(newcomer.id, organization.id)).toBeUndefined();

      const inserted = await memberships().transaction((tx) =>
        tx.enroll(enrollment(organization.id, newcomer.id), (found) => {
          expect(found.enrollmentPolicy).toBe('approval_required');
          return { status: 'pending', roles: [] };
        }),
      );
      expect(inserted).toEqual({ status: 'pending', inserted: { status: 'pending', roles: [] } });
      expect(await memberships().find(organization.id, newcomer.id)).toMatchObject({ status: 'pending', roles: [] });
    });

    it('inserts exactly one membership for several concurrent enrollments of a user', async () => {
      const { db } = world();
      const organization = await seedOrganization(db, { enrollmentPolicy: 'open' });
      const user = await seedUser(db);
      const results = await Promise.allSettled(
        Array.from({ length: 4 }, () =>
          memberships().transaction((tx) =>
            tx.enroll(enrollment(organization.id, user.id), () => ({ status: 'active', roles: ['user'] })),
          ),
        ),
      );
      const inserted = results.filter((result) => result.status === 'fulfilled' && result.value.inserted !== undefined);
      expect(inserted).toHaveLength(1);
      expect(Number((await db('identity_memberships').where({ user_id: user.id }).count({ n: '*' }).first())?.n)).toBe(1);
    });

    it('refuses an unknown organization', async () => {
      const user = await seedUser(world().db);
      await expect(
        memberships().transaction((tx) => tx.enroll(enrollment(newId(), user.id), () => ({ status: 'active', roles: ['user'] }))),
      ).rejects.toSatisfy((error) => codeOf(error) === 'Identity.OrganizationNotFound');
    });
  });

  describe('reads', () => {
    it("lists only the organization's members, oldest first, optionally of one state", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const active = await seedUser(db);
      const pending = await seedUser(db);
      const outsider = await seedUser(db);
      const first = await seedMembership(db, { userId: active.id, organizationId: organization.id, roles: ['admin', 'user'] });
      const second = await seedMembership(db, {
        userId: pending.id,
        organizationId: organization.id,
        status: 'pending',
        roles: [],
      });
      await db('identity_memberships').where({ id: first.id }).update({ created_at: '2030-01-01T00:00:00.000Z' });
      await db('identity_memberships').where({ id: second.id }).update({ created_at: '2030-01-01T00:00:01.000Z' });
      await seedMembership(db, { userId: outsider.id, organizationId: other.id });

      const all = await memberships().list(organization.id, { page: 1, pageSize: 10 });
      expect(all.totalCount).toBe(2);
      expect(all.items.map((member) => [member.userId, member.roles])).toEqual([
        [active.id, ['admin', 'user']],
        [pending.id, []],
      ]);
      const pendingOnly = await memberships().list(organization.id, { page: 1, pageSize: 10, status: 'pending' });
      expect(pendingOnly.items.map((member) => member.userId)).toEqual([pending.id]);
      expect(await memberships().find(organization.id, outsider.id)).toBeUndefined();
      expect(await memberships().statusOf(outsider.id, organization.id)).toBeUndefined();
      expect(await memberships().statusOf(pending.id, organization.id)).toBe('pending');
    });
  });
});
