import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexOrganizationsStore } from '../../src/knex.js';
import type { NewOrganization, OrganizationsStore } from '../../src/organizations/store.js';
import { describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('organizations', (world) => {
  let store: OrganizationsStore;
  const organizations = () => {
    store ??= createKnexOrganizationsStore(world().options);
    return store;
  };
  const newOrganization = (ownerUserId: string, slug: string, name = 'Acme'): NewOrganization => ({
    id: newId(),
    name,
    slug,
    enrollmentPolicy: 'invitation_only',
    ownerUserId,
    membershipId: newId(),
    createdAt: AT,
  });

  itRunsOneUnitOfWork(world, organizations, {
    prepare: () => seedUser(world().db),
    write: (tx, probe, owner) => tx.insert(newOrganization(owner.id, probe.replace(/[^a-z0-9]+/g, '-'), probe)),
    written: async (probe) => (await world().db('identity_organizations').where({ name: probe }).first('id')) !== undefined,
  });

  describe('insert', () => {
    it('takes the first free slug among slug, slug-2, slug-3… and makes the creator its active owner', async () => {
      const owner = await seedUser(world().db);
      const base = `acme-${newId().slice(-8)}`;
      const first = await organizations().transaction((tx) => tx.insert(newOrganization(owner.id, base)));
      const second = await organizations().transaction((tx) => tx.insert(newOrganization(owner.id, base)));
      const third = await organizations().transaction((tx) => tx.insert(newOrganization(owner.id, base)));
      expect([first.slug, second.slug, third.slug]).toEqual([base, `${base}-2`, `${base}-3`]);
      expect(first).toMatchObject({ name: 'Acme', status: 'active', isPlatform: false, createdAt: AT, updatedAt: AT });
      expect(await organizations().find(first.id)).toEqual(first);
      const mine = await organizations().listForUser(owner.id);
      expect(mine.map((entry) => entry.organization.id)).toEqual([first.id, second.id, third.id]);
      expect(mine[0]?.membership).toEqual({ status: 'active', roles: ['owner'], createdAt: AT });
    });
  });

  describe('update', () => {
    it('applies the patch, and answers false for an unknown organization', async () => {
      const organization = await seedOrganization(world().db);
      const at = '2030-02-01T00:00:00.000Z';
      expect(
        await organizations().transaction((tx) => tx.update(organization.id, { name: 'Renamed', enrollmentPolicy: 'open' }, at)),
      ).toBe(true);
      expect(await organizations().find(organization.id)).toMatchObject({
        name: 'Renamed',
        enrollmentPolicy: 'open',
        slug: organization.slug,
        updatedAt: at,
      });
      expect(await organizations().transaction((tx) => tx.update(newId(), { name: 'Nobody' }, at))).toBe(false);
    });
  });

  describe('listForUser', () => {
    it("lists only the user's memberships, in any state, with their roles", async () => {
      const { db } = world();
      const user = await seedUser(db);
      const stranger = await seedUser(db);
      const organization = await seedOrganization(db);
      await seedMembership(db, { userId: user.id, organizationId: organization.id, status: 'pending', roles: [] });
      await seedMembership(db, { userId: stranger.id, organizationId: organization.id, roles: ['admin'] });
      const mine = await organizations().listForUser(user.id);
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({ organization: { id: organization.id }, membership: { status: 'pending', roles: [] } });
      expect(await organizations().find(newId())).toBeUndefined();
    });
  });
});
