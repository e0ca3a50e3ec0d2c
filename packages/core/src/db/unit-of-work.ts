import type { Knex } from 'knex';
import type { AuditEntry } from '../audit/entry.js';
import type { AuditTrail } from '../audit/trail.js';
import type { CacheEviction, CacheInvalidator } from '../cache/invalidator.js';
import type { EventOutbox, PendingEvent } from '../events/types.js';

/**
 * What a service writes beside a store's primitives, in the same
 * transaction: the events that record the change and the cache evictions it
 * causes. Stores persist; the service that decided the change publishes.
 */
export interface TransactionEffects {
  /**
   * Writes events to the durable outbox in this transaction: handlers run
   * once it commits, and never when it rolls back. An empty list writes nothing.
   */
  publish(events: ReadonlyArray<PendingEvent>): Promise<void>;
  /**
   * Evicts cached entries in every instance once this transaction commits,
   * never before, in one statement. An empty list writes nothing.
   */
  evict(evictions: ReadonlyArray<CacheEviction>): Promise<void>;
  /**
   * Records audit entries in this transaction: they exist only if it
   * commits. A unit of work without an audit trail records nothing (a store
   * wired by hand, outside `createIdt`). An empty list writes nothing.
   * Optional so that hand-written units of work (test doubles) need not
   * implement it; {@link knexEffects} always does: `await tx.audit?.([...])`.
   */
  audit?(entries: ReadonlyArray<AuditEntry>): Promise<void>;
}

/**
 * The unit of work of a store: its named atomic primitives (`Primitives`),
 * bound to one transaction, with the {@link TransactionEffects} of that
 * transaction. Services open it, decide, and publish; stores only persist.
 *
 * @example
 * const ended = await store.transaction(async (tx) => {
 *   if (!(await tx.revoke(userId, sessionId, 'logout', now))) return false;
 *   await tx.evict([{ namespace: 'sessions', key: sessionId }]);
 *   await tx.publish([{ event: UserSessionRevokedEvent, payload }]);
 *   return true;
 * });
 */
export interface UnitOfWork<Primitives> {
  /**
   * Runs `work` in one transaction: it commits when `work` resolves and
   * rolls back (primitives, events and evictions alike) when it throws.
   */
  transaction<T>(work: (tx: Primitives & TransactionEffects) => Promise<T>): Promise<T>;
}

/** What a knex unit of work writes its effects through. */
export interface KnexEffectsOptions {
  readonly db: Knex;
  /** Writes the events services publish, in the store's transaction. */
  readonly outbox: EventOutbox;
  /** Evicts cached entries after the store's transaction commits; a store without a cache leaves it out. */
  readonly invalidator?: Pick<CacheInvalidator, 'invalidateMany'>;
  /** Records the audit entries services write (`ctx.audit`); without it, `audit` records nothing. */
  readonly audit?: Pick<AuditTrail, 'record'>;
}

/**
 * The effects of one knex transaction: the outbox, the cache invalidator and
 * the audit trail, all writing in `trx`.
 */
export function knexEffects(options: KnexEffectsOptions, trx: Knex.Transaction): TransactionEffects {
  const { outbox, invalidator, audit } = options;
  return {
    publish: (events) => (events.length === 0 ? Promise.resolve() : outbox.write(trx, events)),
    audit: (entries) => (entries.length === 0 || !audit ? Promise.resolve() : audit.record(entries, trx).then(() => undefined)),
    evict: (evictions) => {
      if (evictions.length === 0) return Promise.resolve();
      if (!invalidator) return Promise.reject(new Error('This unit of work has no cache invalidator to evict through'));
      return invalidator.invalidateMany(evictions, trx);
    },
  };
}

/**
 * A store's {@link UnitOfWork} on knex: `bind` gives the store's primitives
 * over a transaction, to which the transaction's effects are added.
 *
 * @example
 * const { transaction } = knexUnitOfWork({ db, outbox }, (trx) => ({
 *   insert: (row: Row) => trx('things').insert(row).then(() => undefined),
 * }));
 */
export function knexUnitOfWork<Primitives extends object>(
  options: KnexEffectsOptions,
  bind: (trx: Knex.Transaction) => Primitives,
): UnitOfWork<Primitives> {
  return {
    transaction: (work) => options.db.transaction((trx) => work({ ...bind(trx), ...knexEffects(options, trx) })),
  };
}
