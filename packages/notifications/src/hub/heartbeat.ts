import type { ConnectionRegistry } from './connections.js';
import { PING } from './protocol.js';
import type { RealtimeHubLimits } from './types.js';

/**
 * Creates the hub's heartbeat, run once a second: closes connections whose
 * handshake is late, whose access token expired or whose client went silent,
 * pings the ones nothing was sent to for a while, then lets each memory
 * (`sweeps`) forget what expired.
 */
export function createHeartbeat(options: {
  readonly registry: ConnectionRegistry;
  readonly limits: Pick<RealtimeHubLimits, 'handshakeTimeoutMs' | 'clientTimeoutMs' | 'keepAliveIntervalMs'>;
  readonly sweeps: ReadonlyArray<(at: number) => void>;
  now(): number;
}): () => void {
  const { registry, limits } = options;
  return () => {
    const at = options.now();
    for (const connection of registry.all()) {
      if (connection.closing) continue;
      if (!connection.handshaken) {
        if (at - connection.openedAt >= limits.handshakeTimeoutMs) registry.close(connection, undefined, false, 1002);
        continue;
      }
      if (at >= connection.expiresAt) {
        registry.close(connection, 'The access token expired; reconnect with a fresh one.', true);
      } else if (at - connection.lastReceivedAt >= limits.clientTimeoutMs) {
        registry.close(connection, 'Client timeout: nothing was received for 30 seconds.', true);
      } else if (at - connection.lastSentAt >= limits.keepAliveIntervalMs) {
        registry.send(connection, PING);
      }
    }
    for (const sweep of options.sweeps) sweep(at);
  };
}
