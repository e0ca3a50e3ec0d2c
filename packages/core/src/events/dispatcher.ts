import type { Logger } from '../logger.js';
import type { DeliveryRunner } from './delivery-runner.js';
import type { OutboxClaimer } from './outbox-claimer.js';
import type { ClaimedDelivery, EventRow } from './outbox-rows.js';

/** Options of {@link createDispatcher}. */
export interface DispatcherOptions {
  readonly claimer: OutboxClaimer;
  readonly runner: DeliveryRunner;
  /** Deliveries claimed at once: a smaller batch means nothing more is due. */
  readonly batchSize: number;
  /** Milliseconds between polls while started. */
  readonly pollIntervalMs: number;
  readonly logger: Logger;
}

/**
 * The dispatch loop of one bus: claims and runs due deliveries batch after
 * batch (one run at a time, later calls coalescing into one follow-up),
 * polls while started, and runs the deliveries the bus claimed at write
 * time once their transaction commits.
 */
export interface Dispatcher {
  /** Whether deliveries written now are claimed by this bus as they are written: started and not stopping. */
  isClaimingWrites(): boolean;
  /** Starts polling; idempotent, timers are unref'd. */
  start(): void;
  /** Stops polling and waits for the dispatch in progress and the pre-claimed deliveries running. */
  stop(): Promise<void>;
  /** See `EventBus.dispatchPending`. */
  dispatchPending(): Promise<number>;
  /** A transaction that wrote unclaimed deliveries settled: dispatches now when started. */
  dispatchAfterCommit(): void;
  /** Runs deliveries claimed at write time whose transaction committed, when started (else their lease runs out). */
  runPreclaimed(deliveries: ReadonlyArray<ClaimedDelivery>, rows: ReadonlyMap<string, EventRow>): void;
}

/** Creates the dispatcher of one bus. */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { claimer, runner, batchSize, pollIntervalMs, logger } = options;
  /** Pre-claimed deliveries running now; `stop()` waits for them. */
  const direct = new Set<Promise<number>>();
  let running = false;
  let halting = false;
  let timer: NodeJS.Timeout | undefined;
  let active: Promise<number> | undefined;
  let followUp: Promise<number> | undefined;

  async function drain(): Promise<number> {
    let processed = 0;
    for (;;) {
      const claimed = await claimer.claim();
      if (claimed.length === 0) break;
      await runner.run(claimed, await claimer.eventsOf(claimed));
      processed += claimed.length;
      if (claimed.length < batchSize || halting) break;
    }
    return processed;
  }

  /**
   * Waits for the deliveries this bus claimed at write time and is running
   * (those of transactions committed before the call), then claims and runs
   * what is due; resolves to how many deliveries both processed.
   */
  function dispatchPending(): Promise<number> {
    if (direct.size === 0) return dispatchDue();
    return Promise.all([...direct]).then(async (counts) => counts.reduce((sum, count) => sum + count, 0) + (await dispatchDue()));
  }

  function dispatchDue(): Promise<number> {
    if (!active) {
      const run = drain().finally(() => {
        if (active === run) active = undefined;
      });
      active = run;
      return run;
    }
    followUp ??= active.then(
      () => {
        followUp = undefined;
        return dispatchDue();
      },
      () => {
        followUp = undefined;
        return dispatchDue();
      },
    );
    return followUp;
  }

  function schedule(delay: number): void {
    if (!running) return;
    timer = setTimeout(poll, delay);
    timer.unref();
  }

  async function poll(): Promise<void> {
    timer = undefined;
    if (!running) return;
    try {
      await dispatchDue();
    } catch (error) {
      logger.error('event dispatch failed; retrying at the next poll', { error });
    }
    schedule(pollIntervalMs);
  }

  return {
    isClaimingWrites: () => running && !halting,
    dispatchPending,
    dispatchAfterCommit() {
      if (!running) return;
      dispatchDue().catch((error: unknown) => logger.error('event dispatch after commit failed', { error }));
    },
    runPreclaimed(deliveries, rows) {
      // A dispatcher stopped meanwhile leaves them to whichever takes them over when the lease runs out.
      if (!running) return;
      const run = runner.run(deliveries, rows);
      direct.add(run);
      void run.finally(() => direct.delete(run));
    },
    start() {
      if (running) return;
      running = true;
      schedule(0);
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      halting = true;
      try {
        while (active || followUp || direct.size > 0) {
          if (active || followUp) await (followUp ?? active)?.catch(() => undefined);
          else await Promise.all(direct);
        }
      } finally {
        halting = false;
      }
    },
  };
}
