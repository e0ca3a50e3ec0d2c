import type { UnitOfWork } from '@idt/core';

/** An organization's account-security policy, as stored. */
export interface OrganizationSecurityPolicy {
  /** Members need a second factor before a token for the organization is issued. */
  readonly requireMfa: boolean;
  /** Members need a verified e-mail address to sign in to the organization. */
  readonly requireVerifiedEmail: boolean;
}

/** A change of an organization's policy; an absent field stays as it is. */
export interface OrganizationSecurityPolicyPatch {
  readonly requireMfa?: boolean;
  readonly requireVerifiedEmail?: boolean;
}

/**
 * The policy primitives a service runs in one transaction (see
 * {@link OrganizationPolicyStore.transaction}); none publishes events or evicts caches.
 */
export interface OrganizationPolicyWrites {
  /**
   * Applies `patch` to the organization and stamps `updated_at`, in one
   * statement; returns the policy as it now is, or `undefined` when there is
   * no such organization (nothing written).
   */
  update(
    organizationId: string,
    patch: OrganizationSecurityPolicyPatch,
    at: string,
  ): Promise<OrganizationSecurityPolicy | undefined>;
}

/** Persistence of organization security policies: reads, and the writes of {@link OrganizationPolicyWrites}. */
export interface OrganizationPolicyStore extends UnitOfWork<OrganizationPolicyWrites> {
  /** The organization's policy, or `undefined` when there is no such organization. */
  find(organizationId: string): Promise<OrganizationSecurityPolicy | undefined>;
  /** Whether any active membership of the user is in an active organization that requires MFA. */
  anyMembershipRequiresMfa(userId: string): Promise<boolean>;
  /**
   * Whether the user is an active owner or admin of `organizationId`, an
   * active platform organization (the platform administrators).
   */
  isPlatformAdministrator(userId: string, organizationId: string): Promise<boolean>;
}
