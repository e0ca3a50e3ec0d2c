import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexRolesStore } from '../../src/knex.js';
import type { CustomRole, RolesStore } from '../../src/roles/store.js';
import { describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('roles', (world) => {
  let store: RolesStore;
  const roles = () => {
    store ??= createKnexRolesStore(world().options);
    return store;
  };
  const role = (organizationId: string, name: string): CustomRole => ({
    id: newId(),
    organizationId,
    name,
    description: '',
    permissions: ['UsersRead'],
    createdAt: AT,
    updatedAt: AT,
  });
  const insert = (value: CustomRole) => roles().transaction((tx) => tx.insert(value));
  const rolesOfMember = async (membershipId: string) =>
    (await world()
      .db('identity_membership_roles')
      .where({ membership_id: membershipId })
      .orderBy('role')
      .pluck('role')) as string[];

  itRunsOneUnitOfWork(world, roles, {
    prepare: () => seedOrganization(world().db),
    write: (tx, probe, organization) => tx.insert(role(organization.id, probe.slice(0, 60))),
    written: async (probe) =>
      (await world()
        .db('identity_roles')
        .where({ name: probe.slice(0, 60) })
        .first('id')) !== undefined,
  });

  describe('insert', () => {
    it('refuses a name the organization already has, and allows it in another organization', async () => {
      const organization = await seedOrganization(world().db);
      const other = await seedOrganization(world().db);
      expect(await insert(role(organization.id, 'auditor'))).toBe(true);
      // A taken name aborts the transaction on PostgreSQL: the caller throws to roll it back.
      await expect(
        roles().transaction(async (tx) => {
          if (!(await tx.insert(role(organization.id, 'auditor')))) throw new Error('taken');
        }),
      ).rejects.toThrow('taken');
      expect(await insert(role(other.id, 'auditor'))).toBe(true);
      expect((await roles().list(organization.id)).map((found) => found.name)).toEqual(['auditor']);
    });
  });

  describe('update', () => {
    it("renames the role in the organization's memberships, refuses a taken name, and answers undefined elsewhere", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const user = await seedUser(db);
      const auditor = role(organization.id, 'auditor');
      await insert(auditor);
      await insert(role(organization.id, 'reviewer'));
      const membership = await seedMembership(db, {
        userId: user.id,
        organizationId: organization.id,
        roles: ['auditor', 'user'],
      });

      const at = '2030-02-01T00:00:00.000Z';
      const updated = await roles().transaction((tx) =>
        tx.update(organization.id, auditor.id, { name: 'inspector', permissions: ['UsersRead', 'RolesRead'] }, at),
      );
      expect(updated).toMatchObject({ name: 'inspector', permissions: ['UsersRead', 'RolesRead'], updatedAt: at });
      expect(await rolesOfMember(membership.id)).toEqual(['inspector', 'user']);

      await expect(
        roles().transaction(async (tx) => {
          if ((await tx.update(organization.id, auditor.id, { name: 'reviewer' }, at)) === 'name-taken') throw new Error('taken');
        }),
      ).rejects.toThrow('taken');
      expect((await roles().find(organization.id, auditor.id))?.name).toBe('inspector');
      expect(await roles().transaction((tx) => tx.update(other.id, auditor.id, { name: 'x' }, at))).toBeUndefined();
    });
  });

  describe('remove', () => {
    it("deletes the role and takes it from the organization's memberships; undefined for another organization", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const user = await seedUser(db);
      const auditor = role(organization.id, 'auditor');
      await insert(auditor);
      const membership = await seedMembership(db, {
        userId: user.id,
        organizationId: organization.id,
        roles: ['auditor', 'user'],
      });
      expect(await roles().transaction((tx) => tx.remove(other.id, auditor.id))).toBeUndefined();
      expect(await roles().transaction((tx) => tx.remove(organization.id, auditor.id))).toMatchObject({ id: auditor.id });
      expect(await rolesOfMember(membership.id)).toEqual(['user']);
      expect(await roles().find(organization.id, auditor.id)).toBeUndefined();
      expect(await roles().transaction((tx) => tx.remove(organization.id, auditor.id))).toBeUndefined();
    });
  });
});
