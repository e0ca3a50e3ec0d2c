import { type AuditActor, type AuditRequestFacts, auditActorOf, auditRequestOf, type Principal } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import './problems.js';

/**
 * Who calls the management services: the parts of a request's principal
 * they decide on (a `Principal` is one), and, from a route, who it is on the
 * audit trail and where the request came from.
 */
export type SsoActor = Pick<Principal, 'userId' | 'organizationId' | 'permissions'> & {
  readonly audit?: { readonly actor: AuditActor; readonly request: AuditRequestFacts };
};

/** The permission owners and admins hold that lets them manage their organization's connections and domains. */
export const SSO_ORGANIZATION_PERMISSION = 'OrganizationsUpdate';
/** The permission that, held in the platform organization, makes a platform administrator. */
export const SSO_PLATFORM_PERMISSION = 'AdminAccess';

/** What the sso module asks the identity side about organizations and roles. */
export interface SsoDirectory {
  /** Whether `organizationId` is the active platform organization. */
  isPlatformOrganization(organizationId: string): Promise<boolean>;
  /** Whether the organization exists. */
  organizationExists(organizationId: string): Promise<boolean>;
  /** Whether `role` (lowercase) is a custom role of the organization. */
  hasCustomRole(organizationId: string, role: string): Promise<boolean>;
}

/** The caller of a route that requires a credential; with the route's request, its audit facts too. */
export function actorOf(principal: Principal | null, request?: Parameters<typeof auditRequestOf>[0]): SsoActor {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  return request ? { ...principal, audit: { actor: auditActorOf(principal), request: auditRequestOf(request) } } : principal;
}

/** Whether the actor holds `AdminAccess` in the platform organization. */
export async function isPlatformAdministrator(directory: SsoDirectory, actor: SsoActor): Promise<boolean> {
  if (actor.organizationId === null || !actor.permissions.has(SSO_PLATFORM_PERMISSION)) return false;
  return directory.isPlatformOrganization(actor.organizationId);
}

/**
 * Who may manage an organization's connections and domains: its owners and
 * admins (`OrganizationsUpdate` in a token for that organization) and
 * platform administrators. Anyone else learns nothing: another
 * organization answers 404, exactly as one that does not exist.
 *
 * @throws ProblemError `Identity.OrganizationNotFound` (404), `Auth.Forbidden` (403) for a member without the permission
 */
export async function authorizeOrganization(directory: SsoDirectory, actor: SsoActor, organizationId: string): Promise<void> {
  if (actor.organizationId === organizationId) {
    if (!actor.permissions.has(SSO_ORGANIZATION_PERMISSION)) {
      throw new ProblemError('Auth.Forbidden', `This operation needs the ${SSO_ORGANIZATION_PERMISSION} permission.`);
    }
    return;
  }
  if ((await isPlatformAdministrator(directory, actor)) && (await directory.organizationExists(organizationId))) return;
  throw new ProblemError('Identity.OrganizationNotFound');
}

/**
 * Platform connections are for platform administrators only.
 *
 * @throws ProblemError `Auth.Forbidden` (403)
 */
export async function authorizePlatform(directory: SsoDirectory, actor: SsoActor): Promise<void> {
  if (!(await isPlatformAdministrator(directory, actor))) {
    throw new ProblemError('Auth.Forbidden', 'Only platform administrators manage platform connections.');
  }
}
