import type { UnitOfWork } from '@idt/core';

/** A registered passkey as stored. */
export interface StoredPasskey {
  readonly id: string;
  readonly userId: string;
  /** The WebAuthn credential id, base64url. */
  readonly credentialId: string;
  /** The COSE public key, base64url. */
  readonly publicKey: string;
  /** The authenticator's signature counter at the last use (0 for authenticators that keep none). */
  readonly counter: number;
  readonly transports: readonly string[];
  /** `singleDevice` (device-bound) or `multiDevice` (may be synced to other devices). */
  readonly deviceType: 'singleDevice' | 'multiDevice';
  /** Whether the authenticator reported the credential as backed up (at its last use). */
  readonly backedUp: boolean;
  /** The authenticator model's AAGUID (all zeros when it keeps it private). */
  readonly aaguid: string;
  readonly name: string;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
}

/** What a challenge is for. */
export type PasskeyChallengePurpose = 'registration' | 'authentication';

/** A challenge handed to a browser, kept only as its SHA-256. */
export interface PasskeyChallenge {
  readonly id: string;
  /** What it is bound to: `interaction:<uid>` (sign-in) or `session:<id>` (account). */
  readonly binding: string;
  readonly purpose: PasskeyChallengePurpose;
  /** The user it was made for (registration, second factor); `null` for a first factor (anyone's passkey). */
  readonly userId: string | null;
  /** SHA-256 (hex) of the base64url challenge. */
  readonly challengeHash: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

/** The account facts passkeys need. */
export interface PasskeyUser {
  readonly id: string;
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly status: 'active' | 'deactivated';
}

/** The primitives a passkey service runs in one transaction (see {@link PasskeyStore.transaction}). */
export interface PasskeyWrites {
  /** Takes the user's row lock; whether the user exists and is active. */
  lockActiveUser(userId: string): Promise<boolean>;
  /** How many passkeys the user has (under the lock). */
  count(userId: string): Promise<number>;
  /**
   * Inserts a passkey.
   *
   * @returns `false` when its credential id is registered already (nothing written).
   */
  insert(passkey: StoredPasskey): Promise<boolean>;
  /** Renames one of the user's passkeys; whether it was the user's. */
  rename(userId: string, passkeyId: string, name: string): Promise<boolean>;
  /** Deletes one of the user's passkeys; whether it was the user's. */
  remove(userId: string, passkeyId: string): Promise<boolean>;
  /** Deletes every passkey of the user; the ids deleted. */
  removeAll(userId: string): Promise<string[]>;
  /**
   * Records a use with one compare-and-set statement (`UPDATE ... WHERE id =
   * ? AND counter = expected`): exactly one concurrent use of a counter value wins.
   */
  recordUse(
    passkeyId: string,
    expectedCounter: number,
    use: {
      readonly counter: number;
      readonly backedUp: boolean;
      readonly deviceType: StoredPasskey['deviceType'];
      readonly at: string;
    },
  ): Promise<boolean>;
}

/**
 * Persistence of passkeys and their challenges: reads and the single-use
 * challenge primitives outside a transaction, the {@link PasskeyWrites}
 * primitives inside one the service opens.
 */
export interface PasskeyStore extends UnitOfWork<PasskeyWrites> {
  findUser(userId: string): Promise<PasskeyUser | undefined>;
  /** The user's passkeys, oldest first. */
  list(userId: string): Promise<StoredPasskey[]>;
  count(userId: string): Promise<number>;
  /** A passkey by its WebAuthn credential id. */
  findByCredentialId(credentialId: string): Promise<StoredPasskey | undefined>;
  /** Stores a challenge, replacing the binding's earlier ones of the same purpose. */
  replaceChallenge(challenge: PasskeyChallenge): Promise<void>;
  /**
   * Takes the binding's newest challenge of `purpose` and deletes every one
   * of them (`DELETE ... WHERE id = ?`: exactly one concurrent caller gets
   * it); `undefined` when none is waiting. Expiry is the caller's to judge.
   */
  consumeChallenge(binding: string, purpose: PasskeyChallengePurpose): Promise<PasskeyChallenge | undefined>;
  /** Deletes expired challenges; returns how many. */
  prune(now: string): Promise<number>;
}
