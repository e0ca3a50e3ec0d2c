import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isMissing, sweepFolder } from './local-files.js';
import { assertBlobKey, type BlobStore, type StagedBlob } from './store.js';

/** Options of {@link createFileSystemBlobStore}. */
export interface FileSystemBlobStoreOptions {
  /** The root directory; created when missing. Blobs go to `objects/`, uploads in progress to `.staging/`. */
  readonly directory: string;
}

/** The staging folder of a filesystem blob store, relative to its directory. */
export const STAGING_FOLDER = '.staging';
/** The folder committed blobs live in, relative to its directory. */
export const OBJECTS_FOLDER = 'objects';

/**
 * A {@link BlobStore} on the local file system (the default, under
 * `${IDT_DATA_DIR}/files`). An upload streams into `.staging/<uuid>.part`
 * and is renamed into `objects/<key>` on commit, so a blob is either
 * complete or absent; files are created with mode 0600.
 *
 * @example
 * const blobs = createFileSystemBlobStore({ directory: './data/files' });
 */
export function createFileSystemBlobStore(options: FileSystemBlobStoreOptions): BlobStore {
  const root = resolve(options.directory);
  const staging = join(root, STAGING_FOLDER);
  const objects = join(root, OBJECTS_FOLDER);
  const pathOf = (key: string) => {
    assertBlobKey(key);
    return join(objects, ...key.split('/'));
  };

  return {
    kind: 'filesystem',

    async stage(source: Readable): Promise<StagedBlob> {
      await mkdir(staging, { recursive: true, mode: 0o700 });
      const temp = join(staging, `${randomUUID()}.part`);
      try {
        await pipeline(source, createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
      const { size } = await stat(temp);
      let settled = false;
      return {
        sizeBytes: size,
        read: () => createReadStream(temp),
        async commit(key) {
          if (settled) throw new Error('This staged blob was already committed or discarded');
          const target = pathOf(key);
          await mkdir(dirname(target), { recursive: true, mode: 0o700 });
          await rename(temp, target);
          settled = true;
        },
        async discard() {
          if (settled) return;
          settled = true;
          await rm(temp, { force: true });
        },
      };
    },

    async open(key) {
      const path = pathOf(key);
      try {
        const { size } = await stat(path);
        return { body: createReadStream(path), sizeBytes: size };
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },

    async delete(key) {
      await rm(pathOf(key), { force: true });
    },

    sweep(olderThanMs) {
      return sweepFolder(staging, olderThanMs);
    },
  };
}
