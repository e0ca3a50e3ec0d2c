import { createSecretBox, newId } from '@idt/core';
import { describe, expect, it } from 'vitest';
import {
  createKnexWebhooksStore,
  WEBHOOK_DELIVERIES_TABLE,
  WEBHOOK_ENDPOINTS_TABLE,
  WEBHOOK_MESSAGES_TABLE,
  WEBHOOK_SECRET_PURPOSE,
} from '../../src/knex.js';
import { newMessageId } from '../../src/webhooks/signing.js';
import type { AttemptOutcome, EndpointRecord, MessageRecord, WebhooksStore } from '../../src/webhooks/store.js';
import { describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('webhooks', (world) => {
  let store: WebhooksStore;
  const webhooks = () => {
    const { db, outbox, invalidator } = world().options;
    store ??= createKnexWebhooksStore(db, outbox, createSecretBox('contract-secret', WEBHOOK_SECRET_PURPOSE), invalidator);
    return store;
  };
  const endpoint = (overrides: Partial<EndpointRecord> = {}): EndpointRecord => ({
    id: newId(),
    url: 'https://hooks.example.com/idt',
    description: '',
    eventTypes: [],
    organizationId: null,
    enabled: true,
    disabledReason: null,
    secret: `whsec_${newId()}`,
    previousSecret: null,
    previousSecretExpiresAt: null,
    createdAt: AT,
    updatedAt: AT,
    lastSuccessAt: null,
    failureStreakSince: null,
    ...overrides,
  });
  const inserted = async (overrides: Partial<EndpointRecord> = {}) => {
    const value = endpoint(overrides);
    await webhooks().transaction((tx) => tx.insertEndpoint(value));
    return value;
  };
  const message = (overrides: Partial<MessageRecord> = {}): MessageRecord => ({
    id: newMessageId(),
    eventType: 'user.created',
    organizationId: null,
    data: { userId: 'u-1' },
    occurredAt: AT,
    ...overrides,
  });
  const deliveriesOf = async (messageId: string) =>
    (await world()
      .db(WEBHOOK_DELIVERIES_TABLE)
      .where({ message_id: messageId })
      .orderBy('endpoint_id')
      .select('id', 'endpoint_id', 'status', 'attempts', 'next_attempt_at', 'claimed_until')) as Array<{
      id: string;
      endpoint_id: string;
      status: string;
      attempts: number;
    }>;
  /** A message enqueued for `target`, and its delivery's id. */
  const delivery = async (target: EndpointRecord, at = AT) => {
    const value = message();
    await webhooks().enqueue(value, [target.id], at);
    const [row] = await deliveriesOf(value.id);
    if (!row) throw new Error('The delivery was not stored');
    return { message: value, deliveryId: row.id };
  };
  const outcome = (deliveryId: string, overrides: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
    deliveryId,
    attempt: 1,
    status: 'pending',
    responseStatus: 500,
    durationMs: 12,
    error: 'HTTP 500',
    at: AT,
    nextAttemptAt: '2030-01-01T00:01:00.000Z',
    disableEndpoint: null,
    ...overrides,
  });
  const record = (value: AttemptOutcome) => webhooks().transaction((tx) => tx.recordAttempt(value));

  itRunsOneUnitOfWork(world, webhooks, {
    prepare: async () => endpoint(),
    write: (tx, probe, value) => tx.insertEndpoint({ ...value, description: probe }),
    written: async (_probe, value) => (await webhooks().findEndpoint(value.id)) !== undefined,
  });

  describe('endpoints', () => {
    it('stores secrets sealed and reads them back; lists oldest first', async () => {
      const later = await inserted({ createdAt: '2030-01-03T00:00:00.000Z' });
      const earlier = await inserted({
        createdAt: '2030-01-02T00:00:00.000Z',
        previousSecret: 'whsec_previous',
        previousSecretExpiresAt: '2030-01-04T00:00:00.000Z',
        eventTypes: ['user.created'],
        organizationId: newId(),
      });
      const row = await world().db(WEBHOOK_ENDPOINTS_TABLE).where({ id: earlier.id }).first('secret', 'previous_secret');
      expect(row.secret).not.toContain(earlier.secret);
      expect(row.previous_secret).not.toContain('whsec_previous');
      expect(await webhooks().findEndpoint(earlier.id)).toEqual(earlier);
      const listed = (await webhooks().listEndpoints()).map((found) => found.id);
      expect(listed.filter((id) => id === earlier.id || id === later.id)).toEqual([earlier.id, later.id]);
      expect(await webhooks().findEndpoint(newId())).toBeUndefined();
    });

    it('updates and deletes an endpoint; false for a missing one; deleting takes its deliveries', async () => {
      const value = await inserted();
      const changed = {
        ...value,
        url: 'https://hooks.example.com/v2',
        secret: 'whsec_rotated',
        updatedAt: '2030-02-01T00:00:00.000Z',
      };
      expect(await webhooks().transaction((tx) => tx.updateEndpoint(changed))).toBe(true);
      expect(await webhooks().findEndpoint(value.id)).toEqual(changed);
      expect(await webhooks().transaction((tx) => tx.updateEndpoint(endpoint()))).toBe(false);

      const { message: queued } = await delivery(value);
      const removals = [
        webhooks().transaction((tx) => tx.deleteEndpoint(value.id)),
        webhooks().transaction((tx) => tx.deleteEndpoint(value.id)),
      ];
      expect(await winners(removals)).toBe(1);
      expect(await webhooks().findEndpoint(value.id)).toBeUndefined();
      expect(await deliveriesOf(queued.id)).toEqual([]);
    });
  });

  describe('enqueue and requeue', () => {
    it('stores a message with one pending delivery per endpoint, once per source event', async () => {
      const first = await inserted();
      const second = await inserted();
      const value = message({ organizationId: newId() });
      const source = newId();
      const calls = [
        webhooks().enqueue(value, [first.id, second.id], AT, source),
        webhooks().enqueue({ ...value, id: newMessageId() }, [first.id, second.id], AT, source),
      ];
      expect(await winners(calls)).toBe(1);
      const stored = (await world().db(WEBHOOK_MESSAGES_TABLE).where({ source_event_id: source }).pluck('id')) as string[];
      expect(stored).toHaveLength(1);
      const rows = await deliveriesOf(stored[0] ?? '');
      expect(rows.map((row) => row.endpoint_id)).toEqual([first.id, second.id].sort());
      for (const row of rows)
        expect({ status: row.status, attempts: Number(row.attempts) }).toEqual({ status: 'pending', attempts: 0 });
      expect(await webhooks().enqueue(message(), [first.id], AT, source)).toBe(false);
    });

    it('finds a message as stored; a message without endpoints is stored without deliveries', async () => {
      const value = message({ data: { nested: { a: [1, 2] } } });
      expect(await webhooks().enqueue(value, [], AT)).toBe(true);
      expect(await webhooks().findMessage(value.id)).toEqual(value);
      expect(await deliveriesOf(value.id)).toEqual([]);
      expect(await webhooks().findMessage(newMessageId())).toBeUndefined();
    });

    it('requeues a delivery as a new series of attempts, creating it when missing', async () => {
      const target = await inserted();
      const other = await inserted();
      const { message: queued, deliveryId } = await delivery(target);
      await record(outcome(deliveryId, { status: 'failed', attempt: 3, nextAttemptAt: null }));
      const again = '2030-03-01T00:00:00.000Z';
      await webhooks().requeue(queued.id, target.id, again);
      await webhooks().requeue(queued.id, other.id, again);
      const rows = await deliveriesOf(queued.id);
      expect(rows).toHaveLength(2);
      for (const row of rows)
        expect({ status: row.status, attempts: Number(row.attempts) }).toEqual({ status: 'pending', attempts: 0 });
      expect(rows.find((row) => row.endpoint_id === target.id)?.id).toBe(deliveryId);
    });
  });

  describe('claimDue', () => {
    it('hands every due delivery of an enabled endpoint to one claimer until its lease runs out', async () => {
      const due = '2070-01-01T00:00:00.000Z';
      const now = '2070-01-01T00:00:01.000Z';
      const leaseUntil = '2070-01-01T00:01:00.000Z';
      const enabled = await inserted();
      const disabled = await inserted({ enabled: false, disabledReason: 'gone' });
      const mine = new Set<string>();
      for (let i = 0; i < 6; i++) mine.add((await delivery(enabled, due)).deliveryId);
      const notYet = await delivery(enabled, '2070-01-01T00:00:02.000Z');
      const ofDisabled = await delivery(disabled, due);

      const claims = await Promise.all([webhooks().claimDue(now, leaseUntil, 1000), webhooks().claimDue(now, leaseUntil, 1000)]);
      const claimed = claims.flat().filter((found) => found.endpoint.id === enabled.id || found.endpoint.id === disabled.id);
      expect(claimed.map((found) => found.id).sort()).toEqual([...mine].sort());
      expect(claimed.map((found) => found.id)).not.toContain(notYet.deliveryId);
      expect(claimed.map((found) => found.id)).not.toContain(ofDisabled.deliveryId);
      const [first] = claimed;
      expect(first?.endpoint).toEqual(enabled);
      expect(first?.attempts).toBe(0);
      expect(first?.message.eventType).toBe('user.created');

      // Within the lease nobody takes them again; once it ran out another instance does.
      const within = await webhooks().claimDue('2070-01-01T00:00:30.000Z', '2070-01-01T00:02:00.000Z', 1000);
      expect(within.map((found) => found.id).filter((id) => mine.has(id))).toEqual([]);
      const after = await webhooks().claimDue('2070-01-01T00:01:01.000Z', '2070-01-01T00:03:00.000Z', 1000);
      expect(
        after
          .map((found) => found.id)
          .filter((id) => mine.has(id))
          .sort(),
      ).toEqual([...mine].sort());
    });

    it('claims at most the limit, the earliest due first', async () => {
      const target = await inserted();
      const earliest = await delivery(target, '2075-01-01T00:00:00.000Z');
      await delivery(target, '2075-01-01T00:00:01.000Z');
      // Earlier cases' deliveries are due too: claim them out of the way first.
      await webhooks().claimDue('2074-12-31T00:00:00.000Z', '2099-01-01T00:00:00.000Z', 10_000);
      const claimed = await webhooks().claimDue('2075-01-02T00:00:00.000Z', '2075-01-03T00:00:00.000Z', 1);
      expect(claimed.map((found) => found.id)).toEqual([earliest.deliveryId]);
    });
  });

  describe('recordAttempt', () => {
    it('records a success: the delivery succeeds, the endpoint’s streak ends', async () => {
      const target = await inserted({ failureStreakSince: '2029-12-01T00:00:00.000Z' });
      const { message: queued, deliveryId } = await delivery(target);
      const success = outcome(deliveryId, { status: 'succeeded', responseStatus: 200, error: null, nextAttemptAt: null });
      expect(await record(success)).toBeUndefined();
      expect((await deliveriesOf(queued.id)).map((row) => ({ status: row.status, attempts: Number(row.attempts) }))).toEqual([
        { status: 'succeeded', attempts: 1 },
      ]);
      expect(await webhooks().findEndpoint(target.id)).toMatchObject({
        lastSuccessAt: AT,
        failureStreakSince: null,
        enabled: true,
      });
    });

    it('keeps the start of a failure streak, and of concurrent attempts that disable the endpoint exactly one reports it', async () => {
      const target = await inserted();
      const first = await delivery(target);
      const second = await delivery(target);
      expect(await record(outcome(first.deliveryId))).toBeUndefined();
      expect(await record(outcome(second.deliveryId, { at: '2030-01-02T00:00:00.000Z' }))).toBeUndefined();
      expect((await webhooks().findEndpoint(target.id))?.failureStreakSince).toBe(AT);

      const disabling = (deliveryId: string) =>
        record(
          outcome(deliveryId, {
            status: 'failed',
            attempt: 2,
            responseStatus: 410,
            nextAttemptAt: null,
            disableEndpoint: 'Gone.',
          }),
        );
      const reports = await Promise.all([disabling(first.deliveryId), disabling(second.deliveryId)]);
      expect(reports.filter((report) => report !== undefined)).toEqual([{ endpointId: target.id, url: target.url }]);
      expect(await webhooks().findEndpoint(target.id)).toMatchObject({ enabled: false, disabledReason: 'Gone.' });
    });

    it('writes nothing for a missing delivery', async () => {
      expect(await record(outcome(newId(), { disableEndpoint: 'Gone.' }))).toBeUndefined();
    });
  });

  describe('attempts', () => {
    it("pages an endpoint's attempts newest first, optionally of one status, with the total", async () => {
      const target = await inserted();
      const other = await inserted();
      const { deliveryId } = await delivery(target);
      const { deliveryId: elsewhere } = await delivery(other);
      for (let attempt = 1; attempt <= 3; attempt++) {
        await record(outcome(deliveryId, { attempt, at: `2030-01-0${attempt}T00:00:00.000Z` }));
      }
      await record(outcome(deliveryId, { attempt: 4, status: 'failed', at: '2030-01-04T00:00:00.000Z', nextAttemptAt: null }));
      await record(outcome(elsewhere));

      const all = await webhooks().attempts(target.id, undefined, 1, 3);
      expect(all.totalCount).toBe(4);
      expect(all.items.map((item) => item.attempt)).toEqual([4, 3, 2]);
      expect((await webhooks().attempts(target.id, undefined, 2, 3)).items.map((item) => item.attempt)).toEqual([1]);
      const failed = await webhooks().attempts(target.id, 'failed', 1, 10);
      expect(failed).toMatchObject({
        totalCount: 1,
        items: [{ attempt: 4, status: 'failed', responseStatus: 500, error: 'HTTP 500' }],
      });
    });
  });
});
