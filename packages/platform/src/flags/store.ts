import type { FlagDefinition, FlagOverride } from './evaluate.js';

/** A stored flag: its definition and timestamps. */
export interface FlagRecord extends FlagDefinition {
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
}

/**
 * Persistence of feature flags and their overrides. Every write also writes
 * `FeatureFlagChangedEvent` to the outbox and evicts the flag caches of
 * every instance, in one transaction.
 */
export interface FlagsStore {
  /** Every flag, by key. */
  list(): Promise<FlagRecord[]>;
  find(key: string): Promise<FlagRecord | undefined>;
  /** `exists` when the key is taken: of concurrent creations of one key exactly one wins. */
  insert(flag: FlagRecord, by: string): Promise<'created' | 'exists'>;
  /** Replaces a flag's definition; `false` when there is none. */
  update(flag: FlagRecord, by: string): Promise<boolean>;
  /** Removes a flag and its overrides; `false` when there was none. */
  remove(key: string, at: string, by: string): Promise<boolean>;
  /** Every override of an organization (its own and its users'). */
  overrides(organizationId: string): Promise<FlagOverride[]>;
  /** Inserts or replaces an override; `false` when the flag does not exist. */
  putOverride(override: FlagOverride, at: string, by: string): Promise<boolean>;
  /** Removes an override; `false` when there was none. */
  removeOverride(flagKey: string, organizationId: string, userId: string | null, at: string, by: string): Promise<boolean>;
}
