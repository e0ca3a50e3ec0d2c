/**
 * The SignalR JSON hub protocol, version 1, as far as a WebSocket-only server
 * needs it: record framing, the handshake, and the message shapes.
 * Pure functions; the hub owns sockets and timers.
 */

/** Where the hub listens, without the deployment prefix. */
export const HUB_PATH = '/hubs/realtime';

/** The client method every server-to-client call invokes. */
export const RECEIVE_NOTIFICATION = 'ReceiveNotification';

/** Ends every record (ASCII record separator, 0x1E). */
export const RECORD_SEPARATOR = '\u001e';

/** Hub message types (SignalR HubProtocol). */
export const MessageType = {
  Invocation: 1,
  StreamItem: 2,
  Completion: 3,
  StreamInvocation: 4,
  CancelInvocation: 5,
  Ping: 6,
  Close: 7,
} as const;

/** A client-to-server invocation. `invocationId` absent: the caller expects no completion. */
export interface InvocationMessage {
  readonly type: 1;
  readonly invocationId?: string;
  readonly target: string;
  readonly arguments: readonly unknown[];
}

/** A message the hub accepts from a client after the handshake. */
export type ClientMessage =
  | InvocationMessage
  | { readonly type: 4; readonly invocationId: string; readonly target: string }
  | { readonly type: 2 | 3 | 5; readonly invocationId?: string }
  | { readonly type: 6 }
  | { readonly type: 7; readonly error?: string };

/** Splits the text received so far into complete records and the unfinished rest. */
export function splitRecords(text: string): { records: string[]; rest: string } {
  const parts = text.split(RECORD_SEPARATOR);
  const rest = parts.pop() ?? '';
  return { records: parts, rest };
}

/** One record: the message as JSON followed by the separator. */
export function frame(message: unknown): string {
  return JSON.stringify(message) + RECORD_SEPARATOR;
}

/**
 * Reads the handshake request. Only `{"protocol":"json","version":1}` is
 * spoken (the stock client asks for version 1 unless stateful reconnect was
 * negotiated, which this hub never offers).
 *
 * @returns `null` when it is acceptable, else the error sent back before closing.
 */
export function handshakeError(record: string): string | null {
  let request: unknown;
  try {
    request = JSON.parse(record);
  } catch {
    return 'The handshake request is not valid JSON.';
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    return 'The handshake request must be an object.';
  const { protocol, version } = request as { protocol?: unknown; version?: unknown };
  if (protocol !== 'json') return `The protocol '${String(protocol)}' is not supported; use 'json'.`;
  if (version !== 1) return `The protocol 'json' version ${String(version)} is not supported; use version 1.`;
  return null;
}

/**
 * Parses one record after the handshake.
 *
 * @returns the message, or a reason when it breaks the protocol (the hub then closes the connection).
 */
export function parseClientMessage(record: string): { message: ClientMessage } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(record);
  } catch {
    return { error: 'A message is not valid JSON.' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'A message must be a JSON object.' };
  const message = value as Record<string, unknown>;
  const type = message.type;
  if (typeof type !== 'number' || !Number.isInteger(type)) return { error: 'A message has no numeric type.' };
  const invocationId = message.invocationId;
  if (invocationId !== undefined && typeof invocationId !== 'string') return { error: 'invocationId must be a string.' };
  switch (type) {
    case MessageType.Invocation: {
      if (typeof message.target !== 'string' || message.target === '') return { error: 'An invocation has no target.' };
      const args = message.arguments ?? [];
      if (!Array.isArray(args)) return { error: 'The arguments of an invocation must be an array.' };
      return {
        message: {
          type: 1,
          target: message.target,
          arguments: args,
          ...(invocationId !== undefined ? { invocationId } : {}),
        },
      };
    }
    case MessageType.StreamInvocation:
      if (typeof invocationId !== 'string') return { error: 'A stream invocation has no invocationId.' };
      return { message: { type: 4, invocationId, target: String(message.target ?? '') } };
    case MessageType.StreamItem:
    case MessageType.Completion:
    case MessageType.CancelInvocation:
      return { message: { type, ...(invocationId !== undefined ? { invocationId } : {}) } };
    case MessageType.Ping:
      return { message: { type: 6 } };
    case MessageType.Close:
      return { message: { type: 7, ...(typeof message.error === 'string' ? { error: message.error } : {}) } };
    default:
      // Later protocol versions add types (Ack, Sequence); a v1 peer must not send them.
      return { error: `Message type ${type} is not part of protocol version 1.` };
  }
}

/** A server-to-client invocation that expects no completion. */
export function invocation(target: string, args: readonly unknown[]): string {
  return frame({ type: MessageType.Invocation, target, arguments: args });
}

/** The completion of a client's invocation: void, or the error text. */
export function completion(invocationId: string, error?: string): string {
  return frame(
    error === undefined ? { type: MessageType.Completion, invocationId } : { type: MessageType.Completion, invocationId, error },
  );
}

/** The keep-alive ping. */
export const PING = frame({ type: MessageType.Ping });

/** The close message: `allowReconnect` lets a client with automatic reconnect try again. */
export function closeMessage(error?: string, allowReconnect = false): string {
  return frame({
    type: MessageType.Close,
    ...(error !== undefined ? { error } : {}),
    ...(allowReconnect ? { allowReconnect: true } : {}),
  });
}
