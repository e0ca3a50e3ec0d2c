import type { Principal } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';

/**
 * Who performs an accounts operation: the parts of a request's principal the
 * services decide on. A `Principal` of `@idt/core` is one.
 */
export interface AccountsActor {
  /** The user behind the call; `null` for a service account. */
  readonly userId: string | null;
  /** The organization the caller works in (the token's `org_id`), or `null`. */
  readonly organizationId: string | null;
  /** The caller's permissions in that organization. */
  readonly permissions: ReadonlySet<string>;
}

/**
 * The actor of an authenticated request.
 *
 * @throws UnauthorizedError when the request has no principal (routes with `auth: 'required'` never see that).
 */
export function actorOf(principal: Principal | null): AccountsActor {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  return principal;
}

/**
 * The acting user's id.
 *
 * @throws ProblemError `Auth.Forbidden` for a service account.
 */
export function requireUserId(actor: AccountsActor): string {
  if (actor.userId === null) throw new ProblemError('Auth.Forbidden', 'This operation needs a signed-in user.');
  return actor.userId;
}

/**
 * Checks that the actor works in `organizationId` and holds `permissions`.
 * Another organization answers 404 (never 403), so callers learn nothing
 * about organizations they cannot reach.
 *
 * @throws ProblemError `Identity.OrganizationNotFound` (404) for another or no organization,
 *   `Auth.Forbidden` (403) for a missing permission.
 */
export function authorizeInOrganization(actor: AccountsActor, organizationId: string, ...permissions: string[]): void {
  if (actor.organizationId === null || actor.organizationId !== organizationId.toLowerCase()) {
    throw new ProblemError('Identity.OrganizationNotFound');
  }
  requirePermissions(actor, ...permissions);
}

/**
 * The organization the actor works in, after checking `permissions`.
 *
 * @throws ProblemError `Tenant.Required` without an organization, `Auth.Forbidden` for a missing permission.
 */
export function tenantOf(actor: AccountsActor, ...permissions: string[]): string {
  if (actor.organizationId === null) throw new ProblemError('Tenant.Required');
  requirePermissions(actor, ...permissions);
  return actor.organizationId;
}

/**
 * @throws ProblemError `Auth.Forbidden` naming the permissions the actor lacks.
 */
export function requirePermissions(actor: AccountsActor, ...permissions: string[]): void {
  const missing = permissions.filter((permission) => !actor.permissions.has(permission));
  if (missing.length > 0) {
    throw new ProblemError('Auth.Forbidden', `This operation needs the ${missing.join(', ')} permission.`);
  }
}
