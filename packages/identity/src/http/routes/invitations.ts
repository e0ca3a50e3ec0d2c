import { defineRoute, json, noContent, PageQuery, pageSchema, type Route } from '@idt/core';
import { z } from 'zod';
import { actorOf } from '../../accounts/actor.js';
import { InvitationRecord, UserOrganization } from '../../accounts/records.js';
import { auditContextOf } from '../../audit/organization-actions.js';
import { AcceptInvitationInput, CreateInvitationInput, type InvitationsService } from '../../invitations/service.js';
import { idParam, OrganizationParams, organizationNotFound } from './accounts-common.js';

const InvitationParams = z.object({ orgId: idParam('organization'), invitationId: idParam('invitation') });

/** Invitations of `/v1/identity/organizations/{orgId}/invitations` and `POST /v1/identity/invitations/accept`. */
export function createInvitationRoutes(invitations: InvitationsService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/organizations/{orgId}/invitations',
      operationId: 'createInvitation',
      summary: 'Invite someone to your organization by e-mail',
      description:
        'The invitee gets a link valid for 7 days. `roles` defaults to `["user"]`; only owners invite owners, and no one invites with a role beyond their own permissions. Publishes `InvitationCreatedEvent`.',
      tags: ['Invitations'],
      permissions: ['OrganizationsManageMembers'],
      request: { params: OrganizationParams, body: CreateInvitationInput },
      problemCodes: [
        'Identity.OrganizationNotFound',
        'Identity.AlreadyMember',
        'Identity.MembershipSuspended',
        'Identity.InvitationExists',
        'Identity.RoleExceedsPermissions',
      ],
      responses: {
        201: { description: 'The invitation', schema: InvitationRecord },
        404: organizationNotFound,
        409: {
          description:
            'Already a member (`Identity.AlreadyMember`, `Identity.MembershipSuspended`) or already invited (`Identity.InvitationExists`)',
        },
      },
      handler: async (ctx) =>
        json(await invitations.create(actorOf(ctx.principal), ctx.params.orgId, ctx.body, auditContextOf(ctx)), {
          status: 201,
        }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/organizations/{orgId}/invitations',
      operationId: 'listInvitations',
      summary: "Your organization's invitations, newest first",
      tags: ['Invitations'],
      permissions: ['OrganizationsManageMembers'],
      request: { params: OrganizationParams, query: PageQuery },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: {
        200: { description: 'A page of invitations', schema: pageSchema(InvitationRecord) },
        404: organizationNotFound,
      },
      handler: async ({ principal, params, query }) => json(await invitations.list(actorOf(principal), params.orgId, query)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/organizations/{orgId}/invitations/{invitationId}',
      operationId: 'revokeInvitation',
      summary: 'Revoke a pending invitation',
      description: 'Its link stops working. Revoking a revoked invitation does nothing.',
      tags: ['Invitations'],
      permissions: ['OrganizationsManageMembers'],
      request: { params: InvitationParams },
      problemCodes: ['Identity.OrganizationNotFound', 'Identity.InvitationNotFound', 'Identity.InvitationNotPending'],
      responses: {
        204: { description: 'The invitation is revoked' },
        404: { description: 'Not your organization or no such invitation (`Identity.InvitationNotFound`)' },
        422: { description: 'The invitation was accepted (`Identity.InvitationNotPending`)' },
      },
      handler: async (ctx) => {
        await invitations.revoke(actorOf(ctx.principal), ctx.params.orgId, ctx.params.invitationId, auditContextOf(ctx));
        return noContent();
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/identity/invitations/accept',
      operationId: 'acceptInvitation',
      summary: 'Accept an invitation with the token of its link',
      description:
        'Works without an organization in the token. The signed-in user must have the invited e-mail address. You become an active member with the invited roles (a pending or denied membership is activated); each invitation works once.',
      tags: ['Invitations'],
      tenant: 'optional',
      request: { body: AcceptInvitationInput },
      problemCodes: [
        'Identity.InvitationInvalid',
        'Identity.InvitationExpired',
        'Identity.InvitationEmailMismatch',
        'Identity.AlreadyMember',
        'Identity.MembershipSuspended',
      ],
      responses: {
        200: { description: 'The organization and your membership', schema: UserOrganization },
        403: { description: 'The invitation was sent to another address (`Identity.InvitationEmailMismatch`)' },
        409: { description: 'Already a member (`Identity.AlreadyMember`) or suspended (`Identity.MembershipSuspended`)' },
        422: {
          description: 'Unknown, revoked or used (`Identity.InvitationInvalid`), or expired (`Identity.InvitationExpired`)',
        },
      },
      handler: async (ctx) => json(await invitations.accept(actorOf(ctx.principal), ctx.body, auditContextOf(ctx))),
    }),
  ];
}
