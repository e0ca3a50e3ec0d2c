import type { Clock } from '@idt/core';
import type { Connection, ConnectionRegistry } from './connections.js';
import type { Broadcast } from './fan-out.js';
import type { RealtimeEnvelope, RealtimeNotification } from './types.js';

/** The `NotificationCreated` envelope of a notification. */
export function notificationEnvelope(notification: RealtimeNotification, clock: Clock): RealtimeEnvelope {
  return {
    type: 'NotificationCreated',
    module: 'Notifications',
    payload: {
      id: notification.id,
      title: notification.title,
      message: notification.message,
      type: notification.type,
      actionUrl: notification.actionUrl,
      createdAt: notification.createdAt,
    },
    timestamp: clock.now().toISOString(),
  };
}

function inOrganization(organizationId: string | null | undefined) {
  return (connection: Connection) =>
    organizationId === null || organizationId === undefined || connection.principal.organizationId === organizationId;
}

/**
 * Creates what each broadcast does to this instance's connections: delivers
 * notifications and envelopes to the users and organizations they are for,
 * tells the connections of an ended session and closes them, and closes the
 * connections of a user who lost access.
 */
export function createBroadcastReceiver(options: {
  readonly registry: ConnectionRegistry;
  readonly clock: Clock;
  /** The envelope of a notification created on this instance, which need not be read back. */
  createdHere(id: string): RealtimeEnvelope | undefined;
  /** Reads a notification another instance announced. */
  loadNotification(id: string): Promise<RealtimeNotification | undefined>;
  /** Remembers that a session's end was told. */
  sessionEnded(sessionId: string): void;
}): (message: Broadcast) => Promise<void> {
  const { registry, clock } = options;
  return async (message) => {
    switch (message.op) {
      case 'n': {
        const targets = registry.inGroup(`user:${message.u}`);
        if (!targets?.size) return;
        let envelope = options.createdHere(message.id);
        if (!envelope) {
          const notification = await options.loadNotification(message.id);
          if (!notification) return;
          envelope = notificationEnvelope(notification, clock);
        }
        registry.deliver(targets, envelope, inOrganization(message.o));
        return;
      }
      case 'u': {
        const targets = registry.inGroup(`user:${message.u}`);
        if (targets) registry.deliver(targets, message.e, inOrganization(message.o));
        return;
      }
      case 't': {
        const targets = registry.inGroup(`tenant:${message.o}`);
        if (targets) registry.deliver(targets, message.e);
        return;
      }
      case 'end': {
        options.sessionEnded(message.s);
        const targets = [...(registry.ofSession(message.s) ?? [])];
        if (!targets.length) return;
        const envelope: RealtimeEnvelope = {
          type: message.t,
          module: 'Identity',
          payload: { sid: message.s },
          timestamp: message.at,
        };
        registry.deliver(targets, envelope);
        for (const connection of targets) registry.close(connection, 'Session ended', false, 1008);
        return;
      }
      case 'close': {
        const targets = [...(registry.inGroup(`user:${message.u}`) ?? [])].filter(
          (connection) => message.o === undefined || connection.principal.organizationId === message.o,
        );
        for (const connection of targets) registry.close(connection, message.r, message.rc === true, message.rc ? 1000 : 1008);
        return;
      }
    }
  };
}
