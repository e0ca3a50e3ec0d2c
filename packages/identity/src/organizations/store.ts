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

/** Persistence of organizations. */
export interface OrganizationsStore {
  /** An organization by id. */
  find(organizationId: string): Promise<OrganizationRecord | undefined>;
  /**
   * In one transaction: inserts the organization under the first free slug
   * among `slug`, `slug-2`, `slug-3`…, the creator's active `owner`
   * membership, and `OrganizationCreatedEvent`. A slug taken concurrently
   * (unique violation) retries the whole transaction with the next free slug.
   */
  create(organization: NewOrganization): Promise<OrganizationRecord>;
  /**
   * In one transaction: applies the patch and evicts every cached membership
   * (they carry the organization's name). `undefined` when it does not exist.
   */
  update(organizationId: string, patch: OrganizationPatch, at: string): Promise<OrganizationRecord | undefined>;
  /** Every membership of the user (any state) with its organization, oldest first. */
  listForUser(userId: string): Promise<UserOrganization[]>;
}
