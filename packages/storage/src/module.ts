import type { IdtModule } from '@idt/core';
import type { BlobStore } from './blob/store.js';
import type { StorageService } from './files/service.js';
import { storageMigrations } from './knex/migrations.js';
import { StorageCodes } from './problems.js';
import type { Scanner } from './scan/scanner.js';
import { resolveStorageSettings, type StorageSettings, storageVariables } from './settings.js';

/** Options of {@link storage}; each wins over its environment variable. */
export interface StorageModuleOptions extends Partial<StorageSettings> {
  /** Where the bytes go; built from the settings (filesystem or S3) when absent. */
  readonly blobStore?: BlobStore;
  /** Scans uploads; ClamAV per `IDT_CLAMAV_URL` when absent. */
  readonly scanner?: Scanner;
}

/** The services of the storage module (`idt.services.storage`). */
export interface StorageServices {
  readonly service: StorageService;
  readonly blobStore: BlobStore;
  readonly settings: StorageSettings;
}

/**
 * The storage module: buckets and files under `/v1/storage`, uploads
 * streamed to the filesystem or an S3-compatible store, optional ClamAV
 * scanning. Requires the identity module.
 *
 * @example
 * const idt = await createIdt({ database, modules: [identity(), oidc(), storage({ driver: 'filesystem', directory: './files' })] });
 */
export function storage(options: StorageModuleOptions = {}): IdtModule<'storage', StorageServices, StorageSettings> {
  const { blobStore, scanner, ...overrides } = options;
  return {
    id: 'storage',
    requires: ['identity'],
    migrations: storageMigrations,
    problemCodes: Object.keys(StorageCodes),
    settings: {
      variables: storageVariables,
      resolve: (env, config) => resolveStorageSettings(env, config, overrides),
    },
    async setup(ctx) {
      const { createKnexStorage } = await import('./knex/module.js');
      const { createBlobStoreFromSettings, createScannerFromSettings } = await import('./blob/from-settings.js');
      const settings = ctx.settings;
      const module = createKnexStorage({
        db: ctx.db,
        blobStore: blobStore ?? createBlobStoreFromSettings(settings),
        scanner: scanner ?? createScannerFromSettings(settings),
        maxUploadBytes: settings.maxUploadBytes,
        clock: ctx.clock,
        logger: ctx.logger,
      });
      return {
        services: { service: module.service, blobStore: module.blobStore, settings },
        routes: module.routes,
        events: module.events,
        handlers: module.handlers,
        jobs: module.jobs,
      };
    },
  };
}
