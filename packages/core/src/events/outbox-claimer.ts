import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { OUTBOX_DELIVERIES_TABLE, OUTBOX_EVENTS_TABLE } from '../db/migrations/0001-outbox.js';
import type { ClaimedDelivery, EventRow } from './outbox-rows.js';

/** Options of {@link createOutboxClaimer}. */
export interface OutboxClaimerOptions {
  readonly db: Knex;
  readonly clock: Clock;
  /** What claimed rows carry in `claimed_by`. */
  readonly instanceId: string;
  readonly leaseMs: number;
  /** Deliveries claimed at once. */
  readonly batchSize: number;
  /** PostgreSQL skips the rows another dispatcher is claiming at the same moment. */
  readonly postgres: boolean;
  /** The handlers this bus has: only their deliveries are claimed. */
  readonly handlerNames: () => string[];
}

/** Claims due deliveries under a lease, and reads the events they deliver. */
export interface OutboxClaimer {
  /**
   * Atomically claims up to `batchSize` due deliveries (pending, due, and
   * unclaimed or with an expired lease) of the handlers this bus has,
   * counting an attempt for each; none when it has no handler.
   */
  claim(): Promise<ClaimedDelivery[]>;
  /** The events of `claimed`, by id. */
  eventsOf(claimed: readonly ClaimedDelivery[]): Promise<Map<string, EventRow>>;
}

/** Creates the claimer of one bus. */
export function createOutboxClaimer(options: OutboxClaimerOptions): OutboxClaimer {
  const { db, clock, instanceId, leaseMs, batchSize, postgres, handlerNames } = options;
  return {
    async claim() {
      const names = handlerNames();
      if (names.length === 0) return [];
      const now = clock.now();
      const nowIso = now.toISOString();
      const due = db(OUTBOX_DELIVERIES_TABLE)
        .select('id')
        .where('status', 'pending')
        .where('next_attempt_at', '<=', nowIso)
        .where((q) => q.whereNull('claimed_until').orWhere('claimed_until', '<=', nowIso))
        .whereIn('handler', names)
        .orderBy([{ column: 'next_attempt_at' }, { column: 'id' }])
        .limit(batchSize);
      // Postgres: rows another dispatcher is claiming right now are skipped, and
      // a row claimed meanwhile fails the re-checked predicate. SQLite runs the
      // single statement under its write lock.
      if (postgres) due.forUpdate().skipLocked();
      const rows: Array<Record<string, unknown>> = await db(OUTBOX_DELIVERIES_TABLE)
        .whereIn('id', due)
        .update({
          claimed_by: instanceId,
          claimed_until: new Date(now.getTime() + leaseMs).toISOString(),
          attempts: db.raw('?? + 1', ['attempts']),
        })
        .returning(['id', 'event_id', 'handler', 'attempts']);
      return rows.map((row) => ({
        id: String(row.id),
        event_id: String(row.event_id),
        handler: String(row.handler),
        attempts: Number(row.attempts),
      }));
    },
    async eventsOf(claimed) {
      const eventIds = [...new Set(claimed.map((delivery) => delivery.event_id))];
      const rows: EventRow[] = await db(OUTBOX_EVENTS_TABLE)
        .whereIn('id', eventIds)
        .select('id', 'type', 'payload', 'occurred_at');
      return new Map(rows.map((row) => [row.id, row]));
    },
  };
}
