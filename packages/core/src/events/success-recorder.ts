import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { OUTBOX_DELIVERIES_TABLE } from '../db/migrations/0001-outbox.js';
import { listStatement, MAX_LIST_ITEMS, selectListRows } from '../db/statements.js';
import type { Logger } from '../logger.js';
import type { ClaimedDelivery } from './outbox-rows.js';

/** Marks claimed deliveries delivered while the claim is still ours (bindings: time, instance, then id and attempts of each). */
const MARK_DELIVERED = listStatement(
  (pairs) =>
    `update ${OUTBOX_DELIVERIES_TABLE} set status = 'delivered', delivered_at = ?, claimed_by = null, claimed_until = null, ` +
    `last_error = null where claimed_by = ? and (id, attempts) in (${pairs}) returning id`,
  { kind: 'in', item: '(?, ?)' },
);

/** Deliveries marked delivered per statement (two bound values each): as many as one list statement binds. */
const MARK_CHUNK = MAX_LIST_ITEMS;

/** Options of {@link createSuccessRecorder}. */
export interface SuccessRecorderOptions {
  readonly db: Knex;
  readonly clock: Clock;
  /** The claim a delivery must still be under to be marked. */
  readonly instanceId: string;
  readonly logger: Logger;
  /** How long a success waits for the other deliveries running in this process, in milliseconds. */
  readonly markWaitMs: number;
}

/**
 * Records the successful deliveries of every batch of one bus, in as few
 * statements as they allow: a success waits for the other deliveries
 * running in this process to finish too, at most `markWaitMs`
 * (one turn of the event loop when none is running), and those finishing
 * while a statement runs go together in the next. The deliveries one
 * event causes (a handler that writes events of its own) and those of
 * concurrent requests are marked together, and a slow handler delays the
 * marks of the others by that wait at most, well within their lease.
 */
export interface SuccessRecorder {
  /** A delivery of this bus started running. */
  started(): void;
  /** A delivery of this bus finished running (whatever its outcome). */
  ended(): void;
  /** Queues a success; resolves once it is recorded (or its recording failed and was logged). */
  record(delivery: ClaimedDelivery): Promise<void>;
}

/** Creates the success recorder of one bus. */
export function createSuccessRecorder(options: SuccessRecorderOptions): SuccessRecorder {
  const { db, clock, instanceId, logger, markWaitMs } = options;
  let queued: ClaimedDelivery[] = [];
  /** Settles once the queued successes are recorded. */
  let queuedRecorded: { promise: Promise<void>; resolve(): void } | undefined;
  let flushing = false;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  /** Deliveries of this bus running now. */
  let running = 0;

  /** Marks one chunk of claimed deliveries delivered, each only while the claim is still ours; answers the ids it marked. */
  async function markChunkDelivered(chunk: ReadonlyArray<ClaimedDelivery>): Promise<string[]> {
    const pairs = chunk.flatMap((delivery) => [delivery.id, delivery.attempts]);
    const rows = await selectListRows(db, MARK_DELIVERED, [clock.now().toISOString(), instanceId], pairs);
    return rows.map((row) => String(row[0]));
  }

  /**
   * Records successful deliveries in one statement per {@link MARK_CHUNK}:
   * each row only while the claim is still ours (same `claimed_by` and
   * `attempts`; a dispatcher that took a delivery over after our lease
   * expired bumped its attempts). Never rejects.
   */
  async function markDelivered(done: ReadonlyArray<ClaimedDelivery>): Promise<void> {
    for (let i = 0; i < done.length; i += MARK_CHUNK) {
      const chunk = done.slice(i, i + MARK_CHUNK);
      try {
        const updated = await markChunkDelivered(chunk);
        if (updated.length === chunk.length) continue;
        const recorded = new Set(updated);
        for (const delivery of chunk) {
          if (recorded.has(delivery.id)) continue;
          logger.warn('event delivery outlived its lease and was claimed again; its outcome was not recorded', {
            deliveryId: delivery.id,
            eventId: delivery.event_id,
            handler: delivery.handler,
            attempt: delivery.attempts,
          });
        }
      } catch (error) {
        logger.error('could not record the outcome of event deliveries; they are retried once their lease expires', {
          deliveryIds: chunk.map((delivery) => delivery.id),
          error,
        });
      }
    }
  }

  function flush(): void {
    clearTimeout(timer);
    clearImmediate(immediate);
    timer = undefined;
    immediate = undefined;
    const batch = queued;
    const recorded = queuedRecorded;
    queued = [];
    queuedRecorded = undefined;
    flushing = true;
    void markDelivered(batch).finally(() => {
      flushing = false;
      recorded?.resolve();
      flushSoon();
    });
  }

  /** Flushes once nothing else is running (next turn of the loop), or after `markWaitMs`. */
  function flushSoon(): void {
    if (flushing || queued.length === 0) return;
    if (running > 0) {
      timer ??= setTimeout(flush, markWaitMs);
      return;
    }
    // Deliveries that start within this turn (those of events a handler just committed) are waited for too.
    immediate ??= setImmediate(() => {
      immediate = undefined;
      if (running > 0) flushSoon();
      else flush();
    });
  }

  return {
    started(): void {
      running++;
    },
    ended(): void {
      running--;
      flushSoon();
    },
    record(delivery: ClaimedDelivery): Promise<void> {
      queued.push(delivery);
      if (!queuedRecorded) {
        let resolve!: () => void;
        const promise = new Promise<void>((done) => {
          resolve = done;
        });
        queuedRecorded = { promise, resolve };
      }
      const { promise } = queuedRecorded;
      flushSoon();
      return promise;
    },
  };
}
