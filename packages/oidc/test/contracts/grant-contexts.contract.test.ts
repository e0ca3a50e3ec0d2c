import { newId } from '@idt/core';
import { seedOrganization } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexProviderStateStore } from '../../src/knex/provider-state-store.js';
import { createKnexGrantContextStore } from '../../src/knex.js';
import { after, describeStoreContract } from './harness.js';

const START = '2030-01-01T00:00:00.000Z';

/**
 * The organization and refresh-token lifetime of each grant: written once
 * (a second write keeps the first, from any instance), read back from any
 * instance, and bounded by the expiry it was given (pruned by the provider
 * state's `pruneGrantContexts` at a given time).
 */
describeStoreContract('grant contexts', (world) => {
  const contexts = () => createKnexGrantContextStore(world().db);

  describe('set and get', () => {
    it('reads a context back on any instance, and nothing for an unknown grant', async () => {
      const organization = await seedOrganization(world().db);
      const grantId = newId();
      const context = { organizationId: organization.id, refreshTokenLifetime: 86_400 };
      const writer = contexts();
      await writer.set(grantId, context, after(START, 3_600_000));
      expect(await writer.get(grantId)).toEqual(context);
      expect(writer.cached(grantId)).toEqual(context);
      // Another instance reads it from the database.
      const reader = contexts();
      expect(reader.cached(grantId)).toBeUndefined();
      expect(await reader.get(grantId)).toEqual(context);
      expect(await reader.get(newId())).toBeUndefined();
      await writer.set(newId(), { organizationId: null, refreshTokenLifetime: 0 }, after(START, 1));
    });

    it('keeps the first write of a grant: a context never changes', async () => {
      const grantId = newId();
      await contexts().set(grantId, { organizationId: null, refreshTokenLifetime: 60 }, after(START, 60_000));
      await Promise.all([
        contexts().set(grantId, { organizationId: null, refreshTokenLifetime: 120 }, after(START, 120_000)),
        contexts().set(grantId, { organizationId: null, refreshTokenLifetime: 180 }, after(START, 180_000)),
      ]);
      expect(await contexts().get(grantId)).toEqual({ organizationId: null, refreshTokenLifetime: 60 });
    });
  });

  describe('expiry', () => {
    it('is pruned once the given time reaches the expiry it was written with', async () => {
      const grantId = newId();
      const expiresAt = new Date('2033-01-01T00:00:00.000Z');
      await contexts().set(grantId, { organizationId: null, refreshTokenLifetime: 60 }, expiresAt);
      const providerState = createKnexProviderStateStore({ db: world().db, outbox: world().outbox });
      await providerState.pruneGrantContexts(after(expiresAt, -1));
      expect(await contexts().get(grantId)).toBeDefined();
      await providerState.pruneGrantContexts(expiresAt);
      expect(await contexts().get(grantId)).toBeUndefined();
    });
  });
});
