/**
 * The pages a SQLite WAL file holds frames of, for `bench/writes.ts`.
 *
 * A WAL file is a 32-byte header (page size at byte 8, the salts at bytes
 * 16 to 23) and then frames: a 24-byte header (the page number first, the
 * salts again at bytes 8 to 15) and the page. Frames whose salts differ
 * from the header's are left over from before the WAL was last restarted,
 * and end the valid ones.
 */

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;

/** The page number of every valid frame of a WAL file's contents, in order (empty for an empty file). */
export function walFramePages(wal: Buffer): number[] {
  if (wal.length < WAL_HEADER_BYTES) return [];
  const pageSize = wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  const pages: number[] = [];
  for (
    let offset = WAL_HEADER_BYTES;
    offset + FRAME_HEADER_BYTES + pageSize <= wal.length;
    offset += FRAME_HEADER_BYTES + pageSize
  ) {
    if (wal.readUInt32BE(offset + 8) !== salt1 || wal.readUInt32BE(offset + 12) !== salt2) break;
    pages.push(wal.readUInt32BE(offset));
  }
  return pages;
}

/**
 * Counts frames by the table or index that owns their page (`owners`: page
 * number to name, as SQLite's `dbstat` table lists them). Page 1 holds the
 * database header besides `sqlite_schema`; a page no object owns is free.
 */
export function framesByObject(pages: readonly number[], owners: ReadonlyMap<number, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const page of pages) {
    const name = owners.get(page) ?? (page === 1 ? 'sqlite_schema (database header)' : 'free pages');
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}
