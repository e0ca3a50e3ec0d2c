import { newId } from '@idt/core';
import { seedUser } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { ConsentStore } from '../../src/interactions/stores.js';
import { createKnexClientStore, createKnexConsentStore } from '../../src/knex.js';
import { storedClientRecord } from '../support/clients.js';
import { after, describeStoreContract } from './harness.js';

const START = '2030-01-01T00:00:00.000Z';

/**
 * Remembered consent, per user and client: scopes only ever add up (sorted,
 * once each), one user's consents are not another's, and forgetting answers
 * whether there was one to forget.
 */
describeStoreContract('consents', (world) => {
  let store: ConsentStore | undefined;
  const consents = () => {
    store ??= createKnexConsentStore(world().db);
    return store;
  };
  const seedClient = async () => {
    const clientId = `app-${newId()}`;
    await createKnexClientStore(world().db, world().invalidator).insert(storedClientRecord({ clientId }));
    return clientId;
  };

  describe('remember and find', () => {
    it('adds scopes to the remembered consent, sorted and once each, and keeps each user and client apart', async () => {
      const [user, other] = [await seedUser(world().db), await seedUser(world().db)];
      const [app, spa] = [await seedClient(), await seedClient()];
      await consents().remember(user.id, app, ['profile', 'openid'], new Date(START));
      await consents().remember(user.id, app, ['email', 'openid'], after(START, 1000));
      expect(await consents().find(user.id, app)).toEqual(['email', 'openid', 'profile']);
      expect(await consents().find(user.id, spa)).toBeUndefined();
      expect(await consents().find(other.id, app)).toBeUndefined();
    });

    it('merges concurrent remembers of one user and client without losing a scope', async () => {
      const user = await seedUser(world().db);
      const app = await seedClient();
      await consents().remember(user.id, app, ['openid'], new Date(START));
      await Promise.all(
        ['email', 'profile', 'phone', 'address'].map((scope, index) =>
          consents().remember(user.id, app, [scope], after(START, index + 1)),
        ),
      );
      expect(await consents().find(user.id, app)).toEqual(['address', 'email', 'openid', 'phone', 'profile']);
    });

    it('merges concurrent first remembers, before any row exists, without losing a scope', async () => {
      const user = await seedUser(world().db);
      const app = await seedClient();
      await Promise.all(
        ['email', 'profile', 'phone', 'openid'].map((scope, index) =>
          consents().remember(user.id, app, [scope], after(START, index + 1)),
        ),
      );
      expect(await consents().find(user.id, app)).toEqual(['email', 'openid', 'phone', 'profile']);
    });
  });

  describe('list', () => {
    it("lists one user's consents, the most recently updated first", async () => {
      const [user, other] = [await seedUser(world().db), await seedUser(world().db)];
      const [app, spa] = [await seedClient(), await seedClient()];
      await consents().remember(user.id, app, ['openid'], new Date(START));
      await consents().remember(user.id, spa, ['openid'], after(START, 1000));
      await consents().remember(other.id, app, ['openid'], after(START, 2000));
      expect(await consents().list(user.id)).toEqual([
        { clientId: spa, scopes: ['openid'], updatedAt: after(START, 1000).toISOString() },
        { clientId: app, scopes: ['openid'], updatedAt: START },
      ]);
      await consents().remember(user.id, app, ['email'], after(START, 3000));
      expect((await consents().list(user.id)).map((consent) => consent.clientId)).toEqual([app, spa]);
    });
  });

  describe('forget', () => {
    it('forgets one consent and answers whether there was one; exactly one of concurrent callers finds it', async () => {
      const user = await seedUser(world().db);
      const [app, spa] = [await seedClient(), await seedClient()];
      await consents().remember(user.id, app, ['openid'], new Date(START));
      await consents().remember(user.id, spa, ['openid'], new Date(START));
      const answers = await Promise.all(Array.from({ length: 4 }, () => consents().forget(user.id, app)));
      expect(answers.filter(Boolean)).toHaveLength(1);
      expect(await consents().find(user.id, app)).toBeUndefined();
      expect(await consents().find(user.id, spa)).toEqual(['openid']);
      expect(await consents().forget(user.id, app)).toBe(false);
    });
  });
});
