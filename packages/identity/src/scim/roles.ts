import type { PendingEvent } from '@idt/core';
import type { Eviction } from '../access/cache-namespaces.js';
import { MembershipRolesChangedEvent, pendingEvent } from '../accounts/events.js';
import { MEMBER_ROLE } from '../accounts/role-policy.js';
import { membershipEviction } from '../memberships/enrollment.js';
import type { ScimTransaction } from './store.js';

/** What a SCIM transaction publishes and evicts once it decided. */
export interface ScimEffects {
  readonly events: PendingEvent<Record<string, unknown>>[];
  readonly evictions: Eviction[];
}

/**
 * The roles a member should hold given the organization's group→role
 * mappings: SCIM manages only the roles some mapping names; every other
 * role (owner, roles granted in idt) is kept. A member left with none gets `user`.
 *
 * @example
 * rolesFromGroups(['user', 'owner'], new Map([['admins', ['admin']]]), ['admins']); // ['admin', 'owner', 'user']
 */
export function rolesFromGroups(
  current: readonly string[],
  mappings: ReadonlyMap<string, readonly string[]>,
  groupNames: readonly string[],
  previouslyManaged: ReadonlySet<string> = new Set(),
): string[] {
  const managed = new Set([...mappings.values()].flat().concat([...previouslyManaged]));
  const granted = groupNames.flatMap((name) => mappings.get(name) ?? []);
  const roles = new Set([...current.filter((role) => !managed.has(role)), ...granted]);
  if (roles.size === 0) roles.add(MEMBER_ROLE);
  return [...roles].sort();
}

/**
 * Recomputes the roles of members from their groups, in the caller's
 * transaction; `previouslyManaged` names roles of mappings just replaced.
 */
export async function reconcileRoles(
  tx: ScimTransaction,
  organizationId: string,
  userIds: Iterable<string>,
  at: string,
  effects: ScimEffects,
  previouslyManaged: ReadonlySet<string> = new Set(),
): Promise<void> {
  const unique = [...new Set(userIds)];
  if (unique.length === 0) return;
  const mappings = await tx.roleMappings(organizationId);
  for (const userId of unique) {
    const membership = await tx.membershipOf(organizationId, userId);
    if (!membership || (membership.status !== 'active' && membership.status !== 'suspended')) continue;
    const roles = rolesFromGroups(membership.roles, mappings, await tx.groupNamesOf(organizationId, userId), previouslyManaged);
    if (roles.join(' ') === [...membership.roles].sort().join(' ')) continue;
    await tx.updateMembership(membership.id, { roles, at });
    effects.events.push(
      pendingEvent(MembershipRolesChangedEvent, { organizationId, userId, roles: roles.join(' '), changedByUserId: null }),
    );
    effects.evictions.push(membershipEviction(userId, organizationId));
  }
}
