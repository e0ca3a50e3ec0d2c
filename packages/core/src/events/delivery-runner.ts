import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { toIso } from '../db/database.js';
import { OUTBOX_DELIVERIES_TABLE, OUTBOX_EVENTS_TABLE } from '../db/migrations/0001-outbox.js';
import type { Logger } from '../logger.js';
import type { ClaimedDelivery, EventRow, Payload } from './outbox-rows.js';
import { createSuccessRecorder } from './success-recorder.js';
import type { EventEnvelope, EventHandlerDefinition } from './types.js';

const MAX_ERROR_LENGTH = 4000;

/** Thrown into a delivery's outcome when its handler runs past `handlerTimeoutMs`. */
class HandlerTimeoutError extends Error {
  constructor(handler: string, ms: number) {
    super(`Event handler ${handler} did not finish within ${ms} ms`);
    this.name = 'HandlerTimeoutError';
  }
}

function describeError(error: unknown): string {
  const text = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

/** Options of {@link createDeliveryRunner}. */
export interface DeliveryRunnerOptions {
  readonly db: Knex;
  readonly clock: Clock;
  /** The claim a delivery must still be under for its outcome to be recorded. */
  readonly instanceId: string;
  readonly logger: Logger;
  /** The subscribed handler of a name. */
  readonly handlerOf: (name: string) => EventHandlerDefinition | undefined;
  readonly handlerTimeoutMs: number;
  /** Attempts before a delivery is marked `dead`. */
  readonly maxAttempts: number;
  /** The first retry delay, doubled on every further failure, in milliseconds. */
  readonly retryBaseMs: number;
  /** The longest retry delay, in milliseconds. */
  readonly retryMaxMs: number;
  /** How long a success waits for the other deliveries running in this process, in milliseconds. */
  readonly markWaitMs: number;
}

/** Runs claimed deliveries' handlers and records each outcome: delivered, retried with backoff, or dead. */
export interface DeliveryRunner {
  /**
   * Runs claimed deliveries concurrently; resolves once their successes are
   * recorded and never rejects.
   *
   * @returns how many it ran.
   */
  run(claimed: ReadonlyArray<ClaimedDelivery>, rows: ReadonlyMap<string, EventRow>): Promise<number>;
}

/** Creates the delivery runner of one bus (with its success recorder). */
export function createDeliveryRunner(options: DeliveryRunnerOptions): DeliveryRunner {
  const { db, clock, instanceId, logger, handlerOf, handlerTimeoutMs, maxAttempts, retryBaseMs, retryMaxMs } = options;
  const successes = createSuccessRecorder({ db, clock, instanceId, logger, markWaitMs: options.markWaitMs });

  function withTimeout(work: Promise<void>, handler: string): Promise<void> {
    let timeout: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timeout = setTimeout(() => reject(new HandlerTimeoutError(handler, handlerTimeoutMs)), handlerTimeoutMs);
      timeout.unref();
    });
    return Promise.race([work, expired]).finally(() => clearTimeout(timeout));
  }

  /**
   * Runs one claimed delivery; never rejects. A failure is recorded here (a
   * retry or dead); a success is returned, for the success recorder to
   * record together with the others that finished meanwhile.
   */
  async function deliver(delivery: ClaimedDelivery, row: EventRow | undefined): Promise<ClaimedDelivery | undefined> {
    const fields = { deliveryId: delivery.id, eventId: delivery.event_id, handler: delivery.handler, attempt: delivery.attempts };
    let failure: { error: unknown } | undefined;
    try {
      const handler = handlerOf(delivery.handler);
      if (!handler) throw new Error(`No handler named ${delivery.handler} is subscribed`);
      if (!row) throw new Error(`Event ${delivery.event_id} is missing from ${OUTBOX_EVENTS_TABLE}`);
      const envelope: EventEnvelope = {
        id: row.id,
        type: row.type,
        payload: JSON.parse(row.payload) as Payload,
        occurredAt: toIso(row.occurred_at),
        attempt: delivery.attempts,
      };
      await withTimeout(
        Promise.resolve().then(() => handler.handle(envelope)),
        delivery.handler,
      );
    } catch (error) {
      failure = { error };
    }
    if (!failure) return delivery;
    try {
      const now = clock.now();
      // The claim is ours while claimed_by and attempts are unchanged; a
      // dispatcher that took over after our lease expired bumped attempts.
      const owned = db(OUTBOX_DELIVERIES_TABLE).where({ id: delivery.id, claimed_by: instanceId, attempts: delivery.attempts });
      let updated: number;
      if (delivery.attempts >= maxAttempts) {
        updated = await owned.update({
          status: 'dead',
          claimed_by: null,
          claimed_until: null,
          last_error: describeError(failure.error),
        });
        logger.error('event delivery failed for the last time; it is now dead', { ...fields, error: failure.error });
      } else {
        const delay = Math.min(retryBaseMs * 2 ** (delivery.attempts - 1), retryMaxMs);
        const nextAttemptAt = new Date(now.getTime() + delay).toISOString();
        updated = await owned.update({
          next_attempt_at: nextAttemptAt,
          claimed_by: null,
          claimed_until: null,
          last_error: describeError(failure.error),
        });
        logger.warn('event handler failed; will retry', { ...fields, nextAttemptAt, error: failure.error });
      }
      if (updated === 0) {
        logger.warn('event delivery outlived its lease and was claimed again; its outcome was not recorded', fields);
      }
    } catch (error) {
      logger.error('could not record the outcome of an event delivery; it is retried once its lease expires', {
        ...fields,
        error,
      });
    }
    return undefined;
  }

  return {
    async run(claimed, rows) {
      const recorded: Array<Promise<void>> = [];
      await Promise.all(
        claimed.map(async (delivery) => {
          successes.started();
          let delivered: ClaimedDelivery | undefined;
          try {
            delivered = await deliver(delivery, rows.get(delivery.event_id));
          } finally {
            successes.ended();
          }
          if (delivered) recorded.push(successes.record(delivered));
        }),
      );
      await Promise.all(recorded);
      return claimed.length;
    },
  };
}
