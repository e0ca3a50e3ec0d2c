import type { EventHandlerDefinition, Route } from '@idt/core';

/**
 * The one argument of every `ReceiveNotification` call the hub makes.
 *
 * A new notification is `{type: "NotificationCreated", module: "Notifications",
 * payload: {id, title, message, type, actionUrl, createdAt}}`; the end of an
 * identity session is `{type: "SessionEnded" | "SessionEvicted", module:
 * "Identity", payload: {sid}}`.
 */
export interface RealtimeEnvelope {
  readonly type: string;
  readonly module: string;
  readonly payload: Readonly<Record<string, unknown>>;
  /** ISO 8601, UTC. */
  readonly timestamp: string;
  readonly correlationId?: string;
}

/** Why the hub closes connections, for the SignalR close message and the logs. */
export interface RealtimeCloseOptions {
  /** Sent as the close message's `error`. */
  readonly reason: string;
  /** `allowReconnect` of the close message (default false). */
  readonly allowReconnect?: boolean;
}

/**
 * The realtime hub at `/hubs/realtime`: SignalR JSON hub protocol over
 * WebSocket. Every method reaches the connections of every instance
 * (Postgres LISTEN/NOTIFY; on SQLite, this instance only).
 */
export interface RealtimeHub {
  /** `POST /hubs/realtime/negotiate` (and whatever else the hub serves over plain HTTP). */
  readonly routes: readonly Route[];
  /** Event handlers that close connections when sessions, users or memberships end. */
  readonly handlers: readonly EventHandlerDefinition<any>[];
  /** Calls `ReceiveNotification(envelope)` on every connection of the user. */
  sendToUser(userId: string, envelope: RealtimeEnvelope): Promise<void>;
  /** Calls `ReceiveNotification(envelope)` on every connection in the organization's group. */
  sendToOrganization(organizationId: string, envelope: RealtimeEnvelope): Promise<void>;
  /** Sends the envelope to the connections of one identity session (`sid`), then closes them without reconnect. */
  endSession(sessionId: string, envelope: RealtimeEnvelope): Promise<void>;
  /** Closes every connection of the user, or of the user's tokens for one organization. */
  closeUser(userId: string, options: RealtimeCloseOptions & { readonly organizationId?: string }): Promise<void>;
  /** Open connections on this instance. */
  connectionCount(): number;
  /** Closes every connection and stops listening. */
  close(): Promise<void>;
}
