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

/** Persistence of e-mail changes. */
export interface EmailChangeStore {
  findUser(userId: string): Promise<EmailChangeUser | undefined>;
  /** Whether another account uses `email` as its e-mail address or username. */
  isAddressTaken(email: string, exceptUserId: string): Promise<boolean>;
  /**
   * Records the user's one pending change, in one transaction: locks the
   * user row (active users only), deletes any earlier change of the user
   * (a new request supersedes the old link), inserts `change` and publishes
   * `UserEmailChangeRequestedEvent`.
   *
   * @returns `false` when the user is missing or deactivated (nothing written).
   */
  request(change: NewEmailChange): Promise<boolean>;
  /** A change by id, in any state. */
  find(changeId: string): Promise<EmailChange | undefined>;
  /**
   * Confirms a change, in one transaction. The change is consumed by one
   * statement (`UPDATE ... SET consumed_at = now WHERE id = ? AND user_id = ?
   * AND new_email = ? AND consumed_at IS NULL AND expires_at > now`): exactly
   * one concurrent caller wins. The winner then sets the user's e-mail
   * address and username to `newEmail` (marking it verified), publishes
   * `UserEmailChangedEvent` and evicts the cached user.
   *
   * - `expired`: the matching unconsumed change had expired; it is deleted.
   * - `invalid`: no matching unconsumed change, a deactivated user, or the
   *   address was taken meanwhile (nothing is written).
   */
  confirm(match: { changeId: string; userId: string; newEmail: string }, now: string): Promise<EmailChangeConfirmation>;
  /** Deletes consumed and expired changes; returns how many. */
  prune(now: string): Promise<number>;
}
