import type { Clock, EventDefinition, EventHandlerDefinition, Logger, Route } from '@idt/core';
import { silentLogger } from '@idt/core';
import type { Knex } from 'knex';
import type { BlobStore } from '../blob/store.js';
import { createStorageService, type StorageService } from '../files/service.js';
import { createStorageRoutes } from '../http/routes.js';
import type { Scanner } from '../scan/scanner.js';
import { createKnexFilesStore } from './store.js';

/** Options of {@link createKnexStorage}. */
export interface KnexStorageOptions {
  readonly db: Knex;
  /** Where the bytes go (see `createBlobStoreFromSettings`). */
  readonly blobStore: BlobStore;
  /** Scans uploads before they are stored; off when absent. */
  readonly scanner?: Scanner | undefined;
  /** The largest upload request, in bytes (default 104,857,600). */
  readonly maxUploadBytes?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The storage module on knex: the service, its routes, events, handlers and jobs. */
export interface KnexStorage {
  readonly service: StorageService;
  readonly blobStore: BlobStore;
  readonly routes: readonly Route[];
  /** Events the module publishes (none yet). */
  readonly events: readonly EventDefinition<any>[];
  /** Handlers to subscribe on the bus (none yet). */
  readonly handlers: readonly EventHandlerDefinition<any>[];
  /** Periodic work: sweeping staged uploads a crash left behind. */
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly intervalMs: number; run(): Promise<unknown> }>;
}

/** Staged uploads older than this are leftovers of a crash. */
const STAGING_MAX_AGE_MS = 24 * 3_600_000;

/**
 * Wires the storage module over a knex database (migrations:
 * `storageMigrations`, after `@idt/core` and `@idt/identity`).
 *
 * @example
 * const storage = createKnexStorage({ db, blobStore: createBlobStoreFromSettings(config.storage), scanner: createScannerFromSettings(config.storage) });
 * routes.push(...storage.routes);
 */
export function createKnexStorage(options: KnexStorageOptions): KnexStorage {
  const logger = options.logger ?? silentLogger;
  const service = createStorageService({
    store: createKnexFilesStore(options.db),
    blobs: options.blobStore,
    scanner: options.scanner,
    logger,
    ...(options.maxUploadBytes !== undefined ? { maxUploadBytes: options.maxUploadBytes } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return {
    service,
    blobStore: options.blobStore,
    routes: createStorageRoutes(service),
    events: [],
    handlers: [],
    jobs: [
      {
        name: 'sweep staged uploads',
        intervalMs: 3_600_000,
        run: () => options.blobStore.sweep(STAGING_MAX_AGE_MS),
      },
    ],
  };
}
