import { seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { FlagOverride } from '../../src/flags/evaluate.js';
import type { FlagRecord, FlagsStore } from '../../src/flags/store.js';
import { createKnexFlagsStore } from '../../src/knex.js';
import { describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('flags', (world) => {
  let store: FlagsStore;
  const flags = () => {
    store ??= createKnexFlagsStore(world().options);
    return store;
  };
  let counter = 0;
  const flag = (
    key = `flag-${++counter}-${Math.random().toString(36).slice(2, 8)}`,
    overrides: Partial<FlagRecord> = {},
  ): FlagRecord => ({
    key,
    name: `Flag ${key}`,
    description: '',
    type: 'variant',
    defaultEnabled: false,
    rolloutPercentage: 0,
    variants: [
      { name: 'a', weight: 50 },
      { name: 'b', weight: 50 },
    ],
    defaultVariant: 'a',
    createdAt: AT,
    updatedAt: AT,
    ...overrides,
  });
  const override = (flagKey: string, organizationId: string, values: Partial<FlagOverride> = {}): FlagOverride => ({
    flagKey,
    organizationId,
    userId: null,
    enabled: true,
    variant: null,
    expiresAt: null,
    ...values,
  });
  const insert = async (value: FlagRecord) => flags().transaction((tx) => tx.insert(value));

  itRunsOneUnitOfWork(world, flags, {
    prepare: async () => undefined,
    write: (tx, probe) => tx.insert(flag(probe)),
    written: async (probe) => (await flags().find(probe)) !== undefined,
  });

  describe('insert', () => {
    it('stores a flag as given, and of concurrent creations of one key exactly one wins', async () => {
      const value = flag();
      const answers = await Promise.all([insert(value), insert({ ...value, name: 'Other' })]);
      expect(answers.sort()).toEqual(['created', 'exists']);
      const found = await flags().find(value.key);
      expect(found?.variants).toEqual(value.variants);
      expect(found).toMatchObject({ key: value.key, type: 'variant', defaultVariant: 'a', createdAt: AT, updatedAt: AT });
    });
  });

  describe('list and find', () => {
    it('lists every flag by key; find answers undefined for a missing key', async () => {
      const keys = ['zz-last', 'aa-first', 'mm-middle'];
      for (const key of keys) await insert(flag(key));
      const listed = (await flags().list()).map((found) => found.key);
      expect(listed.filter((key) => keys.includes(key))).toEqual(['aa-first', 'mm-middle', 'zz-last']);
      expect(listed).toEqual([...listed].sort());
      expect(await flags().find('no-such-flag')).toBeUndefined();
    });
  });

  describe('update', () => {
    it('replaces the definition (not the creation time); false for a missing flag', async () => {
      const value = flag();
      await insert(value);
      const later = '2030-02-01T00:00:00.000Z';
      const changed = {
        ...value,
        name: 'Renamed',
        rolloutPercentage: 30,
        defaultEnabled: true,
        updatedAt: later,
        createdAt: later,
      };
      expect(await flags().transaction((tx) => tx.update(changed))).toBe(true);
      expect(await flags().find(value.key)).toMatchObject({
        name: 'Renamed',
        rolloutPercentage: 30,
        defaultEnabled: true,
        createdAt: AT,
        updatedAt: later,
      });
      expect(await flags().transaction((tx) => tx.update(flag('missing-flag')))).toBe(false);
    });
  });

  describe('overrides', () => {
    it("puts one override per flag, organization and user, replacing it; lists only the organization's, by flag then user", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const user = await seedUser(db);
      const first = flag(`a-${Math.random().toString(36).slice(2, 8)}`);
      const second = flag(`b-${Math.random().toString(36).slice(2, 8)}`);
      await insert(first);
      await insert(second);
      const put = (value: FlagOverride) => flags().transaction((tx) => tx.putOverride(value, AT, 'admin'));

      expect(await put(override(second.key, organization.id))).toBe(true);
      expect(await put(override(first.key, organization.id, { userId: user.id, variant: 'b' }))).toBe(true);
      expect(await put(override(first.key, organization.id, { enabled: false }))).toBe(true);
      expect(await put(override(first.key, organization.id, { enabled: true, expiresAt: '2031-01-01T00:00:00.000Z' }))).toBe(
        true,
      );
      expect(await put(override(first.key, other.id))).toBe(true);

      expect(await flags().overrides(organization.id)).toEqual([
        override(first.key, organization.id, { enabled: true, expiresAt: '2031-01-01T00:00:00.000Z' }),
        override(first.key, organization.id, { userId: user.id, variant: 'b' }),
        override(second.key, organization.id),
      ]);
      expect(await flags().overrides(other.id)).toEqual([override(first.key, other.id)]);
    });

    it('refuses an override of a missing flag', async () => {
      const organization = await seedOrganization(world().db);
      expect(await flags().transaction((tx) => tx.putOverride(override('missing-flag', organization.id), AT, 'admin'))).toBe(
        false,
      );
      expect(await flags().overrides(organization.id)).toEqual([]);
    });

    it("removes an override of the organization only; false for another organization's or a missing one", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const value = flag();
      await insert(value);
      await flags().transaction((tx) => tx.putOverride(override(value.key, organization.id), AT, 'admin'));
      const remove = (organizationId: string, userId: string | null = null) =>
        flags().transaction((tx) => tx.removeOverride(value.key, organizationId, userId));

      expect(await remove(other.id)).toBe(false);
      expect(await remove(organization.id, 'someone')).toBe(false);
      expect(await flags().overrides(organization.id)).toHaveLength(1);
      expect(await winners([remove(organization.id), remove(organization.id)])).toBe(1);
      expect(await flags().overrides(organization.id)).toEqual([]);
    });
  });

  describe('remove', () => {
    it("removes the flag with every organization's overrides; false when there was none", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const value = flag();
      const kept = flag();
      await insert(value);
      await insert(kept);
      for (const organizationId of [organization.id, other.id]) {
        await flags().transaction((tx) => tx.putOverride(override(value.key, organizationId), AT, 'admin'));
      }
      await flags().transaction((tx) => tx.putOverride(override(kept.key, organization.id), AT, 'admin'));

      expect(
        await winners([flags().transaction((tx) => tx.remove(value.key)), flags().transaction((tx) => tx.remove(value.key))]),
      ).toBe(1);
      expect(await flags().find(value.key)).toBeUndefined();
      expect(await flags().overrides(organization.id)).toEqual([override(kept.key, organization.id)]);
      expect(await flags().overrides(other.id)).toEqual([]);
      expect(await flags().transaction((tx) => tx.remove(value.key))).toBe(false);
    });
  });
});
