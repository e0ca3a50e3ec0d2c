import type { AuditEntry } from '@idt/core';

/** The records the first-administrator bootstrap writes. */
export interface FirstAdministrator {
  readonly user: {
    readonly id: string;
    readonly email: string;
    readonly firstName: string;
    readonly lastName: string;
    readonly passwordHash: string;
  };
  readonly organization: { readonly id: string; readonly name: string; readonly slug: string };
  readonly membershipId: string;
  readonly createdAt: string;
}

/** Persistence of setup mode. */
export interface SetupStore {
  /**
   * Whether an active owner or admin membership exists: an active user in an
   * active organization holding the `owner` or `admin` role.
   */
  hasAdministrator(): Promise<boolean>;
  /**
   * In one transaction: takes the setup lock, checks that no administrator
   * exists, then writes the user, the platform organization and the owner
   * membership, and records `audit` (the service's entries) in the same
   * transaction. Exactly one concurrent caller wins; the others get
   * `already-complete` and nothing is written or recorded.
   *
   * @throws a unique-violation database error when the e-mail address is taken.
   */
  createFirstAdministrator(admin: FirstAdministrator, audit?: ReadonlyArray<AuditEntry>): Promise<'created' | 'already-complete'>;
}
