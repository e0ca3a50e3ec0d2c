import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A node:http server that is listening before its handler exists (see {@link listenFirst}). */
export interface BoundServer {
  readonly server: Server;
  /** `http://host:port` as bound (port 0 resolved). */
  readonly origin: string;
  /** Hands every request from now on to `listener` (before this, requests get 503 with `Retry-After: 1`). */
  use(listener: RequestListener): void;
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
 * bound.use(expressApp);
 */
export async function listenFirst(port: number, host: string): Promise<BoundServer> {
  const server = createServer((_req, res) => void res.writeHead(503, { 'retry-after': '1' }).end());
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
    use(listener) {
      server.removeAllListeners('request').on('request', listener);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
