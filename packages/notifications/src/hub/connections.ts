import type { Logger, Principal } from '@idt/core';
import type { WebSocket } from 'ws';
import { closeMessage, invocation, RECEIVE_NOTIFICATION } from './protocol.js';
import type { RealtimeEnvelope } from './types.js';

/** A client that does not read is dropped once this much is queued for it. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** One WebSocket of the hub on this instance. */
export interface Connection {
  readonly id: string;
  readonly ws: WebSocket;
  readonly principal: Principal;
  /** The user id, or the subject of a service account. */
  readonly userKey: string;
  readonly expiresAt: number;
  readonly openedAt: number;
  readonly groups: Set<string>;
  handshaken: boolean;
  closing: boolean;
  lastReceivedAt: number;
  lastSentAt: number;
  /** Text received after the last complete record. */
  pending: string;
}

/**
 * The connections of this instance, by id, by group and by identity
 * session, and the one way to write to them: a connection that is closing
 * has left every index, so nothing reaches it any more.
 */
export interface ConnectionRegistry {
  /** Registers a new connection (before its handshake). */
  add(connection: Connection): void;
  /** Drops a connection from every index (its socket closed). */
  forget(connection: Connection): void;
  /** After the handshake: joins the connection to its own groups and its session. */
  admit(connection: Connection): void;
  /** The groups a connection may join: `user:{userKey}` and, with an organization, `tenant:{organizationId}`. */
  ownGroups(connection: Connection): string[];
  join(connection: Connection, group: string): void;
  leave(connection: Connection, group: string): void;
  /** The connections in a group. */
  inGroup(group: string): ReadonlySet<Connection> | undefined;
  /** The connections of an identity session. */
  ofSession(sessionId: string): ReadonlySet<Connection> | undefined;
  /** Every connection, as a copy that may be closed while iterated. */
  all(): Connection[];
  size(): number;
  /** Writes a frame, dropping a client that does not read. */
  send(connection: Connection, text: string): void;
  /** Calls `ReceiveNotification(envelope)` on the handshaken, open targets (that pass `filter`), serializing once. */
  deliver(targets: Iterable<Connection>, envelope: RealtimeEnvelope, filter?: (connection: Connection) => boolean): void;
  /** Sends the close message and closes the socket; the connection stops receiving at once. */
  close(connection: Connection, error: string | undefined, allowReconnect: boolean, code?: number): void;
}

function addTo<K>(map: Map<K, Set<Connection>>, key: K, connection: Connection) {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(connection);
}

function removeFrom<K>(map: Map<K, Set<Connection>>, key: K, connection: Connection) {
  const set = map.get(key);
  if (!set) return;
  set.delete(connection);
  if (set.size === 0) map.delete(key);
}

/** Creates the {@link ConnectionRegistry} of one hub. */
export function createConnectionRegistry(options: { readonly logger: Logger; now(): number }): ConnectionRegistry {
  const { logger, now } = options;
  const connections = new Map<string, Connection>();
  const groups = new Map<string, Set<Connection>>();
  const sessions = new Map<string, Set<Connection>>();

  const registry: ConnectionRegistry = {
    add(connection) {
      connections.set(connection.id, connection);
    },
    forget(connection) {
      if (connections.get(connection.id) !== connection) return;
      connections.delete(connection.id);
      for (const group of connection.groups) removeFrom(groups, group, connection);
      connection.groups.clear();
      if (connection.principal.sessionId) removeFrom(sessions, connection.principal.sessionId, connection);
    },
    admit(connection) {
      for (const group of registry.ownGroups(connection)) registry.join(connection, group);
      if (connection.principal.sessionId) addTo(sessions, connection.principal.sessionId, connection);
    },
    ownGroups(connection) {
      const own = [`user:${connection.userKey}`];
      if (connection.principal.organizationId) own.push(`tenant:${connection.principal.organizationId}`);
      return own;
    },
    join(connection, group) {
      if (connection.groups.has(group)) return;
      connection.groups.add(group);
      addTo(groups, group, connection);
    },
    leave(connection, group) {
      if (connection.groups.delete(group)) removeFrom(groups, group, connection);
    },
    inGroup: (group) => groups.get(group),
    ofSession: (sessionId) => sessions.get(sessionId),
    all: () => [...connections.values()],
    size: () => connections.size,
    send(connection, text) {
      if (connection.ws.readyState !== connection.ws.OPEN) return;
      if (connection.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
        logger.warn('realtime client does not read its messages; dropping it', { connectionId: connection.id });
        connection.ws.terminate();
        return;
      }
      connection.ws.send(text);
      connection.lastSentAt = now();
    },
    deliver(targets, envelope, filter) {
      let text: string | undefined;
      for (const connection of targets) {
        if (!connection.handshaken || connection.closing || (filter && !filter(connection))) continue;
        text ??= invocation(RECEIVE_NOTIFICATION, [envelope]);
        registry.send(connection, text);
      }
    },
    close(connection, error, allowReconnect, code = 1000) {
      if (connection.closing) return;
      connection.closing = true;
      registry.forget(connection);
      if (connection.ws.readyState === connection.ws.OPEN) {
        if (connection.handshaken) connection.ws.send(closeMessage(error, allowReconnect));
        connection.ws.close(code);
      } else {
        connection.ws.terminate();
      }
    },
  };
  return registry;
}
