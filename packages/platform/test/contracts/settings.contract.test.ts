import { seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexSettingsStore } from '../../src/knex.js';
import type { SettingsStore, SettingTarget, SettingValueRecord } from '../../src/settings/store.js';
import { describeStoreContract, itRunsOneUnitOfWork } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('settings', (world) => {
  let store: SettingsStore;
  const settings = () => {
    store ??= createKnexSettingsStore(world().options);
    return store;
  };
  const value = (target: SettingTarget, stored: SettingValueRecord['value'], at = AT): SettingValueRecord => ({
    ...target,
    value: stored,
    updatedAt: at,
    updatedBy: 'admin',
  });
  const organizationTarget = (organizationId: string, key: string): SettingTarget => ({
    scope: 'organization',
    organizationId,
    userId: null,
    key,
  });
  const put = (record: SettingValueRecord) => settings().transaction((tx) => tx.put(record));

  itRunsOneUnitOfWork(world, settings, {
    prepare: () => seedOrganization(world().db),
    write: (tx, probe, organization) => tx.put(value(organizationTarget(organization.id, `custom.${probe}`), probe)),
    written: async (probe, organization) =>
      (await settings().list('organization', organization.id, null)).some((found) => found.key === `custom.${probe}`),
  });

  describe('put and list', () => {
    it('inserts or replaces one value per scope, owner and key, and lists one owner’s values by key', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const user = await seedUser(db);
      const mine: SettingTarget = { scope: 'user', organizationId: organization.id, userId: user.id, key: 'ui.theme' };

      await put(value(organizationTarget(organization.id, 'ui.theme'), 'light'));
      await put(value(organizationTarget(organization.id, 'billing.currency'), 'EUR'));
      await put(value(organizationTarget(organization.id, 'ui.theme'), 'dark', '2030-02-01T00:00:00.000Z'));
      await put(value(organizationTarget(other.id, 'ui.theme'), 'blue'));
      await put(value(mine, 'contrast'));

      expect(await settings().list('organization', organization.id, null)).toEqual([
        value(organizationTarget(organization.id, 'billing.currency'), 'EUR'),
        value(organizationTarget(organization.id, 'ui.theme'), 'dark', '2030-02-01T00:00:00.000Z'),
      ]);
      expect(await settings().list('organization', other.id, null)).toEqual([
        value(organizationTarget(other.id, 'ui.theme'), 'blue'),
      ]);
      expect(await settings().list('user', organization.id, user.id)).toEqual([value(mine, 'contrast')]);
      expect(await settings().list('user', other.id, user.id)).toEqual([]);
    });

    it('keeps JSON values as they were written', async () => {
      const organization = await seedOrganization(world().db);
      const stored = { nested: [1, 'two', true, null] };
      await put(value(organizationTarget(organization.id, 'custom.json'), stored));
      await put(value(organizationTarget(organization.id, 'custom.number'), 42));
      expect((await settings().list('organization', organization.id, null)).map((found) => found.value)).toEqual([stored, 42]);
    });

    it('keeps system values apart from every organization', async () => {
      const organization = await seedOrganization(world().db);
      const system: SettingTarget = { scope: 'system', organizationId: null, userId: null, key: `system.${organization.id}` };
      await put(value(system, 'hello'));
      expect(await settings().list('system', null, null)).toContainEqual(value(system, 'hello'));
      expect(await settings().list('organization', organization.id, null)).toEqual([]);
    });
  });

  describe('has and count', () => {
    it('answer for one owner only; count takes the keys that start with the prefix', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      await put(value(organizationTarget(organization.id, 'custom.a'), 'x'));
      await put(value(organizationTarget(organization.id, 'custom.b'), 'x'));
      await put(value(organizationTarget(organization.id, 'ui.theme'), 'x'));
      await put(value(organizationTarget(other.id, 'custom.a'), 'x'));

      const answers = await settings().transaction(async (tx) => ({
        has: await tx.has(organizationTarget(organization.id, 'custom.a')),
        missing: await tx.has(organizationTarget(organization.id, 'custom.c')),
        elsewhere: await tx.has(organizationTarget(other.id, 'custom.b')),
        custom: await tx.count({ scope: 'organization', organizationId: organization.id, userId: null }, 'custom.'),
        otherCustom: await tx.count({ scope: 'organization', organizationId: other.id, userId: null }, 'custom.'),
        ui: await tx.count({ scope: 'organization', organizationId: organization.id, userId: null }, 'ui.'),
      }));
      expect(answers).toEqual({ has: true, missing: false, elsewhere: false, custom: 2, otherCustom: 1, ui: 1 });
    });
  });

  describe('remove', () => {
    it("removes the owner's value only; false when there was none", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      await put(value(organizationTarget(organization.id, 'ui.theme'), 'dark'));
      await put(value(organizationTarget(other.id, 'ui.theme'), 'blue'));
      const remove = (target: SettingTarget) => settings().transaction((tx) => tx.remove(target));

      expect(await remove(organizationTarget(organization.id, 'ui.theme'))).toBe(true);
      expect(await remove(organizationTarget(organization.id, 'ui.theme'))).toBe(false);
      expect(await settings().list('organization', organization.id, null)).toEqual([]);
      expect(await settings().list('organization', other.id, null)).toEqual([
        value(organizationTarget(other.id, 'ui.theme'), 'blue'),
      ]);
    });
  });
});
