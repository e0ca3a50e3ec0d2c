import type { CursorPageRequest, CursorPageSlice, UnitOfWork } from '@idt/core';
import type { UserRecord } from '../accounts/records.js';

/** A user to register. */
export interface NewUser {
  readonly id: string;
  /** Normalized (trimmed, lowercase); also the username. */
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly passwordHash: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

/** Changes to a user's own profile. */
export interface ProfilePatch {
  readonly firstName?: string;
  readonly lastName?: string;
}

/**
 * The user primitives a service runs in one transaction (see
 * {@link UsersStore.transaction}); none publishes events or evicts caches.
 */
export interface UsersWrites {
  /**
   * Inserts an active user whose username is their e-mail address.
   *
   * @returns `false` when the address is already an e-mail or username (a
   *   unique violation, which on PostgreSQL aborts the transaction: throw to roll it back).
   */
  insert(user: NewUser): Promise<boolean>;
  /** Updates the names given in `patch` (at least one). `false` when the user does not exist. */
  updateProfile(userId: string, patch: ProfilePatch, at: string): Promise<boolean>;
  /**
   * Moves the user from `active` to `deactivated` with a single conditional
   * update (exactly one concurrent caller wins) and writes the user's
   * revocation watermark at `at` (every token issued until then stops validating).
   *
   * @returns `false` (nothing written) when the user was not active.
   */
  deactivate(userId: string, at: string): Promise<boolean>;
  /**
   * Moves the user from `deactivated` to `active` with a single conditional
   * update. Tokens issued before the deactivation stay revoked.
   *
   * @returns `false` (nothing written) when the user was not deactivated.
   */
  reactivate(userId: string, at: string): Promise<boolean>;
}

/**
 * Persistence of user accounts: reads outside a transaction, the
 * {@link UsersWrites} primitives inside one a service opens.
 */
export interface UsersStore extends UnitOfWork<UsersWrites> {
  /** A user by id. */
  find(userId: string): Promise<UserRecord | undefined>;
  /** Users by id, in that order, `undefined` for an unknown one (cached ones read from memory). */
  findMany(userIds: readonly string[]): Promise<Array<UserRecord | undefined>>;
  /**
   * Users holding a membership (any state) in the organization, oldest membership first: the page
   * after `page.cursor` when there is one, else page `page.page`; `next` is the sort key of the last
   * row when more follow.
   */
  listInOrganization(organizationId: string, page: CursorPageRequest): Promise<CursorPageSlice<UserRecord>>;
  /** A user, only when they hold a membership (any state) in the organization. */
  findInOrganization(organizationId: string, userId: string): Promise<UserRecord | undefined>;
}
