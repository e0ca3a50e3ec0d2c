import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

/** A node:http `upgrade` listener that returns `false` when it did not take the request (see `Idt.upgrade`). */
export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** A node:http server that is listening before its handler exists (see {@link listenFirst}). */
export interface BoundServer {
  readonly server: Server;
  /** `http://host:port` as bound (port 0 resolved). */
  readonly origin: string;
  /**
   * Hands every request from now on to `listener` (before this, requests get
   * 503 with `Retry-After: 1`), and WebSocket upgrades to `upgrade` (pass
   * `idt.upgrade` for the realtime hub); upgrades nobody takes get 404.
   */
  use(listener: RequestListener, upgrade?: UpgradeListener): void;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

/**
 * Binds a port before the application exists, for hosts that learn their
 * address only when they listen (port 0 in tests, a platform-assigned port):
 * the bound origin becomes `createIdt`'s `baseUrl`, then the app takes over.
 *
 * @example
 * const bound = await listenFirst(0, '127.0.0.1');
 * const idt = await createIdt({ baseUrl: `${bound.origin}/idt`, modules: [identity(), oidc()] });
 * bound.use(expressApp, idt.upgrade);
 */
export async function listenFirst(port: number, host: string): Promise<BoundServer> {
  const server = createServer((_req, res) => void res.writeHead(503, { 'retry-after': '1' }).end());
  let upgrades: UpgradeListener | undefined;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (upgrades?.(req, socket, head)) return;
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : host;
  return {
    server,
    origin: `http://${shownHost}:${address.port}`,
    use(listener, upgrade) {
      server.removeAllListeners('request').on('request', listener);
      upgrades = upgrade;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
