import { type AuditEntry, isUniqueViolation } from '@idt/core';
import type { Eviction } from '../access/cache-namespaces.js';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import type { MembershipStatus } from '../access/store.js';
import type { OrganizationRecord } from '../accounts/records.js';
import type { ChangeEvent, EnrollmentDecision, EnrollmentRequest, MembershipsStore } from './store.js';

/** A new membership that enrollment decided on, with the events and audit entries that record it. */
export interface PublishedEnrollment extends EnrollmentDecision {
  readonly events: readonly ChangeEvent[];
  /** Recorded in the transaction of the insert (`identity.member.joined`), only when the membership is inserted. */
  readonly audit?: readonly AuditEntry[];
}

/** What a change of a user's membership in an organization evicts: the cached membership. */
export function membershipEviction(userId: string, organizationId: string): Eviction {
  return { namespace: CacheNamespaces.memberships, key: `${userId}:${organizationId}` };
}

/**
 * Enrolls a non-member in one transaction: under the organization's lock,
 * inserts what `decide` returns (nothing for `undefined`), publishes its
 * events, records its audit entries and evicts the cached membership. A
 * member keeps their state.
 *
 * @returns the membership state, or `undefined` when the user is not a member.
 * @throws ProblemError `Identity.OrganizationNotFound` when the organization does not exist.
 */
export async function enrollMember(
  memberships: MembershipsStore,
  request: EnrollmentRequest,
  decide: (organization: OrganizationRecord) => PublishedEnrollment | undefined,
): Promise<MembershipStatus | undefined> {
  try {
    return await memberships.transaction(async (tx) => {
      const { status, inserted } = await tx.enroll(request, decide);
      if (inserted) {
        await tx.publish(inserted.events);
        await tx.audit?.(inserted.audit ?? []);
        await tx.evict([membershipEviction(request.userId, request.organizationId)]);
      }
      return status;
    });
  } catch (error) {
    // The organization lock makes this unreachable in practice; a racing insert means the user is a member now.
    if (!isUniqueViolation(error)) throw error;
    return memberships.statusOf(request.userId, request.organizationId);
  }
}
