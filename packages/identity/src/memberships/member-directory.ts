import { compareCodeUnits } from '@idt/core';
import { expandRoles } from '../authorization/roles.js';

/** A membership {@link MemberDirectory.withPermission} found. */
export interface PermittedMember {
  readonly userId: string;
  readonly organizationId: string;
  readonly email: string;
}

/** Which memberships {@link MemberDirectory.withPermission} considers. */
export interface PermittedMemberScope {
  /** The organization, or `null` for every active organization. */
  readonly organizationId: string | null;
  /** Only the members holding this role (case-insensitive), when given. */
  readonly role?: string;
}

/**
 * Who holds a permission, for the modules that notify people (the
 * notifications module: a new inquiry; the platform module: announcements and
 * notices). Reached as `ctx.module<IdentityServices>('identity').members`.
 */
export interface MemberDirectory {
  /**
   * Active members, with active accounts, of active organizations whose roles
   * (custom roles of their organization included) grant `permission`: of
   * `scope.organizationId`, or of every organization when it is `null`; with
   * `scope.role`, only those holding that role (case-insensitive). One entry
   * per membership, ordered by organization then user.
   *
   * @example
   * const staff = await identity.members.withPermission('InquiriesRead', { organizationId });
   */
  withPermission(permission: string, scope: PermittedMemberScope): Promise<PermittedMember[]>;
}

/** An active membership as {@link MemberDirectoryStore.activeMemberships} reads it. */
export interface ActiveMembership extends PermittedMember {
  /** Its role names, lowercase: built-in or custom. */
  readonly roles: readonly string[];
}

/** What {@link MemberDirectoryStore.activeMemberships} reads. */
export interface ActiveMemberships {
  /** One entry per membership. */
  readonly memberships: readonly ActiveMembership[];
  /** The custom roles of the organizations read: organization id → lowercase role name → permissions. */
  readonly customRoles: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;
}

/** The persistence behind a {@link MemberDirectory}. */
export interface MemberDirectoryStore {
  /**
   * The active memberships, with active accounts, of active organizations:
   * of `organizationId`, or of every organization when it is `null`; with the
   * custom roles of the same organizations.
   */
  activeMemberships(organizationId: string | null): Promise<ActiveMemberships>;
}

/**
 * The {@link MemberDirectory}: the store reads the memberships, the directory
 * decides which of them hold the permission (built-in and custom roles
 * expanded) and the role asked for.
 *
 * @example
 * const members = createMemberDirectory(createKnexMemberDirectoryStore(db));
 * const staff = await members.withPermission('InquiriesRead', { organizationId });
 */
export function createMemberDirectory(store: MemberDirectoryStore): MemberDirectory {
  return {
    async withPermission(permission, scope) {
      const { memberships, customRoles } = await store.activeMemberships(scope.organizationId);
      const role = scope.role?.toLowerCase();
      return memberships
        .filter((entry) => role === undefined || entry.roles.includes(role))
        .filter((entry) => expandRoles(entry.roles, customRoles.get(entry.organizationId)).has(permission))
        .map(({ userId, organizationId, email }) => ({ userId, organizationId, email }))
        .sort((x, y) => compareCodeUnits(x.organizationId, y.organizationId) || compareCodeUnits(x.userId, y.userId));
    },
  };
}
