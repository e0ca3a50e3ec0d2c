import {
  type AuditTrail,
  type Clock,
  createSecretBox,
  defineEventHandler,
  type EventCatalog,
  type EventDefinition,
  type EventHandlerDefinition,
  type EventOutbox,
  type Logger,
  type ModuleJob,
  type OutboundResolver,
  type Route,
  silentLogger,
} from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import type { MemberDirectory } from '@idt/identity';
import type { Knex } from 'knex';
import { type AnnouncementsService, createAnnouncementsService } from '../announcements/service.js';
import { type ChangelogService, createChangelogService } from '../changelog/service.js';
import { platformEvents } from '../events.js';
import { createFlagsService, type FlagsService } from '../flags/service.js';
import { createAnnouncementRoutes } from '../http/announcement-routes.js';
import { createChangelogRoutes } from '../http/changelog-routes.js';
import { createConfigurationRoutes } from '../http/configuration-routes.js';
import { createWebhookRoutes } from '../http/webhook-routes.js';
import { createPlatformNoticeHandlers, type PlatformNotifier } from '../notices.js';
import { builtInSettings, createSettingRegistry, type SettingDefinition, type SettingRegistry } from '../settings/definitions.js';
import { createSettingsService, type SettingsService } from '../settings/service.js';
import { WEBHOOK_EVENT_TYPES } from '../webhooks/catalog.js';
import { WEBHOOK_TIMEOUT_MS } from '../webhooks/schedule.js';
import { createWebhookSender } from '../webhooks/sender.js';
import { createWebhooksService, type WebhooksService } from '../webhooks/service.js';
import { createKnexAnnouncementsStore } from './announcements-store.js';
import { createKnexChangelogStore } from './changelog-store.js';
import { createKnexPlatformDirectory } from './directory.js';
import { createKnexFlagsStore } from './flags-store.js';
import { createKnexSettingsStore } from './settings-store.js';
import { createKnexWebhooksStore, WEBHOOK_SECRET_PURPOSE } from './webhooks-store.js';

/** The name of the job that sends due webhook deliveries. */
export const WEBHOOK_JOB = 'platform.webhooks.deliver';

/** The name of the job that publishes due scheduled announcements and expires old ones. */
export const ANNOUNCEMENT_JOB = 'platform.announcements.schedule';

/** Options of {@link createKnexPlatform}. */
export interface KnexPlatformOptions {
  readonly db: Knex;
  /** The event bus's outbox: change events are written in the change's transaction. */
  readonly outbox: EventOutbox;
  /** Spreads cache evictions to every instance. */
  readonly invalidator: CacheInvalidator;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** The deployment path prefix, for routes named in problem details. */
  readonly pathPrefix?: string;
  /** Setting definitions besides the built-in ones. */
  readonly settings?: readonly SettingDefinition[];
  /** How often the announcement job runs, in milliseconds (60,000 by default). */
  readonly announcementJobIntervalMs?: number;
  /** The registered events (the bus's catalog), read once every module registered its own: webhooks subscribe to them. */
  readonly catalog?: () => EventCatalog;
  /**
   * Webhook delivery: loopback and private hosts (local demos and tests only; metadata addresses stay refused),
   * how often the delivery job runs (1,000 ms), and the resolver of endpoint host names (the system's by default).
   */
  readonly webhooks?: {
    readonly allowPrivateHosts?: boolean;
    readonly jobIntervalMs?: number;
    readonly resolve?: OutboundResolver;
  };
  /** The server secret (`ctx.secret`): webhook endpoint secrets are sealed under a key derived from it. */
  readonly secret: string;
  /** Creates in-app notifications (the notifications module's service); without it, announcements notify nobody. */
  readonly notifier?: PlatformNotifier;
  /** Who holds a permission: the identity module's `members` service. */
  readonly members: Pick<MemberDirectory, 'withPermission'>;
  /**
   * The audit trail (`ctx.audit`): settings, flag and webhook endpoint changes are recorded through it in their
   * transactions (register `PlatformAuditActions` on it first). Without it nothing is recorded.
   */
  readonly audit?: Pick<AuditTrail, 'record'>;
}

/** The platform module on knex: its services, routes, events, handlers and jobs. */
export interface KnexPlatform {
  readonly registry: SettingRegistry;
  readonly settings: SettingsService;
  readonly flags: FlagsService;
  readonly changelog: ChangelogService;
  readonly announcements: AnnouncementsService;
  readonly webhooks: WebhooksService;
  readonly routes: readonly Route[];
  /** Events the module publishes (register them for the catalog). */
  readonly events: readonly EventDefinition<any>[];
  /** Builds the handlers; call it once every module's events are registered on the bus. */
  handlers(): EventHandlerDefinition<any>[];
  readonly jobs: readonly ModuleJob[];
}

/**
 * Wires the platform module over a knex database (migrations:
 * `platformMigrations`, after `@idt/core` and `@idt/identity`).
 *
 * @example
 * const platform = createKnexPlatform({ db, outbox: bus, invalidator, secret, members: identity.members });
 * routes.push(...platform.routes);
 */
export function createKnexPlatform(options: KnexPlatformOptions): KnexPlatform {
  const { db, outbox, invalidator } = options;
  const audit = options.audit ? { audit: options.audit } : {};
  const clock = options.clock ? { clock: options.clock } : {};
  const directory = createKnexPlatformDirectory(db, options.members);
  const registry = createSettingRegistry([...builtInSettings, ...(options.settings ?? [])]);
  const settings = createSettingsService({
    store: createKnexSettingsStore({ db, outbox, invalidator, ...audit }),
    registry,
    directory,
    invalidator,
    ...clock,
    ...(options.pathPrefix ? { pathPrefix: options.pathPrefix } : {}),
  });
  const flags = createFlagsService({
    store: createKnexFlagsStore({ db, outbox, invalidator, ...audit }),
    directory,
    invalidator,
    ...clock,
  });
  const changelog = createChangelogService({ store: createKnexChangelogStore({ db, outbox }), directory, ...clock });
  const announcementsStore = createKnexAnnouncementsStore({ db, outbox });
  const announcements = createAnnouncementsService({
    store: announcementsStore,
    directory,
    isEnabled: async (organizationId) => (await settings.resolve(organizationId, null))['announcements.enabled'] !== false,
    ...clock,
  });
  const registered = () => new Map((options.catalog?.().events ?? []).map((event) => [event.type, event]));
  const offered = () => {
    const events = registered();
    return WEBHOOK_EVENT_TYPES.filter((entry) => entry.source === undefined || events.has(entry.source));
  };
  const allowPrivateHosts = options.webhooks?.allowPrivateHosts ?? false;
  const resolve = options.webhooks?.resolve ? { resolve: options.webhooks.resolve } : {};
  const webhooks = createWebhooksService({
    store: createKnexWebhooksStore(
      db,
      outbox,
      createSecretBox(options.secret, WEBHOOK_SECRET_PURPOSE),
      invalidator,
      options.audit,
    ),
    invalidator,
    directory,
    sender: createWebhookSender({ allowPrivateHosts, timeoutMs: WEBHOOK_TIMEOUT_MS, ...resolve }),
    eventTypes: offered,
    allowPrivateHosts,
    ...resolve,
    ...clock,
  });
  const notices = createPlatformNoticeHandlers({
    ...(options.notifier ? { notifier: options.notifier } : {}),
    directory,
    announcements: announcementsStore,
    logger: options.logger ?? silentLogger,
  });
  const handlers = () => {
    const events = registered();
    const deliveries = WEBHOOK_EVENT_TYPES.flatMap((entry) => {
      const event = entry.source === undefined ? undefined : events.get(entry.source);
      if (!event) return [];
      return [
        defineEventHandler({
          name: `platform.webhooks.${entry.type}`,
          module: 'platform',
          event,
          description: `Queues \`${entry.type}\` for the webhook endpoints that subscribe to it.`,
          handle: (envelope) => webhooks.enqueueEvent(entry.type, envelope.payload, envelope.occurredAt, envelope.id),
        }),
      ];
    });
    return [...deliveries, ...notices];
  };
  return {
    registry,
    settings,
    flags,
    changelog,
    announcements,
    webhooks,
    routes: [
      ...createConfigurationRoutes(settings, flags),
      ...createChangelogRoutes(changelog),
      ...createAnnouncementRoutes(announcements),
      ...createWebhookRoutes(webhooks),
    ],
    events: [...platformEvents],
    handlers,
    jobs: [
      { name: WEBHOOK_JOB, intervalMs: options.webhooks?.jobIntervalMs ?? 1000, run: () => webhooks.deliverDue() },
      {
        name: ANNOUNCEMENT_JOB,
        intervalMs: options.announcementJobIntervalMs ?? 60_000,
        run: () => announcements.runSchedule(),
      },
    ],
  };
}
