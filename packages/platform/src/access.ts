import type { Principal } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';

/**
 * Who calls a platform service: the parts of a request's principal it decides
 * on, and the name and credential id its audit records carry when given. A
 * `Principal` is one.
 */
export type PlatformActor = Pick<Principal, 'kind' | 'subject' | 'userId' | 'clientId' | 'organizationId' | 'permissions'> &
  Partial<Pick<Principal, 'name' | 'credentialId'>>;

/**
 * What the platform module asks the identity side: whether an organization is
 * the platform organization (the one setup created), and who its members are.
 */
export interface PlatformDirectory {
  /** Whether `organizationId` is the active platform organization. */
  isPlatformOrganization(organizationId: string): Promise<boolean>;
  /** Whether `userId` is an active member of `organizationId`. */
  isMember(organizationId: string, userId: string): Promise<boolean>;
  /** The role names (lowercase) of an active member of `organizationId`; empty for anyone else. */
  rolesOf(organizationId: string, userId: string): Promise<string[]>;
  /**
   * Active members with active accounts whose roles (custom roles included)
   * grant `permission`: of `organizationId`, or of every active organization
   * when it is `null`; only those holding `role` (lowercase) when given. One
   * entry per membership.
   */
  members(
    organizationId: string | null,
    permission: string,
    role?: string,
  ): Promise<Array<{ userId: string; organizationId: string }>>;
  /** The owners and admins of the platform organization (active members with active accounts). */
  platformAdministrators(): Promise<Array<{ userId: string; organizationId: string }>>;
}

/** Permissions the platform module checks (SPEC-NOTES "Roles and permissions"). */
export const PlatformPermissions = Object.freeze({
  configurationRead: 'ConfigurationRead',
  configurationManage: 'ConfigurationManage',
  systemSettings: 'SystemSettings',
  changelogManage: 'ChangelogManage',
  announcementRead: 'AnnouncementRead',
  announcementManage: 'AnnouncementManage',
});

/** The caller of a route that requires a credential. */
export function callerOf(principal: Principal | null): Principal {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  return principal;
}

/** The caller's organization; 403 `Tenant.Required` without one. */
export function tenantOf(actor: PlatformActor): string {
  if (actor.organizationId === null) throw new ProblemError('Tenant.Required');
  return actor.organizationId;
}

/** 403 `Auth.Forbidden` unless the actor holds `permission`. */
export function requirePermission(actor: PlatformActor, permission: string): void {
  if (!actor.permissions.has(permission)) {
    throw new ProblemError('Auth.Forbidden', `This operation needs the ${permission} permission.`);
  }
}

/**
 * Platform administration: `permission` held in the platform organization
 * (its owners and admins hold every permission; a platform service account
 * holds what its scopes map to). Anyone else gets 403 `Auth.Forbidden`.
 */
export async function requirePlatformAdministrator(
  directory: PlatformDirectory,
  actor: PlatformActor,
  permission: string,
): Promise<void> {
  requirePermission(actor, permission);
  if (actor.organizationId === null || !(await directory.isPlatformOrganization(actor.organizationId))) {
    throw new ProblemError('Auth.Forbidden', 'Only platform administrators may do this.');
  }
}

/** Whether the actor holds `permission` in the platform organization. */
export async function isPlatformAdministrator(
  directory: PlatformDirectory,
  actor: PlatformActor,
  permission: string,
): Promise<boolean> {
  if (!actor.permissions.has(permission) || actor.organizationId === null) return false;
  return directory.isPlatformOrganization(actor.organizationId);
}
