import type { Knex } from 'knex';
import { type Clock, systemClock } from '../clock.js';
import type { EventOutbox } from '../events/types.js';
import { newId } from '../ids.js';
import { type Logger, silentLogger } from '../logger.js';
import { type AuditActionDefinition, type AuditActionRegistry, createAuditActionRegistry } from './actions.js';
import { type AuditEntry, AuditEntryError, type AuditRecord, normalizeAuditEntry } from './entry.js';
import { AuditEventRecorded } from './events.js';
import type { AppendableAuditEntry, AuditQuery, AuditStore } from './store.js';
import { type AuditChainVerification, type VerifyAuditChainOptions, verifyAuditStoreChain } from './verify.js';

/** The default retention of audit records, in days. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365;

/** Records removed per chain per statement when pruning. */
const PRUNE_BATCH = 5000;

/**
 * The audit trail: every module records through it, in the transaction of
 * the change it records. `ctx.audit` in a module's set-up.
 */
export interface AuditTrail {
  /**
   * Records entries in the caller's knex transaction (never one of its own):
   * if that transaction rolls back, nothing was recorded. Each record gets
   * the clock's time, the next sequence of its organization's chain and its
   * hashes; with an outbox, an `AuditEventRecordedEvent` is published in the
   * same transaction (webhook `audit.event`).
   *
   * @example
   * await db.transaction(async (trx) => {
   *   await trx('things').update({ name }).where({ id });
   *   await ctx.audit.record({ action: 'things.thing.renamed', organizationId, actor, target: { type: 'thing', id, display: name } }, trx);
   * });
   * @throws AuditEntryError for a malformed entry, metadata that looks secret, or (outside Production)
   *   an action no module registered; in Production an unregistered action is recorded with a warning.
   * @throws TypeError when `trx` is not an open transaction.
   */
  record(entries: AuditEntry | readonly AuditEntry[], trx: Knex.Transaction): Promise<AuditRecord[]>;
  /** Adds a module's actions to the one registry. @throws AuditEntryError on a conflicting or malformed name. */
  register(actions: readonly AuditActionDefinition[]): void;
  /** Every registered action, by name. */
  actions(): AuditActionDefinition[];
  /** Records of one chain, newest first, below `beforeSequence` when given. */
  list(query: AuditQuery, page: { readonly beforeSequence?: number; readonly limit: number }): Promise<AuditRecord[]>;
  /** Records of one chain, oldest first, in keyset batches: for exports that never hold the whole result. */
  batches(query: AuditQuery, batchSize?: number): AsyncGenerator<AuditRecord[]>;
  /** Walks one chain and names its first broken link (see {@link verifyAuditStoreChain}). */
  verify(organizationId: string | null, options?: VerifyAuditChainOptions): Promise<AuditChainVerification>;
  /** Removes records older than the retention from every chain, moving each chain's checkpoint; returns how many. */
  prune(): Promise<number>;
  /** The retention in days. */
  readonly retentionDays: number;
}

/** Options of {@link createAuditTrail}. */
export interface AuditTrailOptions {
  readonly store: AuditStore;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Refuse actions no module registered (Development and Testing); default true. */
  readonly strict?: boolean;
  /** Publishes `AuditEventRecordedEvent` in the recording transaction; none is published without it. */
  readonly outbox?: EventOutbox;
  readonly registry?: AuditActionRegistry;
  /** Records older than this many days are pruned; {@link DEFAULT_AUDIT_RETENTION_DAYS} by default. */
  readonly retentionDays?: number;
}

/**
 * Creates the audit trail service over a store.
 *
 * @example
 * const audit = createAuditTrail({ store: createKnexAuditStore(db), clock, outbox: events });
 * audit.register(Object.values(MyAuditActions));
 */
export function createAuditTrail(options: AuditTrailOptions): AuditTrail {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const strict = options.strict ?? true;
  const registry = options.registry ?? createAuditActionRegistry();
  const retentionDays = options.retentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS;
  const warned = new Set<string>();

  return {
    retentionDays,
    async record(entries, trx) {
      if (trx?.isTransaction !== true) {
        throw new TypeError('audit.record needs the knex transaction of the change it records');
      }
      if (trx.isCompleted()) throw new TypeError('audit.record was given a transaction that already completed');
      const list: readonly AuditEntry[] = Array.isArray(entries) ? entries : [entries as AuditEntry];
      if (list.length === 0) return [];
      const occurredAt = clock.now().toISOString();
      const appendable: AppendableAuditEntry[] = list.map((entry) => {
        const normalized = normalizeAuditEntry(entry);
        if (!registry.get(normalized.action)) {
          if (strict)
            throw new AuditEntryError(`Audit action ${normalized.action} is not registered: register it with ctx.audit.register`);
          if (!warned.has(normalized.action)) {
            warned.add(normalized.action);
            logger.warn('audit action not registered', { action: normalized.action });
          }
        }
        return { ...normalized, id: newId(), occurredAt };
      });
      const records = await store.append(trx, appendable);
      if (options.outbox) {
        await options.outbox.write(
          trx,
          records.map(({ hash: _hash, prevHash: _prevHash, ...record }) => ({ event: AuditEventRecorded, payload: record })),
        );
      }
      return records;
    },
    register: (actions) => registry.register(actions),
    actions: () => registry.list(),
    list: (query, page) => store.list(query, page),
    async *batches(query, batchSize = 1000) {
      let after = 0;
      for (;;) {
        const batch = await store.listAscending(query, { afterSequence: after, limit: batchSize });
        const size = batch.length;
        if (size > 0) after = (batch[size - 1] as AuditRecord).sequence;
        // Handed over emptied from here: this frame, suspended at `yield`, keeps none of the batch alive.
        if (size > 0) yield batch.splice(0);
        if (size < batchSize) return;
      }
    },
    verify: (organizationId, verifyOptions) => verifyAuditStoreChain(store, organizationId, verifyOptions),
    async prune() {
      const before = new Date(clock.now().getTime() - retentionDays * 86_400_000).toISOString();
      let removed = 0;
      for (const organizationId of await store.chains()) {
        for (;;) {
          const count = await store.prune(organizationId, before, PRUNE_BATCH);
          removed += count;
          if (count === 0) break;
        }
      }
      if (removed > 0) logger.info('audit records pruned', { removed, before });
      return removed;
    },
  };
}
