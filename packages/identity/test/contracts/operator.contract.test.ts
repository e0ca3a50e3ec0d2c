import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexOperatorStore } from '../../src/knex.js';
import { describeStoreContract } from './harness.js';

describeStoreContract('operator', (world) => {
  const operator = () => createKnexOperatorStore(world().db);

  describe('findOrganization', () => {
    it('finds an organization by id, slug or name (case-insensitive, oldest first)', async () => {
      const { db } = world();
      const older = await seedOrganization(db, { name: 'Shared Name' });
      const newer = await seedOrganization(db, { name: 'Shared Name' });
      await db('identity_organizations').where({ id: older.id }).update({ created_at: '2030-01-01T00:00:00.000Z' });
      await db('identity_organizations').where({ id: newer.id }).update({ created_at: '2030-01-02T00:00:00.000Z' });
      expect((await operator().findOrganization(newer.id.toUpperCase()))?.id).toBe(newer.id);
      expect((await operator().findOrganization(newer.slug))?.id).toBe(newer.id);
      expect((await operator().findOrganization('shared name'))?.id).toBe(older.id);
      expect(await operator().findOrganization('no such organization')).toBeUndefined();
    });
  });

  describe('findUserByEmail and platformOwner', () => {
    it('finds a user by address, and the oldest active owner of the active platform organization', async () => {
      const { db } = world();
      const user = await seedUser(db);
      expect((await operator().findUserByEmail(user.email))?.id).toBe(user.id);
      expect(await operator().findUserByEmail('nobody@example.com')).toBeUndefined();
      expect(await operator().platformOwner()).toBeUndefined();

      const platform = await seedOrganization(db, { isPlatform: true });
      const deactivated = await seedUser(db, { status: 'deactivated' });
      const owner = await seedUser(db);
      const first = await seedMembership(db, { userId: deactivated.id, organizationId: platform.id, roles: ['owner'] });
      const second = await seedMembership(db, { userId: owner.id, organizationId: platform.id, roles: ['owner'] });
      await db('identity_memberships').where({ id: first.id }).update({ created_at: '2030-01-01T00:00:00.000Z' });
      await db('identity_memberships').where({ id: second.id }).update({ created_at: '2030-01-02T00:00:00.000Z' });
      expect(await operator().platformOwner()).toBe(owner.id);
    });
  });
});
