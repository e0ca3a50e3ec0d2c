import { join } from 'node:path';
import { createClamAvScanner } from '../scan/clamav.js';
import type { Scanner } from '../scan/scanner.js';
import type { StorageSettings } from '../settings.js';
import { createFileSystemBlobStore } from './filesystem.js';
import { createS3BlobStore } from './s3.js';
import type { BlobStore } from './store.js';

/**
 * The blob store the configuration asks for: the filesystem driver under
 * `settings.directory` (default), or the S3-compatible driver, which spools
 * uploads in `settings.directory/.s3-spool`.
 *
 * @example
 * const blobs = createBlobStoreFromSettings(config.storage);
 */
export function createBlobStoreFromSettings(settings: StorageSettings): BlobStore {
  if (settings.driver === 's3') {
    if (!settings.s3) throw new TypeError('The s3 storage driver needs its S3 settings');
    // Uploads are spooled next to where the filesystem driver would keep files: the data directory, not /tmp.
    return createS3BlobStore({ ...settings.s3, spoolDirectory: join(settings.directory, '.s3-spool') });
  }
  return createFileSystemBlobStore({ directory: settings.directory });
}

/**
 * The scanner the configuration asks for: ClamAV when `clamavUrl` is set,
 * none otherwise.
 */
export function createScannerFromSettings(settings: StorageSettings): Scanner | undefined {
  return settings.clamavUrl ? createClamAvScanner({ url: settings.clamavUrl }) : undefined;
}
