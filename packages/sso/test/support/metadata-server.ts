import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local HTTP server that publishes IdP metadata documents by path, for metadata URL tests. */
export interface MetadataServer {
  /** `http://127.0.0.1:PORT` */
  readonly origin: string;
  /** Serves `body` at `path` with `status` (200 by default); a `location` makes it a redirect. */
  publish(path: string, body: string, options?: { status?: number; location?: string }): void;
  /** The paths asked so far. */
  readonly requests: readonly string[];
  close(): Promise<void>;
}

/** Starts a {@link MetadataServer} on a free port of 127.0.0.1. */
export async function startMetadataServer(): Promise<MetadataServer> {
  const documents = new Map<string, { body: string; status: number; location?: string }>();
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push(path);
    const document = documents.get(path);
    if (!document) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(document.status, {
      'content-type': 'application/samlmetadata+xml',
      ...(document.location ? { location: document.location } : {}),
    });
    res.end(document.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    publish(path, body, options = {}) {
      documents.set(path, { body, status: options.status ?? 200, ...(options.location ? { location: options.location } : {}) });
    },
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
