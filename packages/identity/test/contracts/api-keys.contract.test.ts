import { newId } from '@idt/core';
import { seedMembership, seedOrganization, seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { ApiKeyStore, NewApiKey } from '../../src/api-keys/store.js';
import { createKnexApiKeyStore } from '../../src/knex.js';
import { after, describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('api-keys', (world) => {
  let store: ApiKeyStore;
  const apiKeys = () => {
    store ??= createKnexApiKeyStore(world().options);
    return store;
  };
  const key = (userId: string, organizationId: string, overrides: Partial<NewApiKey> = {}): NewApiKey => ({
    id: newId(),
    userId,
    organizationId,
    name: 'CI',
    prefix: 'sk_live_abcdefgh',
    keyHash: newId().replaceAll('-', '') + newId().replaceAll('-', ''),
    scopes: ['users:read'],
    expiresAt: null,
    createdAt: AT,
    ...overrides,
  });
  const insert = (value: NewApiKey) => apiKeys().transaction((tx) => tx.insert(value));
  const tenant = async () => {
    const organization = await seedOrganization(world().db);
    const user = await seedUser(world().db);
    await seedMembership(world().db, { userId: user.id, organizationId: organization.id });
    return { organization, user };
  };

  itRunsOneUnitOfWork(world, apiKeys, {
    prepare: tenant,
    write: (tx, probe, { organization, user }) => tx.insert(key(user.id, organization.id, { name: probe })),
    written: async (probe) => (await world().db('identity_api_keys').where({ name: probe }).first('id')) !== undefined,
  });

  describe('lockUser and countLive', () => {
    it('counts the live keys of the user: not revoked, not expired', async () => {
      const { organization, user } = await tenant();
      await insert(key(user.id, organization.id));
      await insert(key(user.id, organization.id, { expiresAt: after(AT, 1000) }));
      const revoked = key(user.id, organization.id);
      await insert(revoked);
      await apiKeys().transaction((tx) => tx.revoke(user.id, organization.id, revoked.id, AT));
      const [locked, missing, live, later] = await apiKeys().transaction(async (tx) => [
        await tx.lockUser(user.id),
        await tx.lockUser(newId()),
        await tx.countLive(user.id, AT),
        await tx.countLive(user.id, after(AT, 1000)),
      ]);
      expect([locked, missing, live, later]).toEqual([true, false, 2, 1]);
    });
  });

  describe('revoke', () => {
    it("lets exactly one of several concurrent callers revoke a key, and revokes no other user's or organization's key", async () => {
      const { organization, user } = await tenant();
      const other = await tenant();
      const issued = key(user.id, organization.id);
      await insert(issued);
      expect(await apiKeys().transaction((tx) => tx.revoke(other.user.id, organization.id, issued.id, AT))).toBe(false);
      expect(await apiKeys().transaction((tx) => tx.revoke(user.id, other.organization.id, issued.id, AT))).toBe(false);
      expect(
        await winners(
          Array.from({ length: 4 }, () => apiKeys().transaction((tx) => tx.revoke(user.id, organization.id, issued.id, AT))),
        ),
      ).toBe(1);
      expect((await apiKeys().findByHash(issued.keyHash))?.revokedAt).toBe(AT);
    });
  });

  describe('reads and use', () => {
    it("finds a key by hash in any state, lists the user's unrevoked keys of one organization newest first, and marks use once per interval", async () => {
      const { organization, user } = await tenant();
      const other = await seedOrganization(world().db);
      const older = key(user.id, organization.id, { createdAt: AT });
      const newer = key(user.id, organization.id, { createdAt: after(AT, 1000) });
      await insert(older);
      await insert(newer);
      await insert(key(user.id, other.id));
      expect((await apiKeys().list(user.id, organization.id)).map((found) => found.id)).toEqual([newer.id, older.id]);
      expect(await apiKeys().findByHash(older.keyHash)).toMatchObject({ id: older.id, scopes: ['users:read'], lastUsedAt: null });

      const used = after(AT, 120_000);
      await apiKeys().markUsed(older.id, used, after(used, -60_000));
      await apiKeys().markUsed(older.id, after(used, 1000), after(used, -59_000));
      expect((await apiKeys().findByHash(older.keyHash))?.lastUsedAt).toBe(used);
    });

    it('tells a platform administrator: an active owner or admin of the active platform organization', async () => {
      const { db } = world();
      const platform = await seedOrganization(db, { isPlatform: true });
      const plain = await seedOrganization(db);
      const admin = await seedUser(db);
      const user = await seedUser(db);
      await seedMembership(db, { userId: admin.id, organizationId: platform.id, roles: ['admin'] });
      await seedMembership(db, { userId: user.id, organizationId: platform.id, roles: ['user'] });
      await seedMembership(db, { userId: admin.id, organizationId: plain.id, roles: ['owner'] });
      expect(await apiKeys().isPlatformAdministrator(admin.id, platform.id)).toBe(true);
      expect(await apiKeys().isPlatformAdministrator(user.id, platform.id)).toBe(false);
      expect(await apiKeys().isPlatformAdministrator(admin.id, plain.id)).toBe(false);
    });
  });
});
