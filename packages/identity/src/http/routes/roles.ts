import { defineRoute, json, noContent, type Route } from '@idt/core';
import { z } from 'zod';
import { actorOf } from '../../accounts/actor.js';
import { RoleRecord } from '../../accounts/records.js';
import { auditContextOf } from '../../audit/organization-actions.js';
import { CreateRoleInput, type RolesService, UpdateRoleInput } from '../../roles/service.js';
import { idParam } from './accounts-common.js';

const RoleParams = z.object({ roleId: idParam('role') });
const roleNotFound = { description: 'No such custom role in your organization (`Identity.RoleNotFound`)' } as const;
const exceeds = {
  description: 'A missing permission, or a role with permissions you do not hold (`Identity.RoleExceedsPermissions`)',
} as const;
const nameConflict = {
  description: 'A built-in role (`Identity.RoleNameReserved`) or another custom role (`Identity.RoleNameTaken`) has the name',
} as const;

/** The built-in and custom roles of `/v1/identity/roles`, in the token's organization. */
export function createRoleRoutes(roles: RolesService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/roles',
      operationId: 'listRoles',
      summary: "The built-in roles and your organization's custom roles",
      tags: ['Roles'],
      permissions: ['RolesRead'],
      responses: { 200: { description: 'Every role', schema: z.array(RoleRecord) } },
      handler: async ({ principal }) => json(await roles.list(actorOf(principal))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/roles',
      operationId: 'createRole',
      summary: 'Create a custom role in your organization',
      description: 'A custom role grants only permissions you hold yourself.',
      tags: ['Roles'],
      permissions: ['RolesCreate'],
      request: { body: CreateRoleInput },
      problemCodes: ['Identity.RoleExceedsPermissions', 'Identity.RoleNameReserved', 'Identity.RoleNameTaken'],
      responses: { 201: { description: 'The role', schema: RoleRecord }, 403: exceeds, 409: nameConflict },
      handler: async (ctx) => json(await roles.create(actorOf(ctx.principal), ctx.body, auditContextOf(ctx)), { status: 201 }),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/identity/roles/{roleId}',
      operationId: 'updateRole',
      summary: 'Change a custom role',
      description: 'A new name carries over to the members holding the role. You must hold its old and new permissions.',
      tags: ['Roles'],
      permissions: ['RolesUpdate'],
      request: { params: RoleParams, body: UpdateRoleInput },
      problemCodes: [
        'Identity.RoleNotFound',
        'Identity.RoleExceedsPermissions',
        'Identity.RoleNameReserved',
        'Identity.RoleNameTaken',
      ],
      responses: { 200: { description: 'The role', schema: RoleRecord }, 403: exceeds, 404: roleNotFound, 409: nameConflict },
      handler: async (ctx) => json(await roles.update(actorOf(ctx.principal), ctx.params.roleId, ctx.body, auditContextOf(ctx))),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/roles/{roleId}',
      operationId: 'deleteRole',
      summary: 'Delete a custom role',
      description: 'Members holding it lose it.',
      tags: ['Roles'],
      permissions: ['RolesDelete'],
      request: { params: RoleParams },
      problemCodes: ['Identity.RoleNotFound', 'Identity.RoleExceedsPermissions'],
      responses: { 204: { description: 'The role was deleted' }, 403: exceeds, 404: roleNotFound },
      handler: async (ctx) => {
        await roles.remove(actorOf(ctx.principal), ctx.params.roleId, auditContextOf(ctx));
        return noContent();
      },
    }),
  ];
}
