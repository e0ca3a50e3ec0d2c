/**
 * Notifications for idt: per-user in-app notifications and preferences, mail
 * from integration events, and a SignalR-compatible realtime hub.
 *
 * @packageDocumentation
 */

export { createNotificationRoutes } from './http/routes.js';
export { RealtimeCodes } from './hub/problems.js';
export type {
  RealtimeCloseOptions,
  RealtimeEnvelope,
  RealtimeHub,
  RealtimeHubLimits,
  RealtimeNotification,
} from './hub/types.js';
export type { NotificationsServices } from './module.js';
export { notifications } from './module.js';
export { NotificationsCodes } from './problems.js';
export type { NotificationChannel, NotificationRecord, NotificationType } from './schemas.js';
export { NOTIFICATION_CHANNELS, NOTIFICATION_TYPES } from './schemas.js';
export type { ChannelPreferences, NewNotification, NotificationPublisher, NotificationsService } from './service.js';
export type {
  NotificationOwner,
  NotificationPreference,
  NotificationSlice,
  NotificationStore,
  StoredNotification,
} from './store.js';
