import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Bff, type CreateBffOptions, createBff } from '@idt/bff';
import { refuseUpgrade } from '@idt/core';

const require = createRequire(import.meta.url);
const PUBLIC = fileURLToPath(new URL('../public/', import.meta.url));

/** The page's files, and the two browser libraries it loads (the stock SignalR client and the idt browser logger). */
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: `${PUBLIC}index.html`, type: 'text/html; charset=utf-8' },
  // Linked by the page; `/favicon.ico` too, which browsers ask for on any other page (a problem document of /bff/*).
  '/favicon.svg': { file: `${PUBLIC}favicon.svg`, type: 'image/svg+xml' },
  '/favicon.ico': { file: `${PUBLIC}favicon.svg`, type: 'image/svg+xml' },
  '/app.js': { file: `${PUBLIC}app.js`, type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: `${PUBLIC}app.css`, type: 'text/css; charset=utf-8' },
  '/vendor/signalr.min.js': {
    file: require.resolve('@microsoft/signalr/dist/browser/signalr.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  // The built browser entry of @idt/bff (`@idt/bff/browser`), found through its manifest.
  '/vendor/idt-logger.js': {
    file: join(dirname(require.resolve('@idt/bff/package.json')), 'dist', 'browser.js'),
    type: 'text/javascript; charset=utf-8',
  },
};

/** No inline script or style, nothing from elsewhere, never framed. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** A running dashboard. */
export interface Dashboard {
  /**
   * Where to open it: the origin of the redirect URI (`OIDC_REDIRECT_URI`),
   * the host the sign-in comes back to and its cookies live on.
   */
  readonly url: string;
  /** The address the server is bound to (`http://127.0.0.1:3000`). */
  readonly listening: string;
  readonly bff: Bff;
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * The node:http handler of the dashboard: `/bff/*` and `/api/*` go to the
 * BFF, the page and its scripts are served from `public/`.
 */
export function dashboardHandler(bff: Bff): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://dashboard').pathname;
    if (path.startsWith('/bff/') || path === '/api' || path.startsWith('/api/')) return void bff.handler(req, res);
    const asset = ASSETS[path];
    if (!asset || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(asset ? 405 : 404, { 'content-type': 'text/plain; charset=utf-8', ...(asset ? { allow: 'GET, HEAD' } : {}) });
      res.end(asset ? 'Method not allowed' : 'Not found');
      return;
    }
    readFile(asset.file).then(
      (body) => {
        res.writeHead(200, { 'content-type': asset.type, 'content-length': body.length, ...PAGE_HEADERS });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      () => {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The page could not be read');
      },
    );
  };
}

/**
 * Starts the dashboard: a BFF over the configuration (`OIDC_*`,
 * `BFF_API_BASE_URL`, `COOKIE_PASSWORD` from `idt register-client
 * --env-out`), the page, and the realtime hub bridged through the BFF.
 *
 * @example
 * const dashboard = await startDashboard({ env: process.env }, 3000);
 * console.log(`Dashboard on ${dashboard.url}`);
 */
export async function startDashboard(options: CreateBffOptions, port = 3000, host = '127.0.0.1'): Promise<Dashboard> {
  const bff = await createBff(options);
  const server = createServer(dashboardHandler(bff));
  server.on('upgrade', (req, socket, head) => {
    if (!bff.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: new URL(bff.config.redirectUri).origin,
    listening: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`,
    bff,
    server,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await bff.close();
    },
  };
}
