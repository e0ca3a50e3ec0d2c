import { isUniqueViolation, newId } from '@idt/core';
import { seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexSetupStore } from '../../src/knex.js';
import type { FirstAdministrator } from '../../src/setup/store.js';
import { describeStoreContract } from './harness.js';

describeStoreContract('setup', (world) => {
  const setup = () => createKnexSetupStore(world().db);
  const admin = (email = `admin-${newId().slice(-8)}@example.com`): FirstAdministrator => ({
    user: { id: newId(), email, firstName: 'Ada', lastName: 'Admin', passwordHash: 'hash' },
    organization: { id: newId(), name: 'Platform', slug: `platform-${newId().slice(-8)}` },
    membershipId: newId(),
    createdAt: '2030-01-01T00:00:00.000Z',
  });

  describe('createFirstAdministrator', () => {
    it('refuses a taken address with a unique violation, writing nothing', async () => {
      const taken = await seedUser(world().db);
      await expect(setup().createFirstAdministrator(admin(taken.email))).rejects.toSatisfy(isUniqueViolation);
      expect(await setup().hasAdministrator()).toBe(false);
    });

    it('lets exactly one of several concurrent bootstraps write the administrator; the others find setup complete', async () => {
      expect(await setup().hasAdministrator()).toBe(false);
      const outcomes = await Promise.all(Array.from({ length: 4 }, () => setup().createFirstAdministrator(admin())));
      expect(outcomes.sort()).toEqual(['already-complete', 'already-complete', 'already-complete', 'created']);
      expect(await setup().hasAdministrator()).toBe(true);
      expect(Number((await world().db('identity_organizations').where({ is_platform: true }).count({ n: '*' }).first())?.n)).toBe(
        1,
      );
    });
  });
});
