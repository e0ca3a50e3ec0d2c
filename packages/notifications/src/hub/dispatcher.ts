import type { Connection, ConnectionRegistry } from './connections.js';
import { completion, handshakeError, parseClientMessage, splitRecords } from './protocol.js';
import type { RealtimeHubLimits } from './types.js';

/** What a WebSocket delivers: one frame, or fragments of one. */
export type SocketData = Buffer | Buffer[] | ArrayBuffer;

/**
 * Creates the dispatcher of the messages clients send: it frames the text
 * into records, completes the handshake with the first, and answers the
 * invocations after it (`JoinGroup` and `LeaveGroup` of the caller's own
 * groups), closing the connection on oversized, binary or malformed input.
 */
export function createMessageDispatcher(options: {
  readonly registry: ConnectionRegistry;
  readonly limits: Pick<RealtimeHubLimits, 'maximumReceiveMessageBytes'>;
  now(): number;
}): (connection: Connection, data: SocketData, isBinary: boolean) => void {
  const { registry, limits, now } = options;

  /** Runs a client-to-server method; returns the error text for the completion, if any. */
  function invoke(connection: Connection, target: string, args: readonly unknown[]): string | undefined {
    if (target !== 'JoinGroup' && target !== 'LeaveGroup') return `Unknown hub method '${target}'.`;
    const group = args[0];
    if (args.length !== 1 || typeof group !== 'string') return `${target} takes one argument: the group name.`;
    if (!registry.ownGroups(connection).includes(group)) {
      return 'Access denied: only your own user:{sub} and tenant:{orgId} groups may be joined.';
    }
    if (target === 'JoinGroup') registry.join(connection, group);
    else registry.leave(connection, group);
    return undefined;
  }

  function handleRecord(connection: Connection, record: string) {
    const parsed = parseClientMessage(record);
    if ('error' in parsed) {
      registry.close(connection, `Protocol error: ${parsed.error}`, false, 1002);
      return;
    }
    const { message } = parsed;
    switch (message.type) {
      case 1: {
        const error = invoke(connection, message.target, message.arguments);
        if (message.invocationId !== undefined) registry.send(connection, completion(message.invocationId, error));
        return;
      }
      case 4:
        registry.send(
          connection,
          completion(message.invocationId as string, 'Streaming invocations are not supported by this hub.'),
        );
        return;
      case 7:
        registry.close(connection, undefined, false);
        return;
      default:
        return; // pings, cancellations and stray completions only keep the connection alive
    }
  }

  /** The handshake record: a protocol this hub does not speak closes the connection. Whether it completed. */
  function handshake(connection: Connection, record: string): boolean {
    const error = handshakeError(record);
    if (error !== null) {
      connection.ws.send(`${JSON.stringify({ error })}\u001e`);
      registry.close(connection, undefined, false, 1002);
      return false;
    }
    connection.handshaken = true;
    registry.admit(connection);
    registry.send(connection, '{}\u001e');
    return true;
  }

  return (connection, data, isBinary) => {
    if (connection.closing) return;
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    connection.lastReceivedAt = now();
    if (
      bytes.length > limits.maximumReceiveMessageBytes ||
      connection.pending.length + bytes.length > limits.maximumReceiveMessageBytes
    ) {
      registry.close(
        connection,
        `The message exceeds the maximum size of ${limits.maximumReceiveMessageBytes} bytes.`,
        false,
        1009,
      );
      return;
    }
    if (isBinary) {
      registry.close(connection, 'The json protocol takes text messages only.', false, 1003);
      return;
    }
    const { records, rest } = splitRecords(connection.pending + bytes.toString('utf8'));
    connection.pending = rest;
    for (const record of records) {
      if (connection.closing) return;
      if (!connection.handshaken) {
        if (!handshake(connection, record)) return;
        continue;
      }
      handleRecord(connection, record);
    }
  };
}
