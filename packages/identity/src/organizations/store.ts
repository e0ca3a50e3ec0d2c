import type { UnitOfWork } from '@idt/core';
import type { EnrollmentPolicy, OrganizationRecord, UserOrganization } from '../accounts/records.js';

/** An organization to create, with its first owner. */
export interface NewOrganization {
  readonly id: string;
  readonly name: string;
  /** The wanted slug; the store appends `-2`, `-3`… while it is taken. */
  readonly slug: string;
  readonly enrollmentPolicy: EnrollmentPolicy;
  readonly ownerUserId: string;
  readonly membershipId: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

/** Changes to an organization; the slug never changes. */
export interface OrganizationPatch {
  readonly name?: string;
  readonly enrollmentPolicy?: EnrollmentPolicy;
}

/**
 * The organization primitives a service runs in one transaction (see
 * {@link OrganizationsStore.transaction}); none publishes events or evicts caches.
 */
export interface OrganizationsWrites {
  /**
   * Inserts the organization under the first free slug among `slug`,
   * `slug-2`, `slug-3`… and the creator's active `owner` membership. Its
   * first statement takes the owner's row lock (on SQLite the write lock
   * before the slugs are read). A slug taken by a concurrent transaction
   * fails with a unique violation: roll back and run the transaction again.
   *
   * @returns the organization as inserted (with the slug it got).
   */
  insert(organization: NewOrganization): Promise<OrganizationRecord>;
  /** Applies a patch that changes at least one field. `false` when the organization does not exist. */
  update(organizationId: string, patch: OrganizationPatch, at: string): Promise<boolean>;
}

/**
 * Persistence of organizations: reads outside a transaction, the
 * {@link OrganizationsWrites} primitives inside one a service opens.
 */
export interface OrganizationsStore extends UnitOfWork<OrganizationsWrites> {
  /** An organization by id. */
  find(organizationId: string): Promise<OrganizationRecord | undefined>;
  /** Every membership of the user (any state) with its organization, oldest first. */
  listForUser(userId: string): Promise<UserOrganization[]>;
}
