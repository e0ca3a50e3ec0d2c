import type { Knex } from 'knex';
import type { Dispatcher } from './dispatcher.js';
import type { ClaimedDelivery, EventRow } from './outbox-rows.js';

/** Deliveries one transaction wrote claimed by this bus, with their events: run once it commits. */
export interface PreclaimedBatch {
  readonly deliveries: ClaimedDelivery[];
  readonly rows: Map<string, EventRow>;
}

/** What happens to a bus's deliveries when the transaction that wrote them settles. */
export interface CommitHooks {
  /** Dispatches once the outermost transaction of `trx` settles (committed or not: a dispatch only sees committed rows). */
  dispatchAfterCommit(trx: Knex.Transaction): void;
  /**
   * The batch of pre-claimed deliveries of `trx`'s outermost transaction,
   * run once it commits (and dropped if it rolls back: the rows are gone);
   * `undefined` when knex gives no commit to wait for.
   */
  claimedAfterCommit(trx: Knex.Transaction): PreclaimedBatch | undefined;
}

/** The outermost transaction of `trx`, and the promise that settles when it commits or rolls back (when knex has one). */
function outermostOf(trx: Knex.Transaction): { outermost: Knex.Transaction; settled: Promise<unknown> | undefined } {
  let outermost = trx;
  while (outermost.parentTransaction) outermost = outermost.parentTransaction;
  const settled = (outermost as { executionPromise?: Promise<unknown> }).executionPromise;
  return { outermost, settled: settled && typeof settled.then === 'function' ? settled : undefined };
}

/** Creates the commit hooks of one bus, which hand settled transactions' deliveries to its dispatcher. */
export function createCommitHooks(dispatcher: Pick<Dispatcher, 'dispatchAfterCommit' | 'runPreclaimed'>): CommitHooks {
  const hooked = new WeakSet<object>();
  /** Deliveries written already claimed by this dispatcher, per outermost transaction, run once it commits. */
  const preclaimed = new WeakMap<object, PreclaimedBatch>();
  return {
    dispatchAfterCommit(trx) {
      const { outermost, settled } = outermostOf(trx);
      if (hooked.has(outermost)) return;
      hooked.add(outermost);
      if (!settled) return; // the poller picks the events up
      const kick = () => dispatcher.dispatchAfterCommit();
      settled.then(kick, kick);
    },
    claimedAfterCommit(trx) {
      const { outermost, settled } = outermostOf(trx);
      const known = preclaimed.get(outermost);
      if (known) return known;
      if (!settled) return undefined;
      const batch: PreclaimedBatch = { deliveries: [], rows: new Map() };
      preclaimed.set(outermost, batch);
      settled.then(
        () => dispatcher.runPreclaimed(batch.deliveries, batch.rows),
        () => undefined,
      );
      return batch;
    },
  };
}
