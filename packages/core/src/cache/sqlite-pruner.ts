import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { runStatement } from '../db/statements.js';
import type { Logger } from '../logger.js';
import { INVALIDATIONS_TABLE } from './invalidation-driver.js';

/** Deletes the evictions below an id; the table's trigger keeps the newest row whatever the id (migration 0005). */
const PRUNE_SQL = `delete from ${INVALIDATIONS_TABLE} where id < ?`;

/** How long an SQLite eviction row is kept after the instance that prunes had read it, in milliseconds. */
export const INVALIDATION_RETENTION_MS = 600_000;

/** How often an SQLite instance prunes old eviction rows, at most, in milliseconds. */
export const PRUNE_INTERVAL_MS = 10_000;

/** When one SQLite invalidator prunes the eviction rows every process has read, and the pruning. */
export interface InvalidationPruner {
  /** Whether the next prune is due (at most one every {@link PRUNE_INTERVAL_MS}); a `true` answer counts as that prune. */
  due(): boolean;
  /**
   * Notes `newestRead`, the newest id read so far, and deletes the evictions
   * below the newest id read {@link INVALIDATION_RETENTION_MS} ago or
   * earlier: ids grow with commits, so those rows are older than that, and
   * every process watching the file has read them. A range of the primary
   * key, with no index on the time to keep up at every write. Never rejects.
   */
  prune(newestRead: number): Promise<void>;
}

/** Creates the pruner of one SQLite invalidator. */
export function createInvalidationPruner(options: {
  readonly db: Knex;
  readonly clock: Clock;
  readonly logger: Logger;
}): InvalidationPruner {
  const { db, clock, logger } = options;
  // When the next prune is due (clock time), and the newest id read at each prune (oldest first).
  let nextPruneAt = Number.NEGATIVE_INFINITY;
  const marks: Array<{ at: number; id: number }> = [];
  return {
    due() {
      const now = clock.now().getTime();
      if (now < nextPruneAt) return false;
      nextPruneAt = now + PRUNE_INTERVAL_MS;
      return true;
    },
    async prune(newestRead) {
      const now = clock.now().getTime();
      marks.push({ at: now, id: newestRead });
      let below = 0;
      while (marks.length > 0 && now - (marks[0]?.at ?? now) >= INVALIDATION_RETENTION_MS) {
        below = marks.shift()?.id ?? below;
      }
      if (below <= 0) return;
      try {
        await runStatement(db, PRUNE_SQL, [below]);
      } catch (error) {
        logger.warn('pruning cache invalidations failed', { error });
      }
    },
  };
}
