import type { EventHandlerDefinition, ModuleJob, ModuleUpgrade, Route } from '@idt/core';

/**
 * The one argument of every `ReceiveNotification` call the hub makes.
 *
 * A new notification is `{type: "NotificationCreated", module: "Notifications",
 * payload: {id, title, message, type, actionUrl, createdAt}}`; the end of an
 * identity session is `{type: "SessionEnded" | "SessionEvicted", module:
 * "Identity", payload: {sid}}`. Strings are sent as stored: render them as
 * text, never as HTML.
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

/** What the hub needs to know of a new notification (the payload of `NotificationCreated`, and its audience). */
export interface RealtimeNotification {
  readonly id: string;
  readonly userId: string;
  /** The organization it belongs to; `null` for a personal one (shown in every organization of the user). */
  readonly organizationId: string | null;
  readonly type: string;
  readonly title: string;
  readonly message: string;
  readonly actionUrl: string | null;
  readonly createdAt: string;
}

/** The hub's time limits and sizes (SignalR's server defaults). */
export interface RealtimeHubLimits {
  /** A ping is sent when nothing was sent for this long (15 s). */
  readonly keepAliveIntervalMs: number;
  /** A client silent for this long is disconnected (30 s). */
  readonly clientTimeoutMs: number;
  /** A connection that has not completed the handshake after this long is closed (15 s). */
  readonly handshakeTimeoutMs: number;
  /** The largest message a client may send, in bytes (32 KiB). */
  readonly maximumReceiveMessageBytes: number;
  /** How long a negotiated connection token may wait for its WebSocket (15 s). */
  readonly connectionTokenTtlMs: number;
}

/**
 * The realtime hub at `/hubs/realtime`: SignalR JSON hub protocol over
 * WebSocket. Every method reaches the connections of every instance sharing
 * the database (Postgres LISTEN/NOTIFY; on SQLite, the connections of this
 * process).
 */
export interface RealtimeHub {
  /** `POST /hubs/realtime/negotiate`. */
  readonly routes: readonly Route[];
  /** The WebSocket upgrade of `GET /hubs/realtime`. */
  readonly upgrade: ModuleUpgrade;
  /** Event handlers that end and close connections when sessions, users or memberships end. */
  readonly handlers: readonly EventHandlerDefinition<any>[];
  /** Keep-alive pings, client and handshake timeouts, token expiry: once a second. */
  readonly jobs: readonly ModuleJob[];
  /** Sends `NotificationCreated` to the user's connections in the notification's organization (all of them for a personal one). */
  notificationCreated(notification: RealtimeNotification): Promise<void>;
  /** Calls `ReceiveNotification(envelope)` on every connection of the user (only those working in `organizationId`, when given). */
  sendToUser(userId: string, envelope: RealtimeEnvelope, options?: { readonly organizationId?: string }): Promise<void>;
  /** Calls `ReceiveNotification(envelope)` on every connection in the organization's group. */
  sendToOrganization(organizationId: string, envelope: RealtimeEnvelope): Promise<void>;
  /**
   * Sends `{type, module: "Identity", payload: {sid}}` to the connections of one session, then closes them without
   * reconnect. Once per session: a second call within a minute of an end this instance sent or received does nothing.
   */
  endSession(sessionId: string, type: 'SessionEnded' | 'SessionEvicted'): Promise<void>;
  /** Closes every connection of the user, or of the user's tokens for one organization. */
  closeUser(userId: string, options: RealtimeCloseOptions & { readonly organizationId?: string }): Promise<void>;
  /** Open connections on this instance. */
  connectionCount(): number;
  /** Runs the keep-alive and timeout checks now (the job does it every second; tests call it after moving a manual clock). */
  tick(): void;
  /** Closes every connection (allowing reconnect) and stops listening to other instances. */
  close(): Promise<void>;
}
