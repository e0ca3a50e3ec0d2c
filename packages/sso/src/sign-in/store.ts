/** The protocols a sign-in transaction speaks. */
export type SignInProtocol = 'oidc' | 'saml';

/**
 * A sign-in started at a connection, kept server-side until its callback
 * (OIDC) or its response (SAML) comes back.
 */
export interface PendingSignIn {
  readonly connectionId: string;
  readonly protocol: SignInProtocol;
  /** The interaction the outcome is bound to. */
  readonly interactionUid: string;
  /** The interaction's page that takes the outcome (`?result=` is appended). */
  readonly returnPath: string;
  /**
   * What the callback checks against: for OIDC the upstream transaction
   * without its state (the key is the state's hash) and URL; for SAML the
   * request id.
   */
  readonly data: Readonly<Record<string, unknown>>;
  readonly expiresAt: Date;
}

/**
 * Started sign-ins, under a key (the OIDC state, or the SAML request id
 * scoped by its connection) stored as its SHA-256.
 */
export interface SignInTransactionStore {
  save(key: string, pending: PendingSignIn): Promise<void>;
  /**
   * Removes and returns the sign-in under `key` when it is there and not
   * expired, in one statement: exactly one concurrent caller gets it.
   */
  take(key: string): Promise<PendingSignIn | undefined>;
}

/** What a handle stands for: a sign-in's outcome, or a link waiting for the account's password. */
export type OutcomeKind = 'outcome' | 'link';

/** A value stored behind a handle. */
export interface StoredOutcome {
  readonly kind: OutcomeKind;
  /** The interaction it is bound to; `null` for an IdP-initiated sign-in (the browser's cookie carries the handle). */
  readonly interactionUid: string | null;
  readonly data: Readonly<Record<string, unknown>>;
  readonly expiresAt: Date;
}

/** Outcomes behind random handles, stored as their SHA-256, each taken once. */
export interface OutcomeStore {
  save(handle: string, outcome: StoredOutcome): Promise<void>;
  /**
   * Removes and returns the value of `kind` under `handle` bound to
   * `interactionUid` (`null`: an unbound one), when not expired, in one
   * statement: exactly one concurrent caller gets it. A handle presented
   * with another interaction is neither answered nor spent.
   */
  take(handle: string, kind: OutcomeKind, interactionUid: string | null): Promise<StoredOutcome | undefined>;
}
