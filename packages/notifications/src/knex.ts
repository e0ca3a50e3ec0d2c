/**
 * The knex side of `@idt/notifications`: the migrations, the store and the service.
 *
 * @packageDocumentation
 */
import './problems.js';

export { NOTIFICATION_PREFERENCES_TABLE, NOTIFICATIONS_TABLE, notificationsMigrations } from './knex/migrations.js';
export { createKnexNotificationStore } from './knex/store.js';
export type { NotificationsServiceOptions } from './service.js';
export { createNotificationsService } from './service.js';
