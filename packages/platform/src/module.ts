import type { IdtModule, OutboundResolver } from '@idt/core';
import type { IdentityServices } from '@idt/identity';
import type { AnnouncementsService } from './announcements/service.js';
import { PlatformAuditActions } from './audit.js';
import type { ChangelogService } from './changelog/service.js';
import type { FlagsService } from './flags/service.js';
import { platformMigrations } from './knex/migrations.js';
import type { PlatformNotifier } from './notices.js';
import { PlatformCodes } from './problems.js';
import type { SettingDefinition, SettingRegistry } from './settings/definitions.js';
import type { SettingsService } from './settings/service.js';
import type { WebhooksService } from './webhooks/service.js';

/** Options of {@link platform}. */
export interface PlatformOptions {
  /**
   * Setting definitions other modules (or the host) contribute, besides the
   * built-in ones: `{key: "<module>.<name>", type, default, description, userOverridable}`.
   */
  readonly settings?: readonly SettingDefinition[];
  /** How often the announcement job runs, in milliseconds (60,000 by default). */
  readonly announcementJobIntervalMs?: number;
  /**
   * Webhook delivery. `allowPrivateHosts` (also `IDT_WEBHOOKS_ALLOW_PRIVATE_HOSTS=true`)
   * accepts loopback and private hosts and plain http: local demos and tests
   * only; cloud metadata addresses stay refused. `jobIntervalMs`: how often
   * due deliveries are sent (1,000). `resolve`: resolves endpoint host names
   * (the system resolver by default; tests inject one).
   */
  readonly webhooks?: {
    readonly allowPrivateHosts?: boolean;
    readonly jobIntervalMs?: number;
    readonly resolve?: OutboundResolver;
  };
}

/** The services of the platform module (`idt.services.platform`). */
export interface PlatformServices {
  /** Every setting definition. */
  readonly registry: SettingRegistry;
  readonly settings: SettingsService;
  readonly flags: FlagsService;
  /** The global changelog. */
  readonly changelog: ChangelogService;
  /** Announcements (the scheduling job is `platform.announcements.schedule`). */
  readonly announcements: AnnouncementsService;
  /** Webhook endpoints and deliveries (the delivery job is `platform.webhooks.deliver`). */
  readonly webhooks: WebhooksService;
}

/**
 * The platform module: typed settings (organization values, user overrides,
 * platform-wide `system.*` values) and feature flags under
 * `/v1/configuration` and `/v1/platform`, the global changelog under
 * `/v1/changelog` and `/v1/admin/changelog`, and organization announcements
 * under `/v1/announcements` and `/v1/admin/announcements` with a job that
 * publishes scheduled ones and expires old ones. Requires the identity module.
 *
 * @example
 * const idt = await createIdt({
 *   database,
 *   modules: [identity(), oidc(), platform({ settings: [{ key: 'billing.currency', type: 'string', default: 'EUR', description: 'Invoice currency' }] })],
 * });
 */
export function platform(options: PlatformOptions = {}): IdtModule<'platform', PlatformServices> {
  return {
    id: 'platform',
    requires: ['identity'],
    // Set up after notifications when both are composed: announcements become in-app notifications.
    optional: ['notifications'],
    migrations: platformMigrations,
    problemCodes: Object.keys(PlatformCodes),
    settings: {
      variables: [
        {
          name: 'IDT_WEBHOOKS_ALLOW_PRIVATE_HOSTS',
          description: 'Deliver webhooks to loopback and private hosts, and over plain http (local demos and tests only).',
          default: 'false',
        },
      ],
      resolve: (env) => ({ webhooksAllowPrivateHosts: env.IDT_WEBHOOKS_ALLOW_PRIVATE_HOSTS === 'true' }),
    },
    async setup(ctx) {
      const { createKnexPlatform } = await import('./knex/module.js');
      ctx.audit.register(Object.values(PlatformAuditActions));
      const module = createKnexPlatform({
        db: ctx.db,
        outbox: ctx.events,
        invalidator: ctx.invalidator,
        secret: ctx.secret,
        clock: ctx.clock,
        logger: ctx.logger,
        pathPrefix: ctx.config.pathPrefix,
        ...(options.settings ? { settings: options.settings } : {}),
        ...(options.announcementJobIntervalMs ? { announcementJobIntervalMs: options.announcementJobIntervalMs } : {}),
        catalog: () => ctx.events.catalog(),
        members: ctx.module<IdentityServices>('identity').members,
        audit: ctx.audit,
        ...(ctx.has('notifications') ? { notifier: ctx.module<{ service: PlatformNotifier }>('notifications').service } : {}),
        webhooks: {
          allowPrivateHosts: options.webhooks?.allowPrivateHosts ?? ctx.env.IDT_WEBHOOKS_ALLOW_PRIVATE_HOSTS === 'true',
          ...(options.webhooks?.jobIntervalMs ? { jobIntervalMs: options.webhooks.jobIntervalMs } : {}),
          ...(options.webhooks?.resolve ? { resolve: options.webhooks.resolve } : {}),
        },
      });
      return {
        services: {
          registry: module.registry,
          settings: module.settings,
          flags: module.flags,
          changelog: module.changelog,
          announcements: module.announcements,
          webhooks: module.webhooks,
        },
        routes: module.routes,
        events: module.events,
        // Read by createIdt after every module registered its events, so webhooks find any module's event definitions.
        get handlers() {
          return module.handlers();
        },
        jobs: module.jobs,
      };
    },
  };
}
