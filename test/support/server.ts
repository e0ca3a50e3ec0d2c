import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Clock, type IdtConfigOverrides, loadConfig, type Mailer, refuseUpgrade } from '@idt/core';
import { createReferenceServer, type ReferenceModuleOptions, type ReferenceServer } from '@idt/example-server';
import { createTestDatabase, type TestDatabase, type TestDialect } from './database.js';
import { referenceMigrationSets } from './migrations.js';
import { GENEROUS_RATE_LIMITS, type TestHost } from './test-idt.js';

/** Options of {@link startTestServer}. */
export interface TestServerOptions {
  readonly dialect?: TestDialect;
  /** Environment variables the configuration is read from (beside the test defaults). */
  readonly env?: Record<string, string>;
  /** Settings applied over the environment. */
  readonly config?: IdtConfigOverrides;
  /** Skip migrations (to test the pending-migration refusal). */
  readonly migrate?: boolean;
  /** Reuse an existing database instead of creating one. */
  readonly database?: TestDatabase;
  /** The clock every policy reads (a manual clock for time rules). */
  readonly clock?: Clock;
  readonly mailer?: Mailer;
  /** Options of the module factories, e.g. `{ oidc: { backchannelLimits } }`. */
  readonly modules?: ReferenceModuleOptions;
  /**
   * The host name of the issuer (the server still listens on 127.0.0.1):
   * `localhost` for WebAuthn, whose relying party id cannot be an IP address.
   */
  readonly hostname?: 'localhost' | '127.0.0.1';
}

/**
 * The reference server listening on a loopback port, over a throwaway
 * database: for the suites that keep the real socket honest. Others use
 * `createTestIdt`, which answers in-process.
 */
export interface TestServer extends TestHost {
  /** The base URL, prefix included. */
  readonly url: string;
  /** The origin the server listens on. */
  readonly origin: string;
  readonly idt: ReferenceServer;
  readonly database: TestDatabase;
  readonly http: Server;
  /** `fetch` relative to {@link url}. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The global `fetch`: requests go over the socket. */
  readonly send: typeof fetch;
  /** Stops the server and deletes the database (unless it was passed in). */
  close(): Promise<void>;
}

/**
 * Starts the real reference server on 127.0.0.1 with a free port, in the
 * Testing environment, on a fresh migrated database.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database =
    options.database ??
    (await createTestDatabase(options.dialect ?? 'sqlite', options.migrate === false ? [] : referenceMigrationSets));
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const origin = `http://${options.hostname ?? '127.0.0.1'}:${port}`;
  const config = loadConfig(
    {
      IDT_ENVIRONMENT: 'Testing',
      IDT_LOG_LEVEL: 'silent',
      ...GENEROUS_RATE_LIMITS,
      IDT_DATA_DIR: database.dataDir,
      ...options.env,
    },
    { databaseUrl: database.url, issuer: origin, port, ...options.config },
  );
  const idt = await createReferenceServer({
    resolvedConfig: config,
    env: { ...GENEROUS_RATE_LIMITS, ...options.env },
    database: database.db,
    migrations: 'skip',
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.mailer ? { mailer: options.mailer } : {}),
    ...(options.modules ? { moduleOptions: options.modules } : {}),
  });
  idt.start();
  http.on('request', (req, res) => void idt.handler(req, res));
  http.on('upgrade', (req, socket, head) => {
    if (!idt.upgrade(req, socket, head)) refuseUpgrade(socket, 404);
  });
  const url = `${origin}${config.pathPrefix}`;
  return {
    url,
    origin,
    idt,
    database,
    http,
    fetch: (path, init) => fetch(`${url}${path}`, init),
    send: fetch,
    async close() {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
      await idt.close();
      if (!options.database) await database.destroy();
    },
  };
}
