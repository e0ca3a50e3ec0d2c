import { defineRoute, json, noContent, pageSchema, type Route } from '@idt/core';
import { actorOf } from '../../accounts/actor.js';
import { MemberRecord } from '../../accounts/records.js';
import { auditContextOf } from '../../audit/organization-actions.js';
import { MemberListQuery, type MembershipsService, SetMemberRolesInput } from '../../memberships/service.js';
import { MemberParams, OrganizationParams } from './accounts-common.js';

const notFound = {
  description:
    'Not the organization of your token (`Identity.OrganizationNotFound`), or no such member (`Identity.MemberNotFound`)',
} as const;
const CHANGE_CODES = [
  'Identity.OrganizationNotFound',
  'Identity.MemberNotFound',
  'Identity.InvalidMembershipTransition',
  'Identity.LastOwner',
  'Identity.RoleExceedsPermissions',
];
const forbidden = {
  description:
    'A missing permission; the member is an owner and you are not (`Auth.Forbidden`); or the member holds a role beyond your permissions (`Identity.RoleExceedsPermissions`)',
} as const;

type Transition = 'suspend' | 'reinstate' | 'approve' | 'deny';

const TRANSITIONS: ReadonlyArray<{ action: Transition; operationId: string; summary: string; description: string }> = [
  {
    action: 'suspend',
    operationId: 'suspendMember',
    summary: 'Suspend an active member',
    description: 'Their tokens for the organization stop working. The last active owner cannot be suspended.',
  },
  {
    action: 'reinstate',
    operationId: 'reinstateMember',
    summary: 'Reinstate a suspended member',
    description: 'The member is active again with the roles held before.',
  },
  {
    action: 'approve',
    operationId: 'approveMember',
    summary: 'Approve a pending membership request',
    description: 'The member becomes active with the `user` role. Publishes `MembershipApprovedEvent`.',
  },
  {
    action: 'deny',
    operationId: 'denyMember',
    summary: 'Deny a pending membership request',
    description: 'The membership becomes `denied`; an invitation can still let the user in. Publishes `MembershipDeniedEvent`.',
  },
];

/** The member list and every membership change of `/v1/identity/organizations/{orgId}/members`. */
export function createMemberRoutes(memberships: MembershipsService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/organizations/{orgId}/members',
      operationId: 'listMembers',
      summary: 'The members of your organization',
      description: 'Every membership state unless `status` filters one; oldest membership first.',
      tags: ['Organizations'],
      permissions: ['UsersRead'],
      request: { params: OrganizationParams, query: MemberListQuery },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: {
        200: { description: 'A page of members', schema: pageSchema(MemberRecord) },
        404: { description: 'Not the organization of your token (`Identity.OrganizationNotFound`)' },
      },
      handler: async ({ principal, params, query }) => json(await memberships.list(actorOf(principal), params.orgId, query)),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/identity/organizations/{orgId}/members/{userId}/roles',
      operationId: 'setMemberRoles',
      summary: "Replace a member's roles",
      description:
        'Built-in (`owner`, `admin`, `manager`, `user`) or custom role names, case-insensitive. Only owners grant or take away `owner`; you cannot grant or take away a role whose permissions you do not all hold (`user` excepted). The last active owner keeps `owner`.',
      tags: ['Organizations'],
      permissions: ['OrganizationsManageMembers'],
      request: { params: MemberParams, body: SetMemberRolesInput },
      problemCodes: CHANGE_CODES,
      responses: {
        200: { description: 'The member', schema: MemberRecord },
        403: forbidden,
        404: notFound,
        422: { description: 'The last active owner (`Identity.LastOwner`) or a pending or denied member' },
      },
      handler: async (ctx) =>
        json(
          await memberships.setRoles(actorOf(ctx.principal), ctx.params.orgId, ctx.params.userId, ctx.body, auditContextOf(ctx)),
        ),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/organizations/{orgId}/members/{userId}',
      operationId: 'removeMember',
      summary: 'Remove a member (in any state) from your organization',
      description: 'The last active owner cannot be removed. Publishes `MembershipRemovedEvent`.',
      tags: ['Organizations'],
      permissions: ['OrganizationsManageMembers'],
      request: { params: MemberParams },
      problemCodes: CHANGE_CODES,
      responses: {
        204: { description: 'The member was removed' },
        403: forbidden,
        404: notFound,
        422: { description: 'The last active owner (`Identity.LastOwner`)' },
      },
      handler: async (ctx) => {
        await memberships.remove(actorOf(ctx.principal), ctx.params.orgId, ctx.params.userId, auditContextOf(ctx));
        return noContent();
      },
    }),
    ...TRANSITIONS.map(({ action, operationId, summary, description }) =>
      defineRoute({
        method: 'POST',
        path: `/v1/identity/organizations/{orgId}/members/{userId}/${action}`,
        operationId,
        summary,
        description,
        tags: ['Organizations'],
        permissions: ['OrganizationsManageMembers'],
        request: { params: MemberParams },
        problemCodes: CHANGE_CODES,
        responses: {
          200: { description: 'The member', schema: MemberRecord },
          403: forbidden,
          404: notFound,
          422: {
            description:
              'The membership is not in a state that allows this (`Identity.InvalidMembershipTransition`), or `Identity.LastOwner`',
          },
        },
        handler: async (ctx) =>
          json(await memberships[action](actorOf(ctx.principal), ctx.params.orgId, ctx.params.userId, auditContextOf(ctx))),
      }),
    ),
  ];
}
