import type { CursorPageRequest, CursorPageSlice } from '@idt/core';
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

/** Persistence of user accounts. */
export interface UsersStore {
  /**
   * In one transaction: inserts the user and publishes `UserRegisteredEvent`.
   *
   * @returns `email-taken` (and writes nothing) when the address is already an e-mail or username.
   */
  register(user: NewUser): Promise<'created' | 'email-taken'>;
  /** A user by id. */
  find(userId: string): Promise<UserRecord | undefined>;
  /** In one transaction: updates the names and evicts the cached user. `undefined` when the user does not exist. */
  updateProfile(userId: string, patch: ProfilePatch, at: string): Promise<UserRecord | undefined>;
  /**
   * Users holding a membership (any state) in the organization, oldest membership first: the page
   * after `page.cursor` when there is one, else page `page.page`; `next` is the sort key of the last
   * row when more follow.
   */
  listInOrganization(organizationId: string, page: CursorPageRequest): Promise<CursorPageSlice<UserRecord>>;
  /** A user, only when they hold a membership (any state) in the organization. */
  findInOrganization(organizationId: string, userId: string): Promise<UserRecord | undefined>;
  /**
   * In one transaction: moves the user from `active` to `deactivated` with a
   * single conditional update, writes the user's revocation watermark at `at`
   * (every token issued until then stops validating), evicts the cached user
   * and watermark, and publishes `UserDeactivatedEvent`.
   *
   * @returns `false` (and writes nothing) when the user was not active.
   */
  deactivate(userId: string, at: string, byUserId: string | null): Promise<boolean>;
  /**
   * In one transaction: moves the user from `deactivated` to `active`, evicts
   * the cached user and publishes `UserReactivatedEvent`. Tokens issued before
   * the deactivation stay revoked.
   *
   * @returns `false` (and writes nothing) when the user was not deactivated.
   */
  reactivate(userId: string, at: string, byUserId: string | null): Promise<boolean>;
}
