import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Whether a file system error says the file or folder does not exist. */
export function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

/**
 * Removes the files of a staging folder last modified more than
 * `olderThanMs` ago (uploads abandoned by a crash); a missing folder or a
 * file removed meanwhile is not an error. Answers how many were removed.
 */
export async function sweepFolder(folder: string, olderThanMs: number): Promise<number> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch (error) {
    if (isMissing(error)) return 0;
    throw error;
  }
  const cutoff = Date.now() - olderThanMs;
  let removed = 0;
  for (const name of names) {
    const path = join(folder, name);
    try {
      if ((await stat(path)).mtimeMs < cutoff) {
        await rm(path, { force: true });
        removed++;
      }
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }
  return removed;
}
