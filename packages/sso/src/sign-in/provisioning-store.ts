import type { UnitOfWork } from '@idt/core';
import type { StoredOutcome } from './store.js';

/** A local account as sign-in through a connection decides on it. */
export interface LocalUser {
  readonly id: string;
  /** Lowercase. */
  readonly email: string;
  readonly emailVerified: boolean;
  readonly status: 'active' | 'deactivated';
}

/** A user created just in time (no password). */
export interface NewSsoUser {
  readonly id: string;
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly emailVerified: boolean;
  readonly at: string;
}

/** A user's membership in the connection's organization. */
export interface LocalMembership {
  readonly id: string;
  readonly status: 'active' | 'pending' | 'suspended' | 'denied';
  readonly roles: readonly string[];
}

/**
 * The primitives one SSO sign-in runs in one transaction: identities,
 * users, the membership in the connection's organization (and no other),
 * and the outcome behind its handle. Identity's tables are written here
 * directly: `@idt/identity`'s services open their own transactions.
 */
export interface ProvisioningWrites {
  findIdentity(connectionId: string, subject: string): Promise<{ readonly userId: string } | undefined>;
  /** Records the sign-in on a known identity (its last address and time). */
  touchIdentity(connectionId: string, subject: string, email: string | null, at: string): Promise<void>;
  /** Links `(connectionId, subject)`; `false` when a concurrent sign-in linked it first. */
  linkIdentity(identity: {
    connectionId: string;
    subject: string;
    userId: string;
    email: string | null;
    at: string;
  }): Promise<boolean>;
  findUser(userId: string): Promise<LocalUser | undefined>;
  /** By lowercase address. */
  findUserByEmail(email: string): Promise<LocalUser | undefined>;
  /** `false` when the address is taken (a concurrent sign-in or registration). */
  insertUser(user: NewSsoUser): Promise<boolean>;
  /** Whether `organizationId` verified `domain`. */
  isDomainVerifiedBy(domain: string, organizationId: string): Promise<boolean>;
  /** Locks the organization row for the membership decision; its name and status, or `undefined` when gone. */
  lockOrganization(organizationId: string): Promise<{ readonly name: string; readonly status: string } | undefined>;
  membership(userId: string, organizationId: string): Promise<LocalMembership | undefined>;
  insertMembership(membership: {
    id: string;
    userId: string;
    organizationId: string;
    roles: readonly string[];
    at: string;
  }): Promise<void>;
  /** Sets the status and replaces the roles. */
  updateMembership(id: string, status: LocalMembership['status'], roles: readonly string[], at: string): Promise<void>;
  /** Stores an outcome behind `handle` in this transaction. */
  saveOutcome(handle: string, outcome: StoredOutcome): Promise<void>;
}

/** Persistence of SSO sign-ins (see {@link ProvisioningWrites}). */
export type ProvisioningStore = UnitOfWork<ProvisioningWrites>;
