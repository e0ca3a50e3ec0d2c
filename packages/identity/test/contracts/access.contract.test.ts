import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexAccessStore, writeRevocation } from '../../src/knex.js';
import { describeStoreContract } from './harness.js';

describeStoreContract('access', (world) => {
  const access = () => createKnexAccessStore(world().db);

  describe('reads by primary key', () => {
    it('reads a user, a membership with its roles and the custom roles of its organization, and a watermark', async () => {
      const { db } = world();
      const user = await seedUser(db, { firstName: 'Ada', lastName: 'Lovelace' });
      const organization = await seedOrganization(db, { name: 'Acme', isPlatform: true });
      await seedMembership(db, { userId: user.id, organizationId: organization.id, roles: ['auditor', 'user'] });
      await db('identity_roles').insert({
        id: newId(),
        organization_id: organization.id,
        name: 'auditor',
        description: '',
        permissions: JSON.stringify(['UsersRead']),
        created_at: '2030-01-01T00:00:00.000Z',
        updated_at: '2030-01-01T00:00:00.000Z',
      });
      expect(await access().findUser(user.id)).toEqual({
        id: user.id,
        status: 'active',
        email: user.email,
        firstName: 'Ada',
        lastName: 'Lovelace',
      });
      expect(await access().findUser(newId())).toBeUndefined();
      const membership = await access().findMembership(user.id, organization.id);
      expect(membership).toMatchObject({
        organizationId: organization.id,
        organizationName: 'Acme',
        organizationStatus: 'active',
        isPlatform: true,
        status: 'active',
      });
      expect([...(membership?.roles ?? [])].sort()).toEqual(['auditor', 'user']);
      expect(membership?.customRoles.get('auditor')).toEqual(['UsersRead']);
      expect(await access().findMembership(user.id, (await seedOrganization(db)).id)).toBeUndefined();

      expect(await access().findRevocation('user', user.id)).toBeUndefined();
      const notBefore = await writeRevocation(db, 'user', user.id, new Date('2030-01-01T00:00:00.000Z'));
      expect(await access().findRevocation('user', user.id)).toBe(notBefore);
      // A later watermark is kept over an earlier one.
      await writeRevocation(db, 'user', user.id, new Date('2029-01-01T00:00:00.000Z'));
      expect(await access().findRevocation('user', user.id)).toBe(notBefore);
    });
  });
});
