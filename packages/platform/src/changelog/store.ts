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

/** Persistence of the (global) changelog. Versions are unique. */
export interface ChangelogStore {
  /** `version-exists` when the version is taken: of concurrent inserts of one version exactly one wins. */
  insert(entry: ChangelogRecord): Promise<'created' | 'version-exists'>;
  /** Replaces an entry's fields (not `isPublished`); `not-found`, or `version-exists` when the new version is taken. */
  update(entry: ChangelogRecord): Promise<'updated' | 'not-found' | 'version-exists'>;
  find(id: string): Promise<ChangelogRecord | undefined>;
  findByVersion(version: string, publishedOnly: boolean): Promise<ChangelogRecord | undefined>;
  /** Newest `releasedAt` first. */
  list(options: { publishedOnly: boolean; limit: number }): Promise<ChangelogRecord[]>;
  /**
   * Sets `isPublished`; publishing an unpublished entry also writes
   * `ChangelogPublishedEvent` in the same transaction. `undefined` when missing.
   */
  setPublished(id: string, isPublished: boolean, at: string, by: string): Promise<ChangelogRecord | undefined>;
}
