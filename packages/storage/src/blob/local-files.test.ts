import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileSystemBlobStore, STAGING_FOLDER } from './filesystem.js';
import { sweepFolder } from './local-files.js';

describe('sweeping abandoned staging files', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'idt-sweep-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function file(folder: string, name: string, ageMs: number) {
    await mkdir(folder, { recursive: true });
    const path = join(folder, name);
    await writeFile(path, 'partial upload');
    const at = new Date(Date.now() - ageMs);
    await utimes(path, at, at);
  }

  it('removes only files older than the cutoff and counts them', async () => {
    const folder = join(root, 'spool');
    await file(folder, 'old-1', 7_200_000);
    await file(folder, 'old-2', 3_700_000);
    await file(folder, 'fresh', 1_000);
    expect(await sweepFolder(folder, 3_600_000)).toBe(2);
    expect(await readdir(folder)).toEqual(['fresh']);
    expect(await sweepFolder(folder, 3_600_000)).toBe(0);
  });

  it('answers 0 for a folder that does not exist', async () => {
    expect(await sweepFolder(join(root, 'missing'), 0)).toBe(0);
  });

  it('is what the filesystem blob store sweeps its staging folder with', async () => {
    const store = createFileSystemBlobStore({ directory: root });
    await file(join(root, STAGING_FOLDER), 'abandoned', 7_200_000);
    await file(join(root, STAGING_FOLDER), 'in-flight', 0);
    expect(await store.sweep(3_600_000)).toBe(1);
    expect(await readdir(join(root, STAGING_FOLDER))).toEqual(['in-flight']);
  });
});
