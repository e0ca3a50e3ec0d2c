import {
  type AuditMetadata,
  type Clock,
  checkOutboundUrl,
  newId,
  type OutboundResolver,
  type Page,
  systemClock,
  type TransactionEffects,
  toPage,
} from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { ProblemError, ValidationProblem } from '@idt/problem';
import { type PlatformActor, type PlatformDirectory, requirePlatformAdministrator } from '../access.js';
import {
  endpointDisplay,
  PlatformAuditActions,
  type PlatformRequestFacts,
  platformAuditActor,
  requestFactsOf,
} from '../audit.js';
import { ALL_KEYS, createKeyedCache } from '../cache.js';
import { WEBHOOK_ENDPOINTS_CACHE, WebhookEndpointDisabledEvent } from '../events.js';
import { WEBHOOK_AUDIT_TYPE, WEBHOOK_TEST_TYPE, type WebhookEventType } from './catalog.js';
import { nextRetryDelayMs, parseRetryAfter, WEBHOOK_DISABLE_AFTER_MS } from './schedule.js';
import {
  type DeliveryAttemptResponse,
  EndpointInput,
  EndpointPatch,
  type EndpointResponse,
  RotateSecretInput,
} from './schemas.js';
import type { WebhookSender } from './sender.js';
import { generateWebhookSecret, newMessageId, signatureHeader } from './signing.js';
import type { AttemptOutcome, EndpointRecord, MessageRecord, WebhooksStore, WebhooksWrites } from './store.js';

/** The permission webhooks need, in the platform organization. */
export const WEBHOOKS_MANAGE = 'WebhooksManage';

/** Options of {@link createWebhooksService}. */
export interface WebhooksServiceOptions {
  readonly store: WebhooksStore;
  readonly directory: PlatformDirectory;
  readonly sender: WebhookSender;
  /** The event types this composition offers. */
  readonly eventTypes: () => readonly WebhookEventType[];
  /**
   * Accept loopback and private hosts (local demos and tests only). Cloud
   * metadata and link-local addresses stay refused whatever it says.
   */
  readonly allowPrivateHosts: boolean;
  /** Resolves endpoint host names when they are registered; the system resolver by default. */
  readonly resolve?: OutboundResolver;
  readonly clock?: Clock;
  readonly random?: () => number;
  /** `user-agent` of the requests. */
  readonly userAgent?: string;
  /**
   * Evicts the routing cache (which endpoints receive an event) on every
   * instance, when the service evicts {@link WEBHOOK_ENDPOINTS_CACHE} in the
   * store's transaction. Without it every event reads the endpoints.
   */
  readonly invalidator?: CacheInvalidator;
}

/** What routing an event needs of an endpoint (no secret is kept in the cache). */
type EndpointRoute = Pick<EndpointRecord, 'id' | 'enabled' | 'eventTypes' | 'organizationId'>;

/**
 * Webhook endpoints and the delivery of messages to them. Creating, changing,
 * deleting an endpoint and rotating its secret each record one
 * `platform.webhookEndpoint.*` action on the platform trail, in the write's
 * transaction (endpoints are platform administration, and a change may move
 * an endpoint from one organization to another); `request` gives the record
 * the request's address, user agent and trace id.
 */
export interface WebhooksService {
  eventTypes(actor: PlatformActor): Promise<Array<{ type: string; description: string }>>;
  list(actor: PlatformActor): Promise<EndpointResponse[]>;
  get(actor: PlatformActor, id: string): Promise<EndpointResponse>;
  /** Creates an endpoint; its secret is answered this once. */
  create(
    actor: PlatformActor,
    input: unknown,
    request?: PlatformRequestFacts,
  ): Promise<{ endpoint: EndpointResponse; secret: string }>;
  update(actor: PlatformActor, id: string, input: unknown, request?: PlatformRequestFacts): Promise<EndpointResponse>;
  remove(actor: PlatformActor, id: string, request?: PlatformRequestFacts): Promise<void>;
  /** A new secret; the previous one keeps signing for the grace period. */
  rotateSecret(
    actor: PlatformActor,
    id: string,
    input: unknown,
    request?: PlatformRequestFacts,
  ): Promise<{ secret: string; previousSecretExpiresAt: string }>;
  /** Queues a `webhook.test` message for one endpoint. */
  sendTest(actor: PlatformActor, id: string): Promise<{ messageId: string }>;
  deliveries(
    actor: PlatformActor,
    id: string,
    query: { status?: string | undefined; page: number; pageSize: number },
  ): Promise<Page<DeliveryAttemptResponse>>;
  /** Queues a message again for an endpoint: a new series of attempts under the same `webhook-id`. */
  retry(actor: PlatformActor, messageId: string, endpointId: string): Promise<void>;
  /** Queues an integration event for every matching enabled endpoint (idempotent per source event). */
  enqueueEvent(eventType: string, payload: Record<string, unknown>, occurredAt: string, sourceEventId: string): Promise<void>;
  /** Sends every due delivery once; returns how many attempts were made. */
  deliverDue(): Promise<number>;
}

function toResponse(endpoint: EndpointRecord): EndpointResponse {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    eventTypes: [...endpoint.eventTypes],
    organizationId: endpoint.organizationId,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt,
    lastSuccessAt: endpoint.lastSuccessAt,
    failureStreakSince: endpoint.failureStreakSince,
  };
}

function notFound(): ProblemError {
  return new ProblemError('Webhooks.EndpointNotFound');
}

/** How long a claimed delivery is reserved for the instance sending it. */
const LEASE_MS = 60_000;

/**
 * Creates the webhooks service. Every operation needs `WebhooksManage` in
 * the platform organization (platform administrators, or a platform
 * service account with `webhooks.manage`); anyone else gets 403.
 *
 * @example
 * const webhooks = createWebhooksService({ store, directory, sender: createWebhookSender({ allowPrivateHosts: false, timeoutMs: 15_000 }), eventTypes: () => WEBHOOK_EVENT_TYPES, allowPrivateHosts: false });
 */
export function createWebhooksService(options: WebhooksServiceOptions): WebhooksService {
  const { store, directory, sender } = options;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const userAgent = options.userAgent ?? 'idt-webhooks';
  const admin = (actor: PlatformActor) => requirePlatformAdministrator(directory, actor, WEBHOOKS_MANAGE);
  const routing = createKeyedCache<EndpointRoute[]>(WEBHOOK_ENDPOINTS_CACHE, options.invalidator);
  const routes = () =>
    routing.get('*', async () =>
      (await store.listEndpoints()).map(({ id, enabled, eventTypes, organizationId }) => ({
        id,
        enabled,
        eventTypes,
        organizationId,
      })),
    );

  /** Runs an endpoint write and evicts the routing caches of every instance when it commits. */
  const routingWrite = <T>(write: (tx: WebhooksWrites & TransactionEffects) => Promise<T>): Promise<T> =>
    store.transaction(async (tx) => {
      const result = await write(tx);
      await tx.evict([{ namespace: WEBHOOK_ENDPOINTS_CACHE, key: ALL_KEYS }]);
      return result;
    });

  /** Records an endpoint change on the platform trail, in the write's transaction. Never the URL's query or a secret. */
  const audited = (
    tx: TransactionEffects,
    action: string,
    actor: PlatformActor,
    request: PlatformRequestFacts | undefined,
    endpoint: EndpointRecord,
    metadata: AuditMetadata,
  ) =>
    tx.audit?.([
      {
        action,
        organizationId: null,
        actor: platformAuditActor(actor),
        target: { type: 'webhookEndpoint', id: endpoint.id, display: endpointDisplay(endpoint.url) },
        ...requestFactsOf(request),
        metadata,
      },
    ]);

  /** What a record says about an endpoint's routing. */
  const routingFacts = (endpoint: EndpointRecord): AuditMetadata => ({
    organizationId: endpoint.organizationId,
    eventTypes: [...endpoint.eventTypes],
    enabled: endpoint.enabled,
  });

  async function existing(id: string): Promise<EndpointRecord> {
    const key = id.trim().toLowerCase();
    const endpoint = /^[0-9a-f-]{36}$/.test(key) ? await store.findEndpoint(key) : undefined;
    if (!endpoint) throw notFound();
    return endpoint;
  }

  function checkEventTypes(types: readonly string[]): void {
    const known = new Set(options.eventTypes().map((entry) => entry.type));
    const unknown = types.filter((type) => !known.has(type));
    if (unknown.length > 0) {
      throw new ProblemError('Webhooks.UnknownEventType', `Unknown event types: ${unknown.join(', ')}.`, {
        errors: { eventTypes: [`Unknown event types: ${unknown.join(', ')}.`] },
      });
    }
  }

  /**
   * Refuses cloud metadata hosts always, and loopback and private hosts unless
   * allowed (resolved now; deliveries resolve and check again). A name that
   * does not resolve is refused unless private hosts are allowed (a local
   * receiver may not be up yet).
   */
  async function checkUrl(raw: string): Promise<void> {
    const url = new URL(raw);
    const check = await checkOutboundUrl(url, {
      allowPrivate: options.allowPrivateHosts,
      ...(options.resolve ? { resolve: options.resolve } : {}),
    });
    if (!check.ok) {
      if (check.reason !== 'unresolvable') throw new ProblemError('Webhooks.PrivateHostRefused', check.message);
      if (!options.allowPrivateHosts) throw new ValidationProblem({ url: ['The host does not resolve.'] });
    }
    if (!options.allowPrivateHosts && url.protocol !== 'https:') throw new ValidationProblem({ url: ['Use https.'] });
  }

  function matches(endpoint: EndpointRoute, eventType: string, organizationId: string | null): boolean {
    if (!endpoint.enabled) return false;
    if (endpoint.eventTypes.length > 0 && !endpoint.eventTypes.includes(eventType)) return false;
    // The audit trail is opt-in: a catch-all endpoint does not get every audit record.
    if (endpoint.eventTypes.length === 0 && eventType === WEBHOOK_AUDIT_TYPE) return false;
    return endpoint.organizationId === null || endpoint.organizationId === organizationId;
  }

  function secretsOf(endpoint: EndpointRecord, now: Date): string[] {
    const previous =
      endpoint.previousSecret !== null &&
      endpoint.previousSecretExpiresAt !== null &&
      Date.parse(endpoint.previousSecretExpiresAt) > now.getTime();
    return previous ? [endpoint.secret, endpoint.previousSecret as string] : [endpoint.secret];
  }

  async function deliverOne(delivery: Awaited<ReturnType<WebhooksStore['claimDue']>>[number]): Promise<void> {
    const { message, endpoint } = delivery;
    const now = clock.now();
    const timestamp = Math.floor(now.getTime() / 1000);
    const body = JSON.stringify({ type: message.eventType, timestamp: message.occurredAt, data: message.data });
    const result = await sender(
      endpoint.url,
      {
        'content-type': 'application/json',
        'user-agent': userAgent,
        'webhook-id': message.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secretsOf(endpoint, now), message.id, timestamp, body),
      },
      body,
    );
    const at = clock.now();
    const attempt = delivery.attempts + 1;
    const succeeded = result.status >= 200 && result.status < 300;
    const gone = result.status === 410;
    const streakStart = endpoint.failureStreakSince === null ? at.getTime() : Date.parse(endpoint.failureStreakSince);
    const failingTooLong = !succeeded && at.getTime() - streakStart >= WEBHOOK_DISABLE_AFTER_MS;
    const delay = succeeded || gone ? null : nextRetryDelayMs(attempt, parseRetryAfter(result.retryAfter, at), random);
    const disableEndpoint = gone ? 'The endpoint answered 410 Gone.' : failingTooLong ? 'Deliveries failed for 5 days.' : null;
    const outcome: AttemptOutcome = {
      deliveryId: delivery.id,
      attempt,
      status: succeeded ? 'succeeded' : delay === null || failingTooLong ? 'failed' : 'pending',
      responseStatus: result.status === 0 ? null : result.status,
      durationMs: result.durationMs,
      error: succeeded
        ? null
        : (result.error ?? (result.status >= 300 && result.status < 400 ? 'redirect not followed' : `HTTP ${result.status}`)),
      at: at.toISOString(),
      nextAttemptAt: delay === null || failingTooLong ? null : new Date(at.getTime() + delay).toISOString(),
      disableEndpoint,
    };
    await store.transaction(async (tx) => {
      const disabled = await tx.recordAttempt(outcome);
      // Only the attempt that disabled the endpoint tells the administrators.
      if (!disabled || disableEndpoint === null) return;
      await tx.evict([{ namespace: WEBHOOK_ENDPOINTS_CACHE, key: ALL_KEYS }]);
      await tx.publish([
        {
          event: WebhookEndpointDisabledEvent,
          payload: { endpointId: disabled.endpointId, url: disabled.url, reason: disableEndpoint, disabledAt: outcome.at },
        },
      ]);
    });
  }

  return {
    async eventTypes(actor) {
      await admin(actor);
      return options.eventTypes().map(({ type, description }) => ({ type, description }));
    },

    async list(actor) {
      await admin(actor);
      return (await store.listEndpoints()).map(toResponse);
    },

    async get(actor, id) {
      await admin(actor);
      return toResponse(await existing(id));
    },

    async create(actor, input, request) {
      await admin(actor);
      const data = EndpointInput.parse(input);
      checkEventTypes(data.eventTypes);
      await checkUrl(data.url);
      const now = clock.now().toISOString();
      const endpoint: EndpointRecord = {
        id: newId(),
        url: data.url,
        description: data.description,
        eventTypes: data.eventTypes,
        organizationId: data.organizationId,
        enabled: data.enabled,
        disabledReason: null,
        secret: generateWebhookSecret(),
        previousSecret: null,
        previousSecretExpiresAt: null,
        createdAt: now,
        updatedAt: now,
        lastSuccessAt: null,
        failureStreakSince: null,
      };
      await routingWrite(async (tx) => {
        await tx.insertEndpoint(endpoint);
        await audited(tx, PlatformAuditActions.webhookEndpointCreated.action, actor, request, endpoint, routingFacts(endpoint));
      });
      return { endpoint: toResponse(endpoint), secret: endpoint.secret };
    },

    async update(actor, id, input, request) {
      await admin(actor);
      const patch = EndpointPatch.parse(input);
      const current = await existing(id);
      if (patch.eventTypes) checkEventTypes(patch.eventTypes);
      if (patch.url !== undefined) await checkUrl(patch.url);
      const enabling = patch.enabled === true && !current.enabled;
      const next: EndpointRecord = {
        ...current,
        ...(patch.url !== undefined ? { url: patch.url } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.eventTypes !== undefined ? { eventTypes: patch.eventTypes } : {}),
        ...(patch.organizationId !== undefined ? { organizationId: patch.organizationId } : {}),
        ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
        ...(enabling ? { disabledReason: null, failureStreakSince: null } : {}),
        updatedAt: clock.now().toISOString(),
      };
      const changedFields = (['url', 'description', 'eventTypes', 'organizationId', 'enabled'] as const).filter(
        (field) => patch[field] !== undefined,
      );
      const updated = await routingWrite(async (tx) => {
        if (!(await tx.updateEndpoint(next))) return false;
        await audited(tx, PlatformAuditActions.webhookEndpointUpdated.action, actor, request, next, {
          changed: [...changedFields],
          ...routingFacts(next),
        });
        return true;
      });
      if (!updated) throw notFound();
      return toResponse(next);
    },

    async remove(actor, id, request) {
      await admin(actor);
      const current = await existing(id);
      const deleted = await routingWrite(async (tx) => {
        if (!(await tx.deleteEndpoint(current.id))) return false;
        await audited(tx, PlatformAuditActions.webhookEndpointDeleted.action, actor, request, current, routingFacts(current));
        return true;
      });
      if (!deleted) throw notFound();
    },

    async rotateSecret(actor, id, input, request) {
      await admin(actor);
      const { graceSeconds } = RotateSecretInput.parse(input ?? {});
      const current = await existing(id);
      const now = clock.now();
      const previousSecretExpiresAt = new Date(now.getTime() + graceSeconds * 1000).toISOString();
      const secret = generateWebhookSecret();
      const next: EndpointRecord = {
        ...current,
        secret,
        previousSecret: graceSeconds > 0 ? current.secret : null,
        previousSecretExpiresAt: graceSeconds > 0 ? previousSecretExpiresAt : null,
        updatedAt: now.toISOString(),
      };
      const rotated = await routingWrite(async (tx) => {
        if (!(await tx.updateEndpoint(next))) return false;
        await audited(tx, PlatformAuditActions.webhookEndpointSecretRotated.action, actor, request, next, {
          graceSeconds,
          previousValidUntil: next.previousSecretExpiresAt,
        });
        return true;
      });
      if (!rotated) throw notFound();
      return { secret, previousSecretExpiresAt };
    },

    async sendTest(actor, id) {
      await admin(actor);
      const endpoint = await existing(id);
      const now = clock.now().toISOString();
      const message: MessageRecord = {
        id: newMessageId(),
        eventType: WEBHOOK_TEST_TYPE,
        organizationId: null,
        data: { endpointId: endpoint.id, message: 'This is a test message from idt.' },
        occurredAt: now,
      };
      await store.enqueue(message, [endpoint.id], now);
      return { messageId: message.id };
    },

    async deliveries(actor, id, query) {
      await admin(actor);
      const endpoint = await existing(id);
      const slice = await store.attempts(endpoint.id, query.status, query.page, query.pageSize);
      return toPage(slice, { page: query.page, pageSize: query.pageSize });
    },

    async retry(actor, messageId, endpointId) {
      await admin(actor);
      const endpoint = await existing(endpointId);
      const message = await store.findMessage(messageId.trim());
      if (!message) throw new ProblemError('Webhooks.MessageNotFound');
      await store.requeue(message.id, endpoint.id, clock.now().toISOString());
    },

    async enqueueEvent(eventType, payload, occurredAt, sourceEventId) {
      const organizationId = typeof payload.organizationId === 'string' ? payload.organizationId : null;
      // A handler, not a request: take other processes' evictions first (SQLite; free on Postgres).
      await options.invalidator?.freshen();
      const targets = (await routes()).filter((endpoint) => matches(endpoint, eventType, organizationId));
      if (targets.length === 0) return;
      const message: MessageRecord = { id: newMessageId(), eventType, organizationId, data: payload, occurredAt };
      await store.enqueue(
        message,
        targets.map((endpoint) => endpoint.id),
        clock.now().toISOString(),
        sourceEventId,
      );
    },

    async deliverDue() {
      let sent = 0;
      for (;;) {
        const now = clock.now();
        const due = await store.claimDue(now.toISOString(), new Date(now.getTime() + LEASE_MS).toISOString(), 20);
        if (due.length === 0) return sent;
        await Promise.all(due.map((delivery) => deliverOne(delivery)));
        sent += due.length;
      }
    },
  };
}
