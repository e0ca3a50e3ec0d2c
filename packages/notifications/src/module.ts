import type { IdtModule } from '@idt/core';
import { EMAIL_CHANGE_MAIL_CAPABILITY, type IdentityServices } from '@idt/identity';
import { RealtimeCodes } from './hub/problems.js';
import type { RealtimeHub } from './hub/types.js';
import { notificationsMigrations } from './knex/migrations.js';
import { NotificationsCodes } from './problems.js';
import type { NotificationsService } from './service.js';

/** The services of the notifications module (`idt.services.notifications`). */
export interface NotificationsServices {
  /** Notifications and preferences. */
  readonly service: NotificationsService;
  /** The realtime hub at `/hubs/realtime`. */
  readonly hub: RealtimeHub;
}

/**
 * The notifications module: in-app notifications and preferences under
 * `/v1/notifications`, and the realtime hub at `/hubs/realtime`, to which
 * every new notification is pushed. Requires the identity module.
 *
 * @example
 * const idt = await createIdt({ database, modules: [identity(), oidc(), notifications()] });
 */
export function notifications(): IdtModule<'notifications', NotificationsServices> {
  return {
    id: 'notifications',
    requires: ['identity'],
    migrations: notificationsMigrations,
    // This module mails e-mail change confirmations and notices; without it the identity module refuses changes.
    provides: { [EMAIL_CHANGE_MAIL_CAPABILITY]: () => true },
    problemCodes: [...Object.keys(NotificationsCodes), ...Object.keys(RealtimeCodes)],
    async setup(ctx) {
      const [
        { realtimeHubOf },
        { createNotificationsService },
        { createKnexNotificationStore },
        { createNotificationRoutes },
        { createNotificationHandlers },
        // A: passwords
        { createPasswordNotificationHandlers },
        // B: verified e-mail
        { createVerificationNotificationHandlers },
      ] = await Promise.all([
        import('./hub/hub.js'),
        import('./service.js'),
        import('./knex/store.js'),
        import('./http/routes.js'),
        import('./handlers.js'),
        // A: passwords
        import('./handlers-passwords.js'),
        // B: verified e-mail
        import('./handlers-verification.js'),
      ]);
      const store = createKnexNotificationStore(ctx.db);
      // The service publishes to the hub; the hub reads back notifications another instance announced.
      let hub: RealtimeHub | undefined;
      const service = createNotificationsService({
        store,
        clock: ctx.clock,
        logger: ctx.logger,
        publisher: { notificationCreated: (notification) => hub?.notificationCreated(notification) },
      });
      hub = realtimeHubOf(ctx, (id) => service.find(id));
      const identity = ctx.module<IdentityServices>('identity');
      return {
        services: { service, hub },
        routes: [...createNotificationRoutes(service), ...hub.routes],
        upgrades: [hub.upgrade],
        handlers: [
          ...createNotificationHandlers({
            store,
            service,
            mailer: ctx.mailer,
            clock: ctx.clock,
            logger: ctx.logger,
            baseUrl: ctx.config.publicBaseUrl,
            emailChange: identity.credentials.emailChange,
            members: identity.members,
          }),
          // A: passwords
          ...createPasswordNotificationHandlers({
            store,
            service,
            mailer: ctx.mailer,
            clock: ctx.clock,
            logger: ctx.logger,
            passwordReset: identity.passwords.reset,
          }),
          // B: verified e-mail
          ...createVerificationNotificationHandlers({
            store,
            mailer: ctx.mailer,
            clock: ctx.clock,
            logger: ctx.logger,
            emailVerification: identity.verification.email,
          }),
          // C1: second factors
          ...(await import('./handlers-factors.js')).createFactorNotificationHandlers({
            store,
            service,
            mailer: ctx.mailer,
            clock: ctx.clock,
          }),
          ...hub.handlers,
        ],
        jobs: [...hub.jobs],
        close: () => (hub as RealtimeHub).close(),
      };
    },
  };
}
