import type { UnitOfWork } from '@idt/core';

/** The account facts an e-mail change needs. */
export interface EmailChangeUser {
  readonly id: string;
  readonly email: string;
  readonly firstName: string;
  readonly status: 'active' | 'deactivated';
}

/** A pending (or consumed) e-mail change. */
export interface EmailChange {
  readonly id: string;
  readonly userId: string;
  /** Lowercase. */
  readonly newEmail: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly consumedAt: string | null;
}

/** An e-mail change to record. */
export interface NewEmailChange {
  readonly id: string;
  readonly userId: string;
  readonly newEmail: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

/** What confirming a change did. */
export type EmailChangeConfirmation =
  | { readonly outcome: 'changed'; readonly oldEmail: string }
  | { readonly outcome: 'expired' }
  | { readonly outcome: 'invalid' };

/** What consuming a change did. */
export type EmailChangeConsumption = 'consumed' | 'expired' | 'invalid';

/** What setting a user's new address did. */
export type AddressChange =
  | { readonly outcome: 'changed'; readonly oldEmail: string }
  /** The user is missing or deactivated: nothing was written. */
  | { readonly outcome: 'inactive' }
  /**
   * Another account took the address meanwhile (a unique violation, which
   * on PostgreSQL aborts the transaction): roll the transaction back.
   */
  | { readonly outcome: 'taken' };

/**
 * The e-mail change primitives a service runs in one transaction (see
 * {@link EmailChangeStore.transaction}); none publishes events or evicts caches.
 */
export interface EmailChangeWrites {
  /**
   * Takes the user's row lock (`UPDATE identity_users SET updated_at =
   * updated_at WHERE id = ?`, `AND status = 'active'` with `activeOnly`).
   *
   * @returns whether the user exists (and, with `activeOnly`, is active).
   */
  lockUser(userId: string, options?: { readonly activeOnly?: boolean }): Promise<boolean>;
  /** Records the user's one pending change: deletes any earlier change of the user (the old link stops working) and inserts `change`. */
  replace(change: NewEmailChange): Promise<void>;
  /**
   * Consumes a change with one statement (`UPDATE ... SET consumed_at = now
   * WHERE id = ? AND user_id = ? AND new_email = ? AND consumed_at IS NULL
   * AND expires_at > now`): exactly one concurrent caller gets `consumed`.
   * `expired` when the matching unconsumed change had expired (it is
   * deleted); `invalid` when there is no matching unconsumed change.
   */
  consume(
    match: { readonly changeId: string; readonly userId: string; readonly newEmail: string },
    now: string,
  ): Promise<EmailChangeConsumption>;
  /** Sets an active user's e-mail address and username to `newEmail` and marks it verified. */
  setAddress(userId: string, newEmail: string, now: string): Promise<AddressChange>;
}

/**
 * Persistence of e-mail changes: reads outside a transaction, the
 * {@link EmailChangeWrites} primitives inside one the service opens.
 */
export interface EmailChangeStore extends UnitOfWork<EmailChangeWrites> {
  findUser(userId: string): Promise<EmailChangeUser | undefined>;
  /** Whether another account uses `email` as its e-mail address or username. */
  isAddressTaken(email: string, exceptUserId: string): Promise<boolean>;
  /** A change by id, in any state. */
  find(changeId: string): Promise<EmailChange | undefined>;
  /** Deletes consumed and expired changes; returns how many. */
  prune(now: string): Promise<number>;
}
