import type { UnitOfWork } from '@idt/core';
import type { ChangeType } from './schemas.js';

/** A stored changelog entry. */
export interface ChangelogRecord {
  readonly id: string;
  readonly version: string;
  readonly title: string;
  readonly content: string;
  /** ISO 8601 UTC. */
  readonly releasedAt: string;
  readonly isPublished: boolean;
  readonly items: ReadonlyArray<{ readonly description: string; readonly type: ChangeType }>;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC. */
  readonly updatedAt: string;
}

/**
 * The changelog primitives the changelog service runs in one transaction
 * (see {@link ChangelogStore.transaction}). None of them publishes events:
 * the service does, through the transaction's effects.
 */
export interface ChangelogWrites {
  /**
   * Sets `isPublished` with one conditional statement (`UPDATE ... WHERE
   * is_published = !isPublished`): of concurrent calls with one value,
   * exactly one changes the entry. Publishing records `at` as the time it
   * was published.
   *
   * @returns the entry after the call and whether this call changed it, or
   *   `undefined` when it is missing.
   */
  setPublished(
    id: string,
    isPublished: boolean,
    at: string,
  ): Promise<{ readonly entry: ChangelogRecord; readonly changed: boolean } | undefined>;
}

/**
 * Persistence of the (global) changelog: reads and single-statement writes
 * outside a transaction, and the {@link ChangelogWrites} primitives inside
 * one the changelog service opens (which also writes
 * `ChangelogPublishedEvent` to the outbox, in that transaction). Versions
 * are unique.
 */
export interface ChangelogStore extends UnitOfWork<ChangelogWrites> {
  /** `version-exists` when the version is taken: of concurrent inserts of one version exactly one wins. */
  insert(entry: ChangelogRecord): Promise<'created' | 'version-exists'>;
  /** Replaces an entry's fields (not `isPublished`); `not-found`, or `version-exists` when the new version is taken. */
  update(entry: ChangelogRecord): Promise<'updated' | 'not-found' | 'version-exists'>;
  find(id: string): Promise<ChangelogRecord | undefined>;
  findByVersion(version: string, publishedOnly: boolean): Promise<ChangelogRecord | undefined>;
  /** Newest `releasedAt` first (then newest created, then id, descending), at most `limit`. */
  list(options: { publishedOnly: boolean; limit: number }): Promise<ChangelogRecord[]>;
}
