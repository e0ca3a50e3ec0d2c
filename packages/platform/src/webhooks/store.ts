import type { PageSlice } from '@idt/core';
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

/** Persistence of endpoints, messages, deliveries and attempts. */
export interface WebhooksStore {
  insertEndpoint(endpoint: EndpointRecord): Promise<void>;
  findEndpoint(id: string): Promise<EndpointRecord | undefined>;
  listEndpoints(): Promise<EndpointRecord[]>;
  updateEndpoint(endpoint: EndpointRecord): Promise<boolean>;
  deleteEndpoint(id: string): Promise<boolean>;
  /**
   * Stores a message and one pending delivery per endpoint id, due at `at`.
   * With `sourceEventId`, a second call for the same event does nothing
   * (the event bus delivers at least once). Returns whether it stored.
   */
  enqueue(message: MessageRecord, endpointIds: readonly string[], at: string, sourceEventId?: string): Promise<boolean>;
  findMessage(id: string): Promise<MessageRecord | undefined>;
  /** Makes the message's delivery to the endpoint pending and due at `at` (creating it when missing). */
  requeue(messageId: string, endpointId: string, at: string): Promise<void>;
  /**
   * Claims due deliveries of enabled endpoints until `leaseUntil`: a claimed
   * delivery is not handed out again before then, on any instance.
   */
  claimDue(now: string, leaseUntil: string, limit: number): Promise<DeliveryRecord[]>;
  /** Records an attempt and updates its delivery and endpoint, in one transaction. */
  recordAttempt(outcome: AttemptOutcome): Promise<void>;
  /** An endpoint's attempts, newest first. */
  attempts(
    endpointId: string,
    status: string | undefined,
    page: number,
    pageSize: number,
  ): Promise<PageSlice<DeliveryAttemptResponse>>;
}
