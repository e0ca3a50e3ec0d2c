import { GENESIS_HASH, hashAuditRecord } from './chain.js';
import type { AuditRecord } from './entry.js';
import type { AuditStore } from './store.js';

/**
 * Why a chain is broken:
 * - `edited`: a record's content no longer matches its hash (a column changed by hand);
 * - `relinked`: a record's `prevHash` is not the hash of the record before it (reordered, or a hash rewritten);
 * - `missing`: a sequence number is absent (a record deleted), or the chain ends before its head says it does.
 */
export type AuditBreakReason = 'edited' | 'relinked' | 'missing';

/** The first broken link of a chain. */
export interface AuditChainBreak {
  /** The sequence number where the chain breaks. */
  readonly sequence: number;
  /** The record at that place, or `null` when it is missing. */
  readonly id: string | null;
  readonly reason: AuditBreakReason;
  /** One sentence for people. */
  readonly message: string;
}

/** What {@link verifyAuditStoreChain} found. */
export interface AuditChainVerification {
  readonly organizationId: string | null;
  /** Whether every kept record links to the one before and matches its hash, up to the chain's head. */
  readonly valid: boolean;
  /** How many records were checked. */
  readonly checked: number;
  /** The sequence the walk started after: the pruning checkpoint (0 when nothing was pruned). */
  readonly anchorSequence: number;
  /** The chain's head: the last sequence recorded (0 for an empty chain). */
  readonly headSequence: number;
  /** The first broken link, or `null`. */
  readonly broken: AuditChainBreak | null;
}

/**
 * Records read per query. Small on purpose: a batch must be garbage long
 * before the young generation fills again (hashing allocates a few KiB per
 * record). When a scavenge finds most records of a batch still alive, V8
 * learns to allocate such records in the old generation at once
 * (allocation-site pretenuring), and every later read of the trail (exports
 * too) then grows the heap with garbage until a full collection.
 */
const VERIFY_BATCH = 250;

/** Options of {@link verifyAuditStoreChain}. */
export interface VerifyAuditChainOptions {
  /** Records read per query; 250 by default. */
  readonly batchSize?: number;
  /** Called after each batch with the number of records checked so far. */
  readonly onProgress?: (checked: number) => void;
}

/**
 * Walks a chain from its pruning checkpoint to its head and names the
 * first broken link: a record whose content no longer matches its hash
 * (edited), whose `prevHash` is not its predecessor's hash (reordered or
 * relinked), or a sequence number that is missing (deleted, at the start,
 * in the middle or at the end). Reads in keyset batches: memory stays flat
 * however long the chain.
 *
 * The checkpoint (the last pruned record's sequence and hash, kept in the
 * chain's head row) is trusted as the anchor; so is the head. Someone who
 * can write the database can rewrite a whole chain and its head; export
 * the trail (or the head's hash) elsewhere to detect that.
 *
 * On knex, `verifyAuditChain(db, organizationId)` of `@idt/core/knex` does this.
 *
 * @example
 * const result = await verifyAuditStoreChain(store, organizationId);
 * if (!result.valid) console.error(result.broken?.message);
 */
export async function verifyAuditStoreChain(
  store: AuditStore,
  organizationId: string | null,
  options: VerifyAuditChainOptions = {},
): Promise<AuditChainVerification> {
  const batchSize = options.batchSize ?? VERIFY_BATCH;
  const state = await store.chain(organizationId);
  const anchorSequence = state?.prunedSequence ?? 0;
  const headSequence = state?.sequence ?? 0;
  let expectedSequence = anchorSequence + 1;
  let expectedPrev = state?.prunedHash ?? GENESIS_HASH;
  let checked = 0;
  const result = (broken: AuditChainBreak | null): AuditChainVerification => ({
    organizationId,
    valid: broken === null,
    checked,
    anchorSequence,
    headSequence,
    broken,
  });
  const missing = (sequence: number, what: string): AuditChainBreak => ({
    sequence,
    id: null,
    reason: 'missing',
    message: `Record ${sequence} is missing: ${what}.`,
  });

  let after = anchorSequence;
  let batch: AuditRecord[] = [];
  let pastHead = false;
  for (;;) {
    // Nothing of the last batch is kept while the next is read (see VERIFY_BATCH).
    batch = [];
    batch = await store.listAscending({ organizationId }, { afterSequence: after, limit: batchSize });
    const size = batch.length;
    for (let index = 0; index < size; index++) {
      const record = batch[index] as AuditRecord;
      // The walk reads below the head only: records appended while it runs are left for the next check.
      if (record.sequence > headSequence) {
        pastHead = true;
        break;
      }
      if (record.sequence !== expectedSequence) {
        return result(missing(expectedSequence, `the chain goes from ${expectedSequence - 1} to ${record.sequence}`));
      }
      if (record.prevHash !== expectedPrev) {
        return result({
          sequence: record.sequence,
          id: record.id,
          reason: 'relinked',
          message: `Record ${record.sequence} (${record.id}) does not follow the record before it: its previous hash differs (reordered or rewritten).`,
        });
      }
      if (hashAuditRecord(record, record.prevHash) !== record.hash) {
        return result({
          sequence: record.sequence,
          id: record.id,
          reason: 'edited',
          message: `Record ${record.sequence} (${record.id}) was changed after it was written: its content does not match its hash.`,
        });
      }
      checked += 1;
      expectedSequence += 1;
      expectedPrev = record.hash;
      after = record.sequence;
    }
    options.onProgress?.(checked);
    if (size < batchSize || pastHead) break;
  }
  if (expectedSequence <= headSequence) {
    return result(
      missing(expectedSequence, `the chain's head is at ${headSequence} but its records end at ${expectedSequence - 1}`),
    );
  }
  if (headSequence > anchorSequence && state && state.hash !== expectedPrev) {
    return result({
      sequence: headSequence,
      id: null,
      reason: 'relinked',
      message: `The chain's head does not match its last record ${headSequence}.`,
    });
  }
  return result(null);
}
