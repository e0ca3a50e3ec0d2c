import { createManualClock, type ManualClock, newId } from '@idt/core';
import { describe, expect, it } from 'vitest';
import type { StoredClient } from '../../src/clients/store.js';
import { createKnexAdapterClass, type KnexAdapterClass } from '../../src/knex.js';
import { storedClientRecord } from '../support/clients.js';
import { describeStoreContract } from './harness.js';

const START = '2030-01-01T00:00:00.000Z';

/**
 * The contract of oidc-provider's storage adapter that idt's policy stands
 * on, beside what `test/adapter.test.ts` shows of each call: a code or a
 * refresh token is consumed by exactly one of concurrent callers (the first
 * time stays), a payload is found until the given time reaches its expiry,
 * lookups by uid and user code are per model, revoking a grant touches no
 * other, and a client is served only while active.
 */
describeStoreContract('oidc-provider adapter', (world) => {
  const adapterClass = (
    clock: ManualClock,
    findClient: (id: string) => Promise<StoredClient | undefined> = async () => undefined,
  ) =>
    createKnexAdapterClass({
      db: world().db,
      clock,
      invalidator: world().invalidator,
      findClient,
      clientMetadata: (client) => ({ client_id: client.clientId }),
    });

  describe('consume', () => {
    it('lets exactly one of several concurrent callers, on two instances, consume a code: its time stays', async () => {
      // Two instances whose clocks differ: whichever consumption won, the time is that one's, and it stays.
      const [first, second] = [createManualClock(START), createManualClock('2030-01-01T00:00:01.000Z')];
      const One: KnexAdapterClass = adapterClass(first);
      const Two: KnexAdapterClass = adapterClass(second);
      for (const model of ['AuthorizationCode', 'RefreshToken']) {
        const id = `${model}-${newId()}`;
        await new One(model).upsert(id, { jti: id, grantId: newId() }, 600);
        await Promise.all(Array.from({ length: 8 }, (_, index) => new (index % 2 ? Two : One)(model).consume(id)));
        const consumed = (await new One(model).find(id))?.consumed;
        expect([first.now().getTime() / 1000, second.now().getTime() / 1000]).toContain(consumed);
        // Later consumptions, on either instance, change nothing.
        first.advance(60_000);
        second.advance(60_000);
        await Promise.all([new One(model).consume(id), new Two(model).consume(id)]);
        expect((await new Two(model).find(id))?.consumed).toBe(consumed);
      }
    });
  });

  describe('expiry', () => {
    it('finds a payload until the given time reaches its expiry, by id, uid and user code alike', async () => {
      const clock = createManualClock(START);
      const Adapter = adapterClass(clock);
      const [id, uid, userCode] = [newId(), newId(), newId()];
      await new Adapter('DeviceCode').upsert(id, { uid, userCode, grantId: newId() }, 30);
      clock.advance(29_999);
      expect(await new Adapter('DeviceCode').find(id)).toBeDefined();
      expect(await new Adapter('DeviceCode').findByUid(uid)).toBeDefined();
      expect(await new Adapter('DeviceCode').findByUserCode(userCode)).toBeDefined();
      clock.advance(1);
      expect(await new Adapter('DeviceCode').find(id)).toBeUndefined();
      expect(await new Adapter('DeviceCode').findByUid(uid)).toBeUndefined();
      expect(await new Adapter('DeviceCode').findByUserCode(userCode)).toBeUndefined();
    });

    it('keeps a payload written without a lifetime', async () => {
      const clock = createManualClock(START);
      const Adapter = adapterClass(clock);
      const id = newId();
      await new Adapter('Interaction').upsert(id, { uid: newId() });
      clock.advance(365 * 86_400_000);
      expect(await new Adapter('Interaction').find(id)).toBeDefined();
    });
  });

  describe('lookups', () => {
    it('finds by uid and user code within its own model only', async () => {
      const Adapter = adapterClass(createManualClock(START));
      const [uid, userCode] = [newId(), newId()];
      await new Adapter('Interaction').upsert(newId(), { uid }, 60);
      await new Adapter('DeviceCode').upsert(newId(), { userCode }, 60);
      expect(await new Adapter('Session').findByUid(uid)).toBeUndefined();
      expect(await new Adapter('Interaction').findByUid(uid)).toMatchObject({ uid });
      expect(await new Adapter('BackchannelAuthenticationRequest').findByUserCode(userCode)).toBeUndefined();
      expect(await new Adapter('DeviceCode').findByUserCode(userCode)).toMatchObject({ userCode });
    });
  });

  describe('revokeByGrantId and destroy', () => {
    it("delete one grant's rows, or one row, and nothing else", async () => {
      const Adapter = adapterClass(createManualClock(START));
      const [ended, kept] = [newId(), newId()];
      for (const grantId of [ended, kept]) {
        await new Adapter('Grant').upsert(grantId, { accountId: 'user', clientId: 'app' }, 600);
        await new Adapter('AuthorizationCode').upsert(`code-${grantId}`, { grantId }, 600);
        await new Adapter('AccessToken').upsert(`access-${grantId}`, { grantId }, 600);
      }
      await new Adapter('AccessToken').revokeByGrantId(ended);
      expect(await new Adapter('Grant').find(ended)).toBeUndefined();
      expect(await new Adapter('AuthorizationCode').find(`code-${ended}`)).toBeUndefined();
      expect(await new Adapter('Grant').find(kept)).toBeDefined();
      expect(await new Adapter('AuthorizationCode').find(`code-${kept}`)).toBeDefined();

      // A model's row of the same id as another model's is another row.
      await new Adapter('AccessToken').destroy(`code-${kept}`);
      expect(await new Adapter('AuthorizationCode').find(`code-${kept}`)).toBeDefined();
      await new Adapter('AuthorizationCode').destroy(`code-${kept}`);
      expect(await new Adapter('AuthorizationCode').find(`code-${kept}`)).toBeUndefined();
      expect(await new Adapter('AccessToken').find(`access-${kept}`)).toBeDefined();
    });
  });

  describe('clients', () => {
    it('serves a client while it is active, and neither a suspended nor an unknown one', async () => {
      const records = new Map<string, StoredClient>();
      const Adapter = adapterClass(createManualClock(START), async (id) => records.get(id));
      const [active, suspended] = [`app-${newId()}`, `app-${newId()}`];
      records.set(active, storedClientRecord({ clientId: active }));
      records.set(suspended, storedClientRecord({ clientId: suspended, status: 'suspended' }));
      expect(await new Adapter('Client').find(active)).toEqual({ client_id: active });
      expect(await new Adapter('Client').find(suspended)).toBeUndefined();
      expect(await new Adapter('Client').find(`app-${newId()}`)).toBeUndefined();
    });
  });
});
