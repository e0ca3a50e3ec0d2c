import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexSignInStore } from '../../src/knex.js';
import { describeStoreContract } from './harness.js';

describeStoreContract('sign-in', (world) => {
  const signIn = () => createKnexSignInStore(world().db);

  describe('reads', () => {
    it('finds active users with a password only, and their profile', async () => {
      const { db } = world();
      const user = await seedUser(db, { passwordHash: 'hash', firstName: 'Ada', lastName: 'Lovelace' });
      const passwordless = await seedUser(db);
      const deactivated = await seedUser(db, { passwordHash: 'hash', status: 'deactivated' });
      expect(await signIn().findPasswordUser(user.email)).toEqual({ id: user.id, passwordHash: 'hash' });
      expect(await signIn().findPasswordUser(passwordless.email)).toBeUndefined();
      expect(await signIn().findPasswordUser(deactivated.email)).toBeUndefined();
      expect(await signIn().findActiveUser(user.id)).toEqual({
        id: user.id,
        email: user.email,
        emailVerified: false,
        firstName: 'Ada',
        lastName: 'Lovelace',
      });
      expect(await signIn().findActiveUser(deactivated.id)).toBeUndefined();
    });

    it("reads a membership with its organization, and the user's active organizations only", async () => {
      const { db } = world();
      const user = await seedUser(db);
      const active = await seedOrganization(db, { name: 'Active' });
      const suspended = await seedOrganization(db, { name: 'Suspended', status: 'suspended' });
      const pending = await seedOrganization(db, { name: 'Pending' });
      await seedMembership(db, { userId: user.id, organizationId: active.id, roles: ['admin', 'user'] });
      await seedMembership(db, { userId: user.id, organizationId: suspended.id });
      await seedMembership(db, { userId: user.id, organizationId: pending.id, status: 'pending', roles: [] });
      const membership = await signIn().findMembership(user.id, active.id);
      expect(membership).toMatchObject({ status: 'active', organizationName: 'Active', organizationStatus: 'active' });
      expect([...(membership?.roles ?? [])].sort()).toEqual(['admin', 'user']);
      expect(await signIn().findMembership(user.id, newId())).toBeUndefined();
      expect(await signIn().activeOrganizations(user.id)).toEqual([{ id: active.id, name: 'Active' }]);
      expect(await signIn().findOrganization(suspended.id)).toEqual({
        id: suspended.id,
        name: 'Suspended',
        slug: suspended.slug,
        status: 'suspended',
        isPlatform: false,
      });
      expect(await signIn().findOrganization(newId())).toBeUndefined();
    });
  });
});
