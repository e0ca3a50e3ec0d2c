import { type AuditTrail, type EventOutbox, newId, type SecretBox } from '@idt/core';
import { type CacheInvalidator, knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { DeliveryAttemptResponse } from '../webhooks/schemas.js';
import type { DeliveryRecord, EndpointRecord, MessageRecord, WebhooksStore, WebhooksWrites } from '../webhooks/store.js';
import {
  WEBHOOK_ATTEMPTS_TABLE,
  WEBHOOK_DELIVERIES_TABLE,
  WEBHOOK_ENDPOINTS_TABLE,
  WEBHOOK_MESSAGES_TABLE,
} from './migrations.js';

type Row = Record<string, unknown>;

/** The purpose the endpoint secrets' key is derived for (see `createSecretBox`). */
export const WEBHOOK_SECRET_PURPOSE = 'idt-webhook-secrets';

const text = (value: unknown) => (value === null || value === undefined ? null : String(value));

function endpointFromRow(row: Row, box: SecretBox): EndpointRecord {
  const id = String(row.id);
  const previous = text(row.previous_secret);
  return {
    id,
    url: String(row.url),
    description: String(row.description),
    eventTypes: JSON.parse(String(row.event_types)) as string[],
    organizationId: text(row.organization_id),
    enabled: row.enabled === true || row.enabled === 1,
    disabledReason: text(row.disabled_reason),
    secret: box.open(String(row.secret), id),
    previousSecret: previous === null ? null : box.open(previous, id),
    previousSecretExpiresAt: toIsoOrNull(row.previous_secret_expires_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    lastSuccessAt: toIsoOrNull(row.last_success_at),
    failureStreakSince: toIsoOrNull(row.failure_streak_since),
  };
}

function endpointRow(endpoint: EndpointRecord, box: SecretBox) {
  return {
    url: endpoint.url,
    description: endpoint.description,
    event_types: JSON.stringify(endpoint.eventTypes),
    organization_id: endpoint.organizationId,
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason,
    secret: box.seal(endpoint.secret, endpoint.id),
    previous_secret: endpoint.previousSecret === null ? null : box.seal(endpoint.previousSecret, endpoint.id),
    previous_secret_expires_at: endpoint.previousSecretExpiresAt,
    updated_at: endpoint.updatedAt,
    last_success_at: endpoint.lastSuccessAt,
    failure_streak_since: endpoint.failureStreakSince,
  };
}

function messageFromRow(row: Row): MessageRecord {
  return {
    id: String(row.id),
    eventType: String(row.event_type),
    organizationId: text(row.organization_id),
    data: JSON.parse(String(row.data)) as Record<string, unknown>,
    occurredAt: toIso(row.occurred_at),
  };
}

function attemptFromRow(row: Row): DeliveryAttemptResponse {
  return {
    id: String(row.id),
    messageId: String(row.message_id),
    eventType: String(row.event_type),
    attempt: Number(row.attempt),
    status: String(row.status) as DeliveryAttemptResponse['status'],
    responseStatus: row.response_status === null || row.response_status === undefined ? null : Number(row.response_status),
    durationMs: Number(row.duration_ms),
    error: text(row.error),
    createdAt: toIso(row.created_at),
    nextAttemptAt: toIsoOrNull(row.next_attempt_at),
  };
}

/** The {@link WebhooksWrites} primitives over one transaction, with endpoint secrets sealed by `box`. */
function webhooksWrites(trx: Knex.Transaction, box: SecretBox): WebhooksWrites {
  return {
    async insertEndpoint(endpoint) {
      await trx(WEBHOOK_ENDPOINTS_TABLE).insert({
        id: endpoint.id,
        ...endpointRow(endpoint, box),
        created_at: endpoint.createdAt,
      });
    },

    async updateEndpoint(endpoint) {
      return (await trx(WEBHOOK_ENDPOINTS_TABLE).where({ id: endpoint.id }).update(endpointRow(endpoint, box))) > 0;
    },

    async deleteEndpoint(id) {
      return (await trx(WEBHOOK_ENDPOINTS_TABLE).where({ id }).delete()) > 0;
    },

    async recordAttempt(outcome) {
      const delivery = await trx(`${WEBHOOK_DELIVERIES_TABLE} as d`)
        .join(`${WEBHOOK_MESSAGES_TABLE} as m`, 'm.id', 'd.message_id')
        .where('d.id', outcome.deliveryId)
        .first('d.endpoint_id', 'd.message_id', 'm.event_type');
      if (!delivery) return undefined;
      await trx(WEBHOOK_ATTEMPTS_TABLE).insert({
        id: newId(),
        delivery_id: outcome.deliveryId,
        endpoint_id: delivery.endpoint_id,
        message_id: delivery.message_id,
        event_type: delivery.event_type,
        attempt: outcome.attempt,
        status: outcome.status,
        response_status: outcome.responseStatus,
        duration_ms: outcome.durationMs,
        error: outcome.error?.slice(0, 500) ?? null,
        created_at: outcome.at,
        next_attempt_at: outcome.nextAttemptAt,
      });
      await trx(WEBHOOK_DELIVERIES_TABLE).where({ id: outcome.deliveryId }).update({
        status: outcome.status,
        attempts: outcome.attempt,
        next_attempt_at: outcome.nextAttemptAt,
        claimed_until: null,
      });
      const endpointId = String(delivery.endpoint_id);
      if (outcome.status === 'succeeded') {
        await trx(WEBHOOK_ENDPOINTS_TABLE)
          .where({ id: endpointId })
          .update({ last_success_at: outcome.at, failure_streak_since: null });
        return undefined;
      }
      await trx(WEBHOOK_ENDPOINTS_TABLE)
        .where({ id: endpointId })
        .whereNull('failure_streak_since')
        .update({ failure_streak_since: outcome.at });
      if (!outcome.disableEndpoint) return undefined;
      const disabled: Array<{ url: string }> = await trx(WEBHOOK_ENDPOINTS_TABLE)
        .where({ id: endpointId, enabled: true })
        .update({ enabled: false, disabled_reason: outcome.disableEndpoint, updated_at: outcome.at })
        .returning(['url']);
      // Only the attempt that disabled it reports it (a concurrent one finds it disabled).
      const [endpointRow] = disabled;
      return endpointRow ? { endpointId, url: endpointRow.url } : undefined;
    },
  };
}

/** Evicts nothing: without an invalidator no instance caches the routing, so there is nothing to evict. */
const noEvictions: Pick<CacheInvalidator, 'invalidateMany'> = { invalidateMany: async () => undefined };

/**
 * The knex {@link WebhooksStore}. Endpoint secrets are sealed with `box`
 * (AES-256-GCM under the server secret, bound to the endpoint id): they
 * sign deliveries, so they cannot be hashed, and a copy of the database
 * alone does not let anyone forge deliveries. Deliveries are claimed one conditional
 * `UPDATE` at a time (status pending, due, lease free), so two instances
 * never send the same attempt; a crashed instance's lease runs out and
 * another takes the delivery over, under the same `webhook-id`. The
 * webhooks service writes `WebhookEndpointDisabledEvent` through `outbox`,
 * and evicts `WEBHOOK_ENDPOINTS_CACHE` on every instance through
 * `invalidator` after every write that can change which endpoints receive
 * an event, in the write's transaction (without an invalidator, nothing
 * caches the routing and the evictions are dropped). The service's audit
 * records of endpoint changes are written through `audit`, in the same
 * transaction (none without it).
 *
 * @example
 * const store = createKnexWebhooksStore(db, bus, createSecretBox(secret, WEBHOOK_SECRET_PURPOSE), invalidator);
 */
export function createKnexWebhooksStore(
  db: Knex,
  outbox: EventOutbox,
  box: SecretBox,
  invalidator?: Pick<CacheInvalidator, 'invalidateMany'>,
  audit?: Pick<AuditTrail, 'record'>,
): WebhooksStore {
  const fromRow = (row: Row) => endpointFromRow(row, box);
  return {
    ...knexUnitOfWork({ db, outbox, invalidator: invalidator ?? noEvictions, ...(audit ? { audit } : {}) }, (trx) =>
      webhooksWrites(trx, box),
    ),

    async findEndpoint(id) {
      const row = await db(WEBHOOK_ENDPOINTS_TABLE).where({ id }).first();
      return row ? fromRow(row) : undefined;
    },

    async listEndpoints() {
      return (await db(WEBHOOK_ENDPOINTS_TABLE).orderBy('created_at')).map(fromRow);
    },

    enqueue: (message, endpointIds, at, sourceEventId) =>
      db.transaction(async (trx) => {
        const inserted: Row[] = await trx(WEBHOOK_MESSAGES_TABLE)
          .insert({
            id: message.id,
            event_type: message.eventType,
            organization_id: message.organizationId,
            data: JSON.stringify(message.data),
            occurred_at: message.occurredAt,
            source_event_id: sourceEventId ?? null,
          })
          .onConflict('source_event_id')
          .ignore()
          .returning('id');
        if (inserted.length === 0) return false;
        if (endpointIds.length > 0) {
          await trx(WEBHOOK_DELIVERIES_TABLE).insert(
            endpointIds.map((endpointId) => ({
              id: newId(),
              message_id: message.id,
              endpoint_id: endpointId,
              status: 'pending',
              attempts: 0,
              next_attempt_at: at,
            })),
          );
        }
        return true;
      }),

    async findMessage(id) {
      const row = await db(WEBHOOK_MESSAGES_TABLE).where({ id }).first();
      return row ? messageFromRow(row) : undefined;
    },

    async requeue(messageId, endpointId, at) {
      await db(WEBHOOK_DELIVERIES_TABLE)
        .insert({
          id: newId(),
          message_id: messageId,
          endpoint_id: endpointId,
          status: 'pending',
          attempts: 0,
          next_attempt_at: at,
        })
        .onConflict(['message_id', 'endpoint_id'])
        .merge({ status: 'pending', attempts: 0, next_attempt_at: at, claimed_until: null });
    },

    async claimDue(now, leaseUntil, limit) {
      const candidates: Row[] = await db(`${WEBHOOK_DELIVERIES_TABLE} as d`)
        .join(`${WEBHOOK_ENDPOINTS_TABLE} as e`, 'e.id', 'd.endpoint_id')
        .where('d.status', 'pending')
        .andWhere('e.enabled', true)
        .andWhere('d.next_attempt_at', '<=', now)
        .andWhere((where) => where.whereNull('d.claimed_until').orWhere('d.claimed_until', '<', now))
        .orderBy('d.next_attempt_at')
        .limit(limit)
        .select('d.id');
      const claimed: DeliveryRecord[] = [];
      for (const { id } of candidates as Array<{ id: string }>) {
        const taken = await db(WEBHOOK_DELIVERIES_TABLE)
          .where({ id, status: 'pending' })
          .andWhere((where) => where.whereNull('claimed_until').orWhere('claimed_until', '<', now))
          .update({ claimed_until: leaseUntil });
        if (taken === 0) continue;
        const row = await db(`${WEBHOOK_DELIVERIES_TABLE} as d`)
          .join(`${WEBHOOK_MESSAGES_TABLE} as m`, 'm.id', 'd.message_id')
          .where('d.id', id)
          .first(
            'd.id',
            'd.attempts',
            'd.endpoint_id',
            'm.id as m_id',
            'm.event_type',
            'm.organization_id',
            'm.data',
            'm.occurred_at',
          );
        const endpoint = row ? await db(WEBHOOK_ENDPOINTS_TABLE).where({ id: row.endpoint_id }).first() : undefined;
        if (!row || !endpoint) continue;
        claimed.push({
          id: String(row.id),
          attempts: Number(row.attempts),
          message: messageFromRow({ ...row, id: row.m_id }),
          endpoint: fromRow(endpoint),
        });
      }
      return claimed;
    },

    async attempts(endpointId, status, page, pageSize) {
      const base = db(WEBHOOK_ATTEMPTS_TABLE).where({ endpoint_id: endpointId });
      if (status) base.where({ status });
      const counted = await base.clone().count({ n: '*' }).first();
      const rows = await base
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .offset((page - 1) * pageSize)
        .limit(pageSize);
      return { items: rows.map(attemptFromRow), totalCount: Number(counted?.n ?? 0) };
    },
  };
}
