import type { UnitOfWork } from '@idt/core';
import type { JsonValue } from './definitions.js';

/** Where a stored setting value applies. */
export type SettingScope = 'system' | 'organization' | 'user';

/** Which stored value: system rows have no organization, only user rows have a user. */
export interface SettingTarget {
  readonly scope: SettingScope;
  /** `null` for `system`. */
  readonly organizationId: string | null;
  /** Only for `user`. */
  readonly userId: string | null;
  readonly key: string;
}

/** A stored setting value. */
export interface SettingValueRecord extends SettingTarget {
  readonly value: JsonValue;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
  /** The user or client that wrote it. */
  readonly updatedBy: string;
}

/** Whose values: a scope and its owner (`system`: none; `organization`: an organization; `user`: a user in an organization). */
export type SettingOwner = Omit<SettingTarget, 'key'>;

/**
 * The setting primitives the settings service runs in one transaction (see
 * {@link SettingsStore.transaction}). None of them publishes events or evicts
 * caches: the service does, through the transaction's effects.
 */
export interface SettingsWrites {
  /** Whether the target has a stored value. */
  has(target: SettingTarget): Promise<boolean>;
  /** How many values the owner has whose key starts with `prefix` (a literal: no `%` or `_` in it). */
  count(owner: SettingOwner, prefix: string): Promise<number>;
  /** Inserts or replaces a value (one per scope, owner and key). */
  put(record: SettingValueRecord): Promise<void>;
  /** Removes a value; `false` when there was none (another owner's included). */
  remove(target: SettingTarget): Promise<boolean>;
}

/**
 * Persistence of setting values: reads outside a transaction, and the
 * {@link SettingsWrites} primitives inside one the settings service opens
 * (which also writes `SettingChangedEvent` to the outbox and evicts the
 * caches of every instance, in that transaction).
 */
export interface SettingsStore extends UnitOfWork<SettingsWrites> {
  /** The values of one scope, by key: `system` (organization and user ignored), an organization's, or one user's in an organization. */
  list(scope: SettingScope, organizationId: string | null, userId: string | null): Promise<SettingValueRecord[]>;
}
