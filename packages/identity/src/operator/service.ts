import { type Clock, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import type { MembershipStatus } from '../access/store.js';
import { MemberJoinedEvent, MembershipRequestedEvent, pendingEvent } from '../accounts/events.js';
import type { OrganizationRecord, UserRecord } from '../accounts/records.js';
import { RoleListSchema, resolveRoleNames } from '../accounts/role-policy.js';
import { OrganizationAuditActions, organizationAuditEntry } from '../audit/organization-actions.js';
import { enrollMember } from '../memberships/enrollment.js';
import type { MembershipsStore } from '../memberships/store.js';
import type { RolesStore } from '../roles/store.js';
import type { UsersStore } from '../users/store.js';
import type { OperatorStore } from './store.js';

/** Input of {@link OperatorService.addMember}. */
export const AddMemberInput = z.object({
  organizationId: z.uuid({ error: 'Use an organization id.' }),
  userId: z.uuid({ error: 'Use a user id.' }),
  roles: RoleListSchema,
  status: z
    .enum(['active', 'pending'])
    .default('active')
    .describe('`pending` waits for approval and holds no roles until then (approval grants `user`).'),
});

/** Input of {@link OperatorService.addMember}. */
export type AddMemberInput = z.input<typeof AddMemberInput>;

/** What {@link OperatorService.addMember} did. */
export interface AddedMember {
  /** `false` when the user already had a membership (in any state), which is left as it was. */
  readonly created: boolean;
  readonly status: MembershipStatus;
}

/**
 * Operations of the deployment's operator (the `idt` CLI and seeding), who
 * acts outside any organization: lookups across organizations and adding a
 * member without an invitation. Not exposed over HTTP.
 */
export interface OperatorService {
  /** An organization by id, slug or name (case-insensitive); the oldest when a name is shared. */
  findOrganization(reference: string): Promise<OrganizationRecord | undefined>;
  /** A user by e-mail address (trimmed, case-insensitive). */
  findUserByEmail(email: string): Promise<UserRecord | undefined>;
  /** The user id of the platform organization's oldest active owner, once setup is complete. */
  platformOwner(): Promise<string | undefined>;
  /**
   * Gives a user a membership with roles (built-in or the organization's
   * custom ones), active or pending, publishing `MemberJoinedEvent` (via
   * `operator`, recorded as `identity.member.joined` with the `operator`
   * actor) or `MembershipRequestedEvent`. Idempotent: an existing
   * membership is left unchanged.
   *
   * @throws ProblemError `Identity.OrganizationNotFound` / `Identity.UserNotFound` (404);
   *   a validation problem keyed `roles[i]` for an unknown role; a zod error for bad input.
   */
  addMember(input: AddMemberInput): Promise<AddedMember>;
}

/** Dependencies of {@link createOperatorService}. */
export interface OperatorServiceOptions {
  readonly operator: OperatorStore;
  readonly memberships: MembershipsStore;
  readonly users: UsersStore;
  readonly roles: RolesStore;
  readonly clock?: Clock;
}

/**
 * The operator service.
 *
 * @example
 * const organization = await operator.findOrganization('acme');
 * const user = await operator.findUserByEmail('ada@example.com');
 * if (organization && user) await operator.addMember({ organizationId: organization.id, userId: user.id, roles: ['admin'] });
 */
export function createOperatorService(options: OperatorServiceOptions): OperatorService {
  const { operator, memberships, users, roles } = options;
  const clock = options.clock ?? systemClock;

  return {
    findOrganization: (reference) => operator.findOrganization(reference.trim()),
    findUserByEmail: (email) => operator.findUserByEmail(email.trim().toLowerCase()),
    platformOwner: () => operator.platformOwner(),

    async addMember(input) {
      const parsed = AddMemberInput.parse(input);
      const organizationId = parsed.organizationId.toLowerCase();
      const userId = parsed.userId.toLowerCase();
      const user = await users.find(userId);
      if (!user) throw new ProblemError('Identity.UserNotFound');
      const customRoles = new Map((await roles.list(organizationId)).map((role) => [role.name, role.permissions]));
      const roleNames = resolveRoleNames(parsed.roles, customRoles);
      const at = clock.now().toISOString();
      let created = false;
      const status = await enrollMember(memberships, { organizationId, userId, membershipId: newId(), at }, () => {
        created = true;
        return parsed.status === 'active'
          ? {
              status: 'active',
              roles: roleNames,
              events: [pendingEvent(MemberJoinedEvent, { organizationId, userId, via: 'operator' })],
              audit: [
                organizationAuditEntry(
                  {
                    action: OrganizationAuditActions.memberJoined.action,
                    organizationId,
                    target: { type: 'user', id: userId, display: user.email },
                    metadata: { via: 'operator', roles: roleNames },
                  },
                  { actor: { type: 'operator', id: null, display: null } },
                ),
              ],
            }
          : {
              status: 'pending',
              roles: [],
              events: [pendingEvent(MembershipRequestedEvent, { organizationId, userId, requestedAt: at })],
            };
      });
      if (status === undefined) throw new ProblemError('Identity.OrganizationNotFound');
      return { created, status };
    },
  };
}
