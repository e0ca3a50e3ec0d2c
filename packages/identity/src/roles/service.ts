import { type Clock, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces, EVERY_KEY, type Eviction } from '../access/cache-namespaces.js';
import { type AccountsActor, tenantOf } from '../accounts/actor.js';
import type { RoleRecord } from '../accounts/records.js';
import { RoleNameSchema } from '../accounts/role-policy.js';
import {
  OrganizationAuditActions,
  type OrganizationAuditContext,
  organizationAuditEntry,
} from '../audit/organization-actions.js';
import { PERMISSIONS } from '../authorization/permissions.js';
import { BUILT_IN_ROLE_PERMISSIONS, BUILT_IN_ROLES, type BuiltInRole, isBuiltInRole } from '../authorization/roles.js';
import type { CustomRole, RolesStore } from './store.js';

/** Memberships are cached with their organization's custom roles: every role write evicts them all. */
const EVERY_MEMBERSHIP: readonly Eviction[] = [{ namespace: CacheNamespaces.memberships, key: EVERY_KEY }];

/** A permission name; anything else is a validation error. */
export const PermissionSchema = z.enum(PERMISSIONS, { error: 'Unknown permission.' });

const DescriptionSchema = z
  .string({ error: 'Enter a description.' })
  .trim()
  .max(500, 'A description has at most 500 characters.')
  .regex(/^[^\p{Cc}]*$/u, 'A description cannot contain control characters.');

const PermissionListSchema = z
  .array(PermissionSchema, { error: 'Give a list of permissions.' })
  .min(1, 'Give at least one permission.')
  .max(PERMISSIONS.length, `Give at most ${PERMISSIONS.length} permissions.`);

/** The body of `POST /v1/identity/roles`. */
export const CreateRoleInput = z.object({
  name: RoleNameSchema,
  description: DescriptionSchema.optional(),
  permissions: PermissionListSchema,
});

/** Input of {@link RolesService.create}. */
export type CreateRoleInput = z.input<typeof CreateRoleInput>;

/** The body of `PATCH /v1/identity/roles/{roleId}`. */
export const UpdateRoleInput = z.object({
  name: RoleNameSchema.optional(),
  description: DescriptionSchema.optional(),
  permissions: PermissionListSchema.optional(),
});

/** Input of {@link RolesService.update}. */
export type UpdateRoleInput = z.input<typeof UpdateRoleInput>;

const BUILT_IN_DESCRIPTIONS: Readonly<Record<BuiltInRole, string>> = {
  owner: 'Every permission; the only role that can grant or take away ownership.',
  admin: 'Every permission.',
  manager: 'Manages members, organization clients and API keys.',
  user: 'A regular member.',
};

/** Built-in roles and the organization's custom roles. */
export interface RolesService {
  /** The built-in roles, then the caller's organization's custom roles (`RolesRead`). */
  list(actor: AccountsActor): Promise<RoleRecord[]>;
  /**
   * Creates a custom role in the caller's organization (`RolesCreate`) with
   * permissions the caller holds.
   *
   * @throws ProblemError `Identity.RoleNameReserved` / `Identity.RoleNameTaken` (409),
   *   `Identity.RoleExceedsPermissions` (403).
   */
  create(actor: AccountsActor, input: CreateRoleInput, context?: OrganizationAuditContext): Promise<RoleRecord>;
  /**
   * Changes a custom role (`RolesUpdate`); a rename carries over to the members
   * holding it. The caller must hold the role's old and new permissions.
   *
   * @throws ProblemError as {@link RolesService.create}; `Identity.RoleNotFound` (404).
   */
  update(actor: AccountsActor, roleId: string, input: UpdateRoleInput, context?: OrganizationAuditContext): Promise<RoleRecord>;
  /**
   * Deletes a custom role (`RolesDelete`); members holding it lose it.
   *
   * @throws ProblemError `Identity.RoleNotFound` (404), `Identity.RoleExceedsPermissions` (403).
   */
  remove(actor: AccountsActor, roleId: string, context?: OrganizationAuditContext): Promise<void>;
}

/** Dependencies of {@link createRolesService}. */
export interface RolesServiceOptions {
  readonly roles: RolesStore;
  readonly clock?: Clock;
}

function present(role: CustomRole): RoleRecord {
  return {
    id: role.id,
    name: role.name,
    description: role.description,
    permissions: [...role.permissions],
    builtIn: false,
    createdAt: role.createdAt,
    updatedAt: role.updatedAt,
  };
}

/** @throws ProblemError `Identity.RoleExceedsPermissions` naming the permissions the actor lacks. */
function assertHeld(actor: AccountsActor, permissions: readonly string[]): void {
  const missing = permissions.filter((permission) => !actor.permissions.has(permission));
  if (missing.length > 0) {
    throw new ProblemError('Identity.RoleExceedsPermissions', `You do not hold ${missing.join(', ')}.`);
  }
}

/** @throws ProblemError `Identity.RoleNameReserved` for a built-in role name. */
function assertNotReserved(name: string): void {
  if (isBuiltInRole(name)) throw new ProblemError('Identity.RoleNameReserved', `"${name}" is a built-in role.`);
}

/**
 * The roles service.
 *
 * @example
 * const roles = createRolesService({ roles: createKnexRolesStore(deps) });
 * await roles.create(principal, { name: 'auditor', permissions: ['UsersRead', 'InquiriesRead'] });
 */
export function createRolesService(options: RolesServiceOptions): RolesService {
  const { roles } = options;
  const clock = options.clock ?? systemClock;

  async function found(organizationId: string, roleId: string): Promise<CustomRole> {
    const role = await roles.find(organizationId, roleId.toLowerCase());
    if (!role) throw new ProblemError('Identity.RoleNotFound');
    return role;
  }

  return {
    async list(actor) {
      const tenant = tenantOf(actor, 'RolesRead');
      const builtIn: RoleRecord[] = BUILT_IN_ROLES.map((name) => ({
        id: null,
        name,
        description: BUILT_IN_DESCRIPTIONS[name],
        permissions: [...BUILT_IN_ROLE_PERMISSIONS[name]],
        builtIn: true,
        createdAt: null,
        updatedAt: null,
      }));
      return [...builtIn, ...(await roles.list(tenant)).map(present)];
    },

    async create(actor, input, context) {
      const tenant = tenantOf(actor, 'RolesCreate');
      const parsed = CreateRoleInput.parse(input);
      assertNotReserved(parsed.name);
      const permissions = [...new Set(parsed.permissions)];
      assertHeld(actor, permissions);
      const now = clock.now().toISOString();
      const role: CustomRole = {
        id: newId(),
        organizationId: tenant,
        name: parsed.name,
        description: parsed.description ?? '',
        permissions,
        createdAt: now,
        updatedAt: now,
      };
      await roles.transaction(async (tx) => {
        // Thrown inside: the taken name's unique violation rolls the transaction back.
        if (!(await tx.insert(role))) throw new ProblemError('Identity.RoleNameTaken');
        await tx.evict(EVERY_MEMBERSHIP);
        await tx.audit?.([
          organizationAuditEntry(
            {
              action: OrganizationAuditActions.roleCreated.action,
              organizationId: tenant,
              target: { type: 'role', id: role.id, display: role.name },
              metadata: { permissions: [...role.permissions] },
            },
            context,
            actor,
          ),
        ]);
      });
      return present(role);
    },

    async update(actor, roleId, input, context) {
      const tenant = tenantOf(actor, 'RolesUpdate');
      const parsed = UpdateRoleInput.parse(input);
      const current = await found(tenant, roleId);
      assertHeld(actor, current.permissions);
      if (parsed.name !== undefined) assertNotReserved(parsed.name);
      const permissions = parsed.permissions ? [...new Set(parsed.permissions)] : undefined;
      if (permissions) assertHeld(actor, permissions);
      const patch = {
        ...(parsed.name !== undefined ? { name: parsed.name } : {}),
        ...(parsed.description !== undefined ? { description: parsed.description } : {}),
        ...(permissions ? { permissions } : {}),
      };
      const at = clock.now().toISOString();
      const updated = await roles.transaction(async (tx) => {
        const role = await tx.update(tenant, current.id, patch, at);
        if (role === 'name-taken') throw new ProblemError('Identity.RoleNameTaken');
        if (role) {
          await tx.evict(EVERY_MEMBERSHIP);
          // An empty patch changes nothing: nothing to record.
          await tx.audit?.(
            Object.keys(patch).length === 0
              ? []
              : [
                  organizationAuditEntry(
                    {
                      action: OrganizationAuditActions.roleUpdated.action,
                      organizationId: tenant,
                      target: { type: 'role', id: role.id, display: role.name },
                      metadata: {
                        changed: Object.keys(patch),
                        ...(patch.name !== undefined ? { name: role.name, previousName: current.name } : {}),
                        ...(patch.permissions
                          ? { permissions: [...role.permissions], previousPermissions: [...current.permissions] }
                          : {}),
                      },
                    },
                    context,
                    actor,
                  ),
                ],
          );
        }
        return role;
      });
      if (!updated) throw new ProblemError('Identity.RoleNotFound');
      return present(updated);
    },

    async remove(actor, roleId, context) {
      const tenant = tenantOf(actor, 'RolesDelete');
      const current = await found(tenant, roleId);
      assertHeld(actor, current.permissions);
      const removed = await roles.transaction(async (tx) => {
        const role = await tx.remove(tenant, current.id);
        if (role) {
          await tx.evict(EVERY_MEMBERSHIP);
          await tx.audit?.([
            organizationAuditEntry(
              {
                action: OrganizationAuditActions.roleDeleted.action,
                organizationId: tenant,
                target: { type: 'role', id: role.id, display: role.name },
                metadata: { permissions: [...role.permissions] },
              },
              context,
              actor,
            ),
          ]);
        }
        return role;
      });
      if (!removed) throw new ProblemError('Identity.RoleNotFound');
    },
  };
}
