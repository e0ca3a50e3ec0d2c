import type { UnitOfWork } from '@idt/core';

/** The account facts e-mail verification needs. */
export interface EmailVerificationUser {
  readonly id: string;
  /** Lowercase. */
  readonly email: string;
  readonly firstName: string;
  readonly status: 'active' | 'deactivated';
  readonly emailVerified: boolean;
}

/** A verification link, as stored (its token only as a SHA-256). */
export interface EmailVerification {
  readonly id: string;
  readonly userId: string;
  /** The address the link verifies (lowercase): a link stops working when the account's address changes. */
  readonly email: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly consumedAt: string | null;
}

/** A verification to record. */
export interface NewEmailVerification {
  readonly id: string;
  readonly userId: string;
  readonly email: string;
  /** SHA-256 (hex) of the link's token. */
  readonly tokenHash: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

/** What consuming a link did. */
export type EmailVerificationConsumption =
  | { readonly outcome: 'consumed'; readonly verification: EmailVerification }
  | { readonly outcome: 'expired' }
  | { readonly outcome: 'invalid' };

/** What marking an address verified did. */
export type AddressVerification =
  /** `email_verified` went from false to true. */
  | 'verified'
  /** It was true already (a magic link or a password reset proved the address meanwhile). */
  | 'already'
  /** The user is missing or deactivated, or uses another address now: nothing was written. */
  | 'mismatch';

/**
 * The e-mail verification primitives a service runs in one transaction (see
 * {@link EmailVerificationStore.transaction}); none publishes events or evicts caches.
 */
export interface EmailVerificationWrites {
  /**
   * Takes the active user's row lock and reads the user.
   *
   * @returns the user, or `undefined` when missing or deactivated.
   */
  lockUser(userId: string): Promise<EmailVerificationUser | undefined>;
  /** Whether the user has an unconsumed link that works at `now`. */
  hasPending(userId: string, now: string): Promise<boolean>;
  /** Records the user's one pending link: deletes the user's earlier unconsumed links (they stop working) and inserts `verification`. */
  replace(verification: NewEmailVerification): Promise<void>;
  /**
   * Consumes a link with one statement (`UPDATE ... SET consumed_at = now
   * WHERE id = ? AND token_hash = ? AND consumed_at IS NULL AND expires_at >
   * now`): exactly one concurrent caller gets `consumed`. `expired` when the
   * matching unconsumed link had expired (it is deleted); `invalid` otherwise.
   */
  consume(
    match: { readonly verificationId: string; readonly tokenHash: string },
    now: string,
  ): Promise<EmailVerificationConsumption>;
  /** Sets `email_verified` of an active user whose address is still `email`. */
  markVerified(userId: string, email: string, now: string): Promise<AddressVerification>;
}

/**
 * Persistence of e-mail verification links: reads outside a transaction,
 * the {@link EmailVerificationWrites} primitives inside one the service opens.
 */
export interface EmailVerificationStore extends UnitOfWork<EmailVerificationWrites> {
  findUser(userId: string): Promise<EmailVerificationUser | undefined>;
  /** The account using `email` (lowercase) as its address, in any state. */
  findUserByEmail(email: string): Promise<EmailVerificationUser | undefined>;
  /** A link by id, in any state, with its token hash. */
  find(verificationId: string): Promise<(EmailVerification & { readonly tokenHash: string }) | undefined>;
  /** Deletes consumed and expired links; returns how many. */
  prune(now: string): Promise<number>;
}
