import { defineRoute, json, type Route } from '@idt/core';
import { actorOf } from '../../accounts/actor.js';
import { OrganizationRecord } from '../../accounts/records.js';
import { auditContextOf } from '../../audit/organization-actions.js';
import { CreateOrganizationInput, type OrganizationsService, UpdateOrganizationInput } from '../../organizations/service.js';
import { OrganizationParams, organizationNotFound } from './accounts-common.js';

/** `POST /v1/identity/organizations`, `GET|PATCH /v1/identity/organizations/{orgId}`. */
export function createOrganizationRoutes(organizations: OrganizationsService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/organizations',
      operationId: 'createOrganization',
      summary: 'Create an organization; you become its owner',
      description:
        'Works without an organization in the token. The slug is derived from the name and made unique (`acme`, `acme-2`, …); it never changes. Publishes `OrganizationCreatedEvent`. Sign in again with the `organization` hint to work in it.',
      tags: ['Organizations'],
      tenant: 'optional',
      ratePolicy: 'registration',
      request: { body: CreateOrganizationInput },
      responses: { 201: { description: 'The organization', schema: OrganizationRecord } },
      handler: async (ctx) => {
        const created = await organizations.create(actorOf(ctx.principal), ctx.body, auditContextOf(ctx));
        return json(created, { status: 201, headers: { location: `${ctx.prefix}/v1/identity/organizations/${created.id}` } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/organizations/{orgId}',
      operationId: 'getOrganization',
      summary: 'Your organization',
      tags: ['Organizations'],
      permissions: ['OrganizationsRead'],
      request: { params: OrganizationParams },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: { 200: { description: 'The organization', schema: OrganizationRecord }, 404: organizationNotFound },
      handler: async ({ principal, params }) => json(await organizations.get(actorOf(principal), params.orgId)),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/identity/organizations/{orgId}',
      operationId: 'updateOrganization',
      summary: 'Rename your organization or change its enrollment policy',
      description: 'The slug stays as it is.',
      tags: ['Organizations'],
      permissions: ['OrganizationsUpdate'],
      request: { params: OrganizationParams, body: UpdateOrganizationInput },
      problemCodes: ['Identity.OrganizationNotFound'],
      responses: { 200: { description: 'The updated organization', schema: OrganizationRecord }, 404: organizationNotFound },
      handler: async (ctx) =>
        json(await organizations.update(actorOf(ctx.principal), ctx.params.orgId, ctx.body, auditContextOf(ctx))),
    }),
  ];
}
