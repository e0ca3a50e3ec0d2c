import type { UnitOfWork } from '@idt/core';

/** An API key as stored (never with the key itself). */
export interface StoredApiKey {
  readonly id: string;
  readonly userId: string;
  readonly organizationId: string;
  readonly name: string;
  /** The first 16 characters of the key, for display. */
  readonly prefix: string;
  readonly scopes: readonly string[];
  /** ISO 8601 UTC, or `null` for a key that does not expire. */
  readonly expiresAt: string | null;
  readonly lastUsedAt: string | null;
  readonly revokedAt: string | null;
  readonly createdAt: string;
}

/** An API key to insert. */
export interface NewApiKey {
  readonly id: string;
  readonly userId: string;
  readonly organizationId: string;
  readonly name: string;
  readonly prefix: string;
  /** SHA-256 (hex) of the key; the key itself is never stored. */
  readonly keyHash: string;
  readonly scopes: readonly string[];
  readonly expiresAt: string | null;
  readonly createdAt: string;
}

/**
 * The API key primitives a service runs in one transaction (see
 * {@link ApiKeyStore.transaction}); none evicts caches.
 */
export interface ApiKeyWrites {
  /**
   * Takes the user's row lock (`UPDATE identity_users SET updated_at =
   * updated_at WHERE id = ?`), which serializes concurrent key creations of
   * one user until the transaction ends.
   *
   * @returns whether the user exists.
   */
  lockUser(userId: string): Promise<boolean>;
  /** How many keys of the user are live: not revoked, and not expired at `now`. */
  countLive(userId: string, now: string): Promise<number>;
  /** Inserts a key. */
  insert(key: NewApiKey): Promise<void>;
  /**
   * Revokes a key of the user in the organization (`UPDATE ... WHERE id = ?
   * AND user_id = ? AND organization_id = ? AND revoked_at IS NULL`: exactly
   * one concurrent caller wins).
   *
   * @returns `false` (nothing written) when no such unrevoked key exists.
   */
  revoke(userId: string, organizationId: string, keyId: string, now: string): Promise<boolean>;
}

/**
 * Persistence of API keys: reads and usage marks outside a transaction, the
 * {@link ApiKeyWrites} primitives inside one the service opens.
 */
export interface ApiKeyStore extends UnitOfWork<ApiKeyWrites> {
  /** The key whose SHA-256 is `keyHash`, in any state. */
  findByHash(keyHash: string): Promise<StoredApiKey | undefined>;
  /** The user's unrevoked keys in one organization, newest first. */
  list(userId: string, organizationId: string): Promise<StoredApiKey[]>;
  /** Records use: `UPDATE ... SET last_used_at = now WHERE id = ? AND (last_used_at IS NULL OR last_used_at < staleBefore)`. */
  markUsed(keyId: string, now: string, staleBefore: string): Promise<void>;
  /** Whether the user is an active owner or admin of `organizationId` and it is the platform organization. */
  isPlatformAdministrator(userId: string, organizationId: string): Promise<boolean>;
}
