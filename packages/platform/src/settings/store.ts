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

/**
 * Persistence of setting values. Writes also write the `SettingChangedEvent`
 * to the outbox and evict the caches of every instance, in one transaction.
 */
export interface SettingsStore {
  /** The values of one scope: `system` (organization and user ignored), an organization's, or one user's in an organization. */
  list(scope: SettingScope, organizationId: string | null, userId: string | null): Promise<SettingValueRecord[]>;
  /**
   * Inserts or replaces a value. With `customLimit`, refuses (`limit-reached`)
   * a new `custom.*` key when the organization already has that many.
   */
  upsert(record: SettingValueRecord, options?: { customLimit?: number }): Promise<'saved' | 'limit-reached'>;
  /** Removes a value; `false` when there was none. */
  remove(target: SettingTarget, at: string, by: string): Promise<boolean>;
}
