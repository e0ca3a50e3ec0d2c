import type { UnitOfWork } from '@idt/core';
import type { FlagDefinition, FlagOverride } from './evaluate.js';

/** A stored flag: its definition and timestamps. */
export interface FlagRecord extends FlagDefinition {
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
}

/**
 * The flag primitives the flags service runs in one transaction (see
 * {@link FlagsStore.transaction}). None of them publishes events or evicts
 * caches: the service does, through the transaction's effects.
 */
export interface FlagsWrites {
  /** `exists` when the key is taken (nothing written): of concurrent creations of one key exactly one wins. */
  insert(flag: FlagRecord): Promise<'created' | 'exists'>;
  /** Replaces a flag's definition; `false` when there is none. */
  update(flag: FlagRecord): Promise<boolean>;
  /** Removes a flag and its overrides; `false` when there was none. */
  remove(key: string): Promise<boolean>;
  /**
   * Inserts or replaces an override (one per flag, organization and user),
   * recording who wrote it when; `false` (nothing written) when the flag
   * does not exist. The flag's row is taken first, so a concurrent removal
   * of the flag cannot leave the override orphaned.
   */
  putOverride(override: FlagOverride, at: string, by: string): Promise<boolean>;
  /** Removes an override of the organization; `false` when it has none (another organization's included). */
  removeOverride(flagKey: string, organizationId: string, userId: string | null): Promise<boolean>;
}

/**
 * Persistence of feature flags and their overrides: reads outside a
 * transaction, and the {@link FlagsWrites} primitives inside one the flags
 * service opens (which also writes `FeatureFlagChangedEvent` to the outbox
 * and evicts the flag caches of every instance, in that transaction).
 */
export interface FlagsStore extends UnitOfWork<FlagsWrites> {
  /** Every flag, by key. */
  list(): Promise<FlagRecord[]>;
  find(key: string): Promise<FlagRecord | undefined>;
  /** Every override of an organization (its own and its users'), by flag key, then user (the organization's own first). */
  overrides(organizationId: string): Promise<FlagOverride[]>;
}
