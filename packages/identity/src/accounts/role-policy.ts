import { ProblemError, ValidationProblem } from '@idt/problem';
import { z } from 'zod';
import { BUILT_IN_ROLE_PERMISSIONS, isBuiltInRole, normalizeRoleName } from '../authorization/roles.js';
import type { AccountsActor } from './actor.js';

/** The role every member may be given by anyone who manages members. */
export const MEMBER_ROLE = 'user';

/** The role only owners may grant or take away. */
export const OWNER_ROLE = 'owner';

/**
 * A role name: trimmed and lowercased, 1 to 64 letters, digits, `.`, `_` or
 * `-`, starting and ending with a letter or digit.
 */
export const RoleNameSchema = z
  .string({ error: 'Enter a role name.' })
  .trim()
  .min(1, 'Enter a role name.')
  .max(64, 'A role name has at most 64 characters.')
  .transform(normalizeRoleName)
  .pipe(
    z
      .string()
      .regex(
        /^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$/,
        'A role name uses letters, digits, ".", "_" and "-", and starts and ends with a letter or digit.',
      ),
  );

/** A list of role names to assign: 1 to 20, compared case-insensitively. */
export const RoleListSchema = z
  .array(RoleNameSchema, { error: 'Give a list of role names.' })
  .min(1, 'Give at least one role.')
  .max(20, 'Give at most 20 roles.');

/** The permissions a role grants in an organization, or `undefined` for an unknown role. */
export function permissionsOfRole(
  role: string,
  customRoles: ReadonlyMap<string, readonly string[]>,
): readonly string[] | undefined {
  const name = normalizeRoleName(role);
  return isBuiltInRole(name) ? BUILT_IN_ROLE_PERMISSIONS[name] : customRoles.get(name);
}

/**
 * Normalizes and de-duplicates role names, each of which must be built in or
 * a custom role of the organization.
 *
 * @throws ValidationProblem keyed `${field}[i]` for every unknown role.
 */
export function resolveRoleNames(
  names: readonly string[],
  customRoles: ReadonlyMap<string, readonly string[]>,
  field = 'roles',
): string[] {
  const errors: Record<string, string[]> = {};
  names.forEach((name, index) => {
    if (permissionsOfRole(name, customRoles) === undefined) {
      errors[`${field}[${index}]`] = [`No role named "${normalizeRoleName(name)}" exists in this organization.`];
    }
  });
  if (Object.keys(errors).length > 0) throw new ValidationProblem(errors);
  return [...new Set(names.map(normalizeRoleName))].sort();
}

/**
 * Checks that the actor may grant or take away each of `roles`: only an
 * owner handles `owner`; anyone who manages members handles `user`; any
 * other role only by a caller who holds every permission the role grants,
 * so no one hands out more than they have.
 *
 * @throws ProblemError `Auth.Forbidden` for `owner` by a non-owner,
 *   `Identity.RoleExceedsPermissions` for a role beyond the actor's permissions.
 */
export function assertMayAssignRoles(
  actor: AccountsActor,
  actorRoles: readonly string[],
  roles: Iterable<string>,
  customRoles: ReadonlyMap<string, readonly string[]>,
): void {
  for (const role of roles) {
    const name = normalizeRoleName(role);
    if (name === OWNER_ROLE) {
      if (!actorRoles.includes(OWNER_ROLE)) {
        throw new ProblemError('Auth.Forbidden', 'Only an owner can grant or take away the owner role.');
      }
      continue;
    }
    if (name === MEMBER_ROLE) continue;
    const missing = (permissionsOfRole(name, customRoles) ?? []).filter((permission) => !actor.permissions.has(permission));
    if (missing.length > 0) {
      throw new ProblemError(
        'Identity.RoleExceedsPermissions',
        `The ${name} role grants ${missing.join(', ')}, which you do not hold.`,
      );
    }
  }
}
