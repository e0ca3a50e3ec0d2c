import type { PageSlice, UnitOfWork } from '@idt/core';
import type { DeliveryAttemptResponse } from './schemas.js';

/** A stored webhook endpoint. */
export interface EndpointRecord {
  readonly id: string;
  readonly url: string;
  readonly description: string;
  /** Empty: every type. */
  readonly eventTypes: readonly string[];
  readonly organizationId: string | null;
  readonly enabled: boolean;
  readonly disabledReason: string | null;
  readonly secret: string;
  readonly previousSecret: string | null;
  readonly previousSecretExpiresAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly lastSuccessAt: string | null;
  readonly failureStreakSince: string | null;
}

/** A message: one event, delivered to every matching endpoint under one id. */
export interface MessageRecord {
  readonly id: string;
  readonly eventType: string;
  readonly organizationId: string | null;
  /** The `data` member of the body. */
  readonly data: Record<string, unknown>;
  /** When the event happened (the body's `timestamp`). */
  readonly occurredAt: string;
}

/** A message on its way to one endpoint. */
export interface DeliveryRecord {
  readonly id: string;
  readonly message: MessageRecord;
  readonly endpoint: EndpointRecord;
  /** Attempts made so far. */
  readonly attempts: number;
}

/** What one attempt did to its delivery. */
export interface AttemptOutcome {
  readonly deliveryId: string;
  readonly attempt: number;
  readonly status: 'pending' | 'succeeded' | 'failed';
  readonly responseStatus: number | null;
  readonly durationMs: number;
  readonly error: string | null;
  readonly at: string;
  /** When `pending`: the next attempt. */
  readonly nextAttemptAt: string | null;
  /** Disable the endpoint with this reason (410, or failing too long). */
  readonly disableEndpoint: string | null;
}

/** An endpoint that one attempt disabled. */
export interface DisabledEndpoint {
  readonly endpointId: string;
  readonly url: string;
}

/**
 * The webhook primitives the webhooks service runs in one transaction (see
 * {@link WebhooksStore.transaction}): the writes of endpoints (which the
 * service follows with the eviction of `WEBHOOK_ENDPOINTS_CACHE`) and
 * of attempts. None of them publishes events or evicts caches: the service
 * does, through the transaction's effects.
 */
export interface WebhooksWrites {
  insertEndpoint(endpoint: EndpointRecord): Promise<void>;
  /** Replaces an endpoint; `false` when there is none. */
  updateEndpoint(endpoint: EndpointRecord): Promise<boolean>;
  /** Deletes an endpoint with its deliveries and attempts; `false` when there was none. */
  deleteEndpoint(id: string): Promise<boolean>;
  /**
   * Records an attempt and updates its delivery (status, attempts, next
   * attempt, lease released) and its endpoint (last success, or the start
   * of its failure streak). With `disableEndpoint`, disables the endpoint in
   * one conditional statement (`UPDATE ... WHERE enabled`): of concurrent
   * attempts exactly one disables it.
   *
   * @returns the endpoint when this attempt disabled it; `undefined`
   *   otherwise (and when the delivery is missing, nothing is written).
   */
  recordAttempt(outcome: AttemptOutcome): Promise<DisabledEndpoint | undefined>;
}

/**
 * Persistence of endpoints, messages, deliveries and attempts: reads and
 * atomic writes of deliveries outside a transaction, and the
 * {@link WebhooksWrites} primitives inside one the webhooks service opens
 * (which also evicts the routing cache and writes
 * `WebhookEndpointDisabledEvent`, in that transaction).
 */
export interface WebhooksStore extends UnitOfWork<WebhooksWrites> {
  findEndpoint(id: string): Promise<EndpointRecord | undefined>;
  /** Every endpoint, oldest first. */
  listEndpoints(): Promise<EndpointRecord[]>;
  /**
   * Stores a message and one pending delivery per endpoint id, due at `at`,
   * in one transaction of its own. With `sourceEventId`, a second call for
   * the same event does nothing (the event bus delivers at least once).
   * Returns whether it stored.
   */
  enqueue(message: MessageRecord, endpointIds: readonly string[], at: string, sourceEventId?: string): Promise<boolean>;
  findMessage(id: string): Promise<MessageRecord | undefined>;
  /** Makes the message's delivery to the endpoint pending and due at `at` (creating it when missing). */
  requeue(messageId: string, endpointId: string, at: string): Promise<void>;
  /**
   * Claims due deliveries of enabled endpoints until `leaseUntil`, each with
   * one conditional statement: a claimed delivery is not handed out again
   * before then, on any instance.
   */
  claimDue(now: string, leaseUntil: string, limit: number): Promise<DeliveryRecord[]>;
  /** An endpoint's attempts, newest first. */
  attempts(
    endpointId: string,
    status: string | undefined,
    page: number,
    pageSize: number,
  ): Promise<PageSlice<DeliveryAttemptResponse>>;
}
