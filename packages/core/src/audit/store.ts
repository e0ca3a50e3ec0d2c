import type { Knex } from 'knex';
import type { AuditOutcome, AuditRecord, NormalizedAuditEntry } from './entry.js';

/** The filters of a read of one chain. */
export interface AuditQuery {
  /** The chain: an organization, or `null` for the platform trail. */
  readonly organizationId: string | null;
  readonly action?: string;
  readonly actorId?: string;
  readonly targetId?: string;
  readonly outcome?: AuditOutcome;
  /** ISO 8601; records at or after it. */
  readonly from?: string;
  /** ISO 8601; records before it. */
  readonly to?: string;
}

/** A chain's head and pruning checkpoint. */
export interface AuditChainState {
  readonly organizationId: string | null;
  /** The sequence of the last record appended (0 before the first). */
  readonly sequence: number;
  /** The hash of that record. */
  readonly hash: string;
  /** The sequence of the last record pruning removed (0 when none was). */
  readonly prunedSequence: number;
  /** Its hash: the `prevHash` the oldest kept record must carry. */
  readonly prunedHash: string;
}

/** An entry ready to append: validated, with its id and time. */
export type AppendableAuditEntry = NormalizedAuditEntry & { readonly id: string; readonly occurredAt: string };

/**
 * Persistence of the audit trail. No policy: validation, the action
 * registry and retention live in the trail service.
 */
export interface AuditStore {
  /**
   * Appends entries to their chains in the caller's transaction, never in
   * one of its own: a rolled-back change leaves no record. Each chain's head
   * is locked (`FOR UPDATE` on Postgres) until that transaction ends, so
   * concurrent writers of one chain append one after the other, without gaps
   * or forks; chains are locked in a fixed order.
   */
  append(trx: Knex.Transaction, entries: readonly AppendableAuditEntry[]): Promise<AuditRecord[]>;
  /** Records of a chain matching `query`, newest first, with a sequence below `beforeSequence` when given. */
  list(query: AuditQuery, page: { readonly beforeSequence?: number; readonly limit: number }): Promise<AuditRecord[]>;
  /** Records of a chain matching `query`, oldest first, with a sequence above `afterSequence`. */
  listAscending(query: AuditQuery, page: { readonly afterSequence: number; readonly limit: number }): Promise<AuditRecord[]>;
  /** A chain's state, or `undefined` when nothing was ever recorded in it. */
  chain(organizationId: string | null): Promise<AuditChainState | undefined>;
  /** Every chain that has a state (`null` is the platform chain). */
  chains(): Promise<Array<string | null>>;
  /**
   * Removes a chain's oldest records, those up to the newest record that
   * occurred before `before`, at most `limit` of them, and moves the chain's
   * checkpoint to the last one removed, in one transaction.
   *
   * @returns how many were removed.
   */
  prune(organizationId: string | null, before: string, limit: number): Promise<number>;
}
