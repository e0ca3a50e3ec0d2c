import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexOrganizationPolicyStore } from '../../src/knex.js';
import type { OrganizationPolicyStore } from '../../src/organization-policy/store.js';
import { describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('organization-policy', (world) => {
  let store: OrganizationPolicyStore;
  const policies = () => {
    store ??= createKnexOrganizationPolicyStore(world().options);
    return store;
  };

  itRunsOneUnitOfWork(world, policies, {
    prepare: () => seedOrganization(world().db),
    write: async (tx, _probe, organization) => {
      await tx.update(organization.id, { requireMfa: true }, AT);
    },
    written: async (_probe, organization) => (await policies().find(organization.id))?.requireMfa === true,
  });

  describe('find and update', () => {
    it('reads both switches (off by default), changes the fields given, and answers undefined for no organization', async () => {
      const organization = await seedOrganization(world().db);
      expect(await policies().find(organization.id)).toEqual({ requireMfa: false, requireVerifiedEmail: false });
      expect(await policies().find(newId())).toBeUndefined();
      const first = await policies().transaction((tx) => tx.update(organization.id, { requireVerifiedEmail: true }, AT));
      expect(first).toEqual({ requireMfa: false, requireVerifiedEmail: true });
      const second = await policies().transaction((tx) => tx.update(organization.id, { requireMfa: true }, AT));
      expect(second).toEqual({ requireMfa: true, requireVerifiedEmail: true });
      expect(await policies().transaction((tx) => tx.update(newId(), { requireMfa: true }, AT))).toBeUndefined();
    });
  });

  describe('anyMembershipRequiresMfa', () => {
    it('counts active memberships of active organizations that require MFA only', async () => {
      const { db } = world();
      const user = await seedUser(db);
      const strict = await seedOrganization(db);
      const relaxed = await seedOrganization(db);
      await seedMembership(db, { userId: user.id, organizationId: relaxed.id });
      await policies().transaction((tx) => tx.update(strict.id, { requireMfa: true }, AT));
      expect(await policies().anyMembershipRequiresMfa(user.id)).toBe(false);
      const membership = await seedMembership(db, { userId: user.id, organizationId: strict.id, status: 'suspended' });
      expect(await policies().anyMembershipRequiresMfa(user.id)).toBe(false);
      await db('identity_memberships').where({ id: membership.id }).update({ status: 'active' });
      expect(await policies().anyMembershipRequiresMfa(user.id)).toBe(true);
      await db('identity_organizations').where({ id: strict.id }).update({ status: 'suspended' });
      expect(await policies().anyMembershipRequiresMfa(user.id)).toBe(false);
    });
  });

  describe('isPlatformAdministrator', () => {
    it('is true for active owners and admins of the platform organization only', async () => {
      const { db } = world();
      const platform = await seedOrganization(db, { isPlatform: true });
      const tenant = await seedOrganization(db);
      const [owner, admin, manager, tenantOwner] = await Promise.all([seedUser(db), seedUser(db), seedUser(db), seedUser(db)]);
      await seedMembership(db, { userId: owner.id, organizationId: platform.id, roles: ['owner'] });
      await seedMembership(db, { userId: admin.id, organizationId: platform.id, roles: ['admin'] });
      await seedMembership(db, { userId: manager.id, organizationId: platform.id, roles: ['manager'] });
      await seedMembership(db, { userId: tenantOwner.id, organizationId: tenant.id, roles: ['owner'] });
      expect(await policies().isPlatformAdministrator(owner.id, platform.id)).toBe(true);
      expect(await policies().isPlatformAdministrator(admin.id, platform.id)).toBe(true);
      expect(await policies().isPlatformAdministrator(manager.id, platform.id)).toBe(false);
      expect(await policies().isPlatformAdministrator(tenantOwner.id, tenant.id)).toBe(false);
      expect(await policies().isPlatformAdministrator(owner.id, tenant.id)).toBe(false);
    });
  });
});
