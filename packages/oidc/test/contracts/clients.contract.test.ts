import { createManualClock, newId } from '@idt/core';
import { CacheNamespaces } from '@idt/identity';
import { REVOKE_ALL } from '@idt/identity/knex';
import { seedOrganization } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { ClientStore, StoredClient } from '../../src/clients/store.js';
import { createKnexClientStore } from '../../src/knex.js';
import { storedClientRecord } from '../support/clients.js';
import { after, describeStoreContract, providerAdapter } from './harness.js';

const START = '2030-01-01T00:00:00.000Z';

/**
 * OAuth clients and scope rows: clients are tenant-owned (listed per
 * organization), every write evicts the client from every instance's caches
 * when it commits, status changes are compare-and-set, and ending a client's
 * tokens deletes its grants' rows and writes its revocation watermark in the
 * same transaction.
 */
describeStoreContract('clients', (world) => {
  let store: ClientStore | undefined;
  const clients = () => {
    store ??= createKnexClientStore(world().db, world().invalidator);
    return store;
  };
  /** The provider's own writes, as the rows ending a client's tokens deletes. */
  const adapter = providerAdapter(world, createManualClock(START));
  const newClient = (overrides: Partial<StoredClient> = {}) =>
    storedClientRecord({ clientId: `app-${newId()}`, createdAt: START, updatedAt: START, ...overrides });
  const seedGrant = async (clientId: string) => {
    const grantId = newId();
    await adapter('Grant').upsert(grantId, { accountId: newId(), clientId }, 3600);
    await adapter('RefreshToken').upsert(`refresh-${grantId}`, { jti: `refresh-${grantId}`, grantId }, 3600);
    return grantId;
  };
  const rowsOfGrant = async (grantId: string) =>
    Number((await world().db('oidc_payloads').where({ grant_id: grantId }).count({ count: '*' }).first())?.count);
  const watermark = (clientId: string) =>
    world().db('identity_token_revocations').where({ subject_type: 'client', subject_id: clientId }).first();
  const evictionsOf = (clientId: string) =>
    world().evicted.filter((eviction) => eviction.key === clientId || eviction.key === `client:${clientId}`);

  describe('insert and find', () => {
    it('stores a client as given and reads it back (branding is set apart), and refuses a taken id without evicting anything', async () => {
      const client = newClient({
        kind: 'application',
        redirectUris: ['https://app.example/callback'],
        scopes: ['openid', 'profile'],
        refreshTokenLifetime: 3600,
      });
      await clients().insert(client);
      expect(await clients().find(client.clientId)).toEqual(client);
      await expect
        .poll(() => evictionsOf(client.clientId))
        .toEqual([{ namespace: CacheNamespaces.clients, key: client.clientId }]);

      await expect(clients().insert(client)).rejects.toThrow();
      expect(evictionsOf(client.clientId)).toHaveLength(1);
      expect(await clients().find(`app-${newId()}`)).toBeUndefined();
    });
  });

  describe('list', () => {
    it("lists one organization's clients only, the unbound ones for null, and every client without a filter", async () => {
      const [acme, globex] = [await seedOrganization(world().db), await seedOrganization(world().db)];
      const ofAcme = [
        newClient({ organizationId: acme.id }),
        newClient({ organizationId: acme.id, createdAt: after(START, 1).toISOString() }),
      ];
      const ofGlobex = newClient({ organizationId: globex.id });
      const unbound = newClient();
      for (const client of [...ofAcme, ofGlobex, unbound]) await clients().insert(client);

      expect((await clients().list(acme.id)).map((client) => client.clientId)).toEqual(ofAcme.map((client) => client.clientId));
      expect((await clients().list(globex.id)).map((client) => client.clientId)).toEqual([ofGlobex.clientId]);
      expect(await clients().list(newId())).toEqual([]);
      const unboundIds = (await clients().list(null)).map((client) => client.clientId);
      expect(unboundIds).toContain(unbound.clientId);
      expect(unboundIds).not.toContain(ofGlobex.clientId);
      const everyId = (await clients().list()).map((client) => client.clientId);
      expect(everyId).toEqual(expect.arrayContaining([...ofAcme, ofGlobex, unbound].map((client) => client.clientId)));
    });
  });

  describe('update', () => {
    it('changes the given fields only, answers the client, and undefined for an unknown one', async () => {
      const client = newClient({ redirectUris: ['https://a.example/cb'], scopes: ['openid'] });
      await clients().insert(client);
      const at = after(START, 60_000);
      const updated = await clients().update(client.clientId, { scopes: ['openid', 'email'], backchannelLogoutUri: null }, at);
      expect(updated).toEqual({ ...client, scopes: ['openid', 'email'], updatedAt: at.toISOString() });
      expect(await clients().find(client.clientId)).toEqual(updated);
      await expect.poll(() => evictionsOf(client.clientId)).toHaveLength(2);
      expect(await clients().update(`app-${newId()}`, { scopes: [] }, at)).toBeUndefined();
    });
  });

  describe('setStatus', () => {
    it('lets exactly one of several concurrent callers move a status, and answers the others unchanged', async () => {
      const client = newClient();
      await clients().insert(client);
      const at = after(START, 1000);
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => clients().setStatus(client.clientId, 'active', 'suspended', at)),
      );
      expect(answers.filter((answer) => answer === 'updated')).toHaveLength(1);
      expect(answers.filter((answer) => answer === 'unchanged')).toHaveLength(3);
      expect((await clients().find(client.clientId))?.status).toBe('suspended');
      expect(await clients().setStatus(`app-${newId()}`, 'active', 'suspended', at)).toBe('not-found');
    });

    it("ends every token of a suspended client: its grants' rows deleted, a watermark at the given time", async () => {
      const [client, other] = [newClient(), newClient()];
      await clients().insert(client);
      await clients().insert(other);
      const [grantId, othersGrant] = [await seedGrant(client.clientId), await seedGrant(other.clientId)];
      const at = new Date('2030-01-02T00:00:00.000Z');
      expect(await clients().setStatus(client.clientId, 'active', 'suspended', at)).toBe('updated');
      expect(await rowsOfGrant(grantId)).toBe(0);
      expect(await rowsOfGrant(othersGrant)).toBe(2);
      expect(Number((await watermark(client.clientId))?.not_before)).toBe(Math.floor(at.getTime() / 1000) + 1);
      await expect
        .poll(() => evictionsOf(client.clientId).slice(-2))
        .toEqual([
          { namespace: CacheNamespaces.revocations, key: `client:${client.clientId}` },
          { namespace: CacheNamespaces.clients, key: client.clientId },
        ]);
      // Reinstating writes no watermark and deletes nothing more.
      const reinstatedGrant = await seedGrant(client.clientId);
      expect(await clients().setStatus(client.clientId, 'suspended', 'active', after(at, 1000))).toBe('updated');
      expect(await rowsOfGrant(reinstatedGrant)).toBe(2);
    });
  });

  describe('rotateSecret', () => {
    it('replaces the secret hash, and with revokeActiveTokens ends every token issued so far', async () => {
      const client = newClient();
      await clients().insert(client);
      const kept = await seedGrant(client.clientId);
      const at = new Date('2030-01-03T00:00:00.000Z');
      const rotated = await clients().rotateSecret(client.clientId, 'sha256:01', {
        at,
        byUserId: null,
        revokeActiveTokens: false,
      });
      expect(rotated).toMatchObject({ secretHash: 'sha256:01', lastRotatedAt: at.toISOString(), updatedAt: at.toISOString() });
      expect(await rowsOfGrant(kept)).toBe(2);
      expect(await watermark(client.clientId)).toBeUndefined();

      const later = after(at, 60_000);
      await clients().rotateSecret(client.clientId, 'sha256:02', { at: later, byUserId: null, revokeActiveTokens: true });
      expect(await rowsOfGrant(kept)).toBe(0);
      expect(Number((await watermark(client.clientId))?.not_before)).toBe(Math.floor(later.getTime() / 1000) + 1);
      expect(
        await clients().rotateSecret(`app-${newId()}`, 'sha256:03', { at, byUserId: null, revokeActiveTokens: true }),
      ).toBeUndefined();
    });
  });

  describe('delete', () => {
    it('deletes the client and its grants, refuses all its tokens, and frees its id for a new client whose tokens work', async () => {
      const client = newClient();
      await clients().insert(client);
      const grantId = await seedGrant(client.clientId);
      const at = new Date('2030-01-04T00:00:00.000Z');
      expect(await clients().delete(client.clientId, at)).toBe(true);
      expect(await clients().find(client.clientId)).toBeUndefined();
      expect(await rowsOfGrant(grantId)).toBe(0);
      expect(Number((await watermark(client.clientId))?.not_before)).toBe(REVOKE_ALL);
      expect(await clients().delete(client.clientId, at)).toBe(false);

      // Registered again: the deleted client's tokens (issued up to the deletion) stay refused, the new one's are not.
      await clients().insert({ ...client, createdAt: after(at, 1000).toISOString() });
      expect(Number((await watermark(client.clientId))?.not_before)).toBe(Math.floor(at.getTime() / 1000) + 1);
    });
  });

  describe('setBranding and touch', () => {
    it('sets and clears branding, and records use at the given time; unknown clients change nothing', async () => {
      const client = newClient();
      await clients().insert(client);
      const branding = {
        displayName: 'Branded',
        tagline: 'Hello',
        themeJson: {
          light: { primary: '#000000', primaryForeground: '#ffffff' },
          dark: { primary: '#ffffff', primaryForeground: '#000000' },
        },
        logo: null,
        logoContentType: null,
      };
      expect(await clients().setBranding(client.clientId, branding, after(START, 1000))).toBe(true);
      expect((await clients().find(client.clientId))?.branding).toEqual(branding);
      expect(await clients().setBranding(client.clientId, null, after(START, 2000))).toBe(true);
      expect((await clients().find(client.clientId))?.branding).toBeNull();
      expect(await clients().setBranding(`app-${newId()}`, null, after(START, 2000))).toBe(false);

      await clients().touch(client.clientId, after(START, 3000));
      expect((await clients().find(client.clientId))?.lastUsedAt).toBe(after(START, 3000).toISOString());
    });
  });

  describe('scopes', () => {
    it('adds scope rows and updates those of the same name, in scope order', async () => {
      const name = `contract.${newId().slice(-8)}`;
      await clients().upsertScopes([{ scope: name, description: 'First', default: false, platformOnly: false }]);
      await clients().upsertScopes([{ scope: name, description: 'Second', default: true, platformOnly: true }]);
      await clients().upsertScopes([]);
      const rows = await clients().scopes();
      expect(rows.filter((row) => row.scope === name)).toEqual([
        { scope: name, description: 'Second', default: true, platformOnly: true },
      ]);
      expect(rows.map((row) => row.scope)).toEqual([...rows.map((row) => row.scope)].sort());
    });
  });
});
