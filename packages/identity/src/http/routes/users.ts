import { CursorPageQuery, cursorPageSchema, defineRoute, json, type Route } from '@idt/core';
import { z } from 'zod';
import { actorOf } from '../../accounts/actor.js';
import { UserOrganization, UserRecord } from '../../accounts/records.js';
import type { OrganizationsService } from '../../organizations/service.js';
import { RegisterInput, UpdateProfileInput, type UsersService } from '../../users/service.js';
import { idParam } from './accounts-common.js';

const Registered = z.object({ userId: z.uuid() });
const UserParams = z.object({ userId: idParam('user') });
const NO_STORE = { 'cache-control': 'no-store' };

/**
 * Self-registration, the caller's profile and organizations, the tenant's
 * users, and deactivation by platform administrators.
 */
export function createUserRoutes(services: { users: UsersService; organizations: OrganizationsService }): Route[] {
  const { users, organizations } = services;
  const deactivation = (action: 'deactivate' | 'reactivate') =>
    defineRoute({
      method: 'POST',
      path: `/v1/identity/users/{userId}/${action}`,
      operationId: `${action}User`,
      summary:
        action === 'deactivate'
          ? 'Deactivate a user: every token of the user stops working (platform administrators)'
          : 'Reactivate a deactivated user (platform administrators)',
      description:
        action === 'deactivate'
          ? 'Needs `UsersDelete` in the platform organization. Revokes every token issued to the user until now, refuses sign-in and publishes `UserDeactivatedEvent`. You cannot deactivate yourself.'
          : 'Needs `UsersDelete` in the platform organization. Tokens issued before the deactivation stay revoked.',
      tags: ['Users'],
      permissions: ['UsersDelete'],
      request: { params: UserParams },
      problemCodes:
        action === 'deactivate'
          ? ['Identity.UserNotFound', 'Identity.CannotDeactivateSelf', 'Identity.UserAlreadyDeactivated']
          : ['Identity.UserNotFound', 'Identity.UserNotDeactivated'],
      responses: {
        200: { description: 'The user', schema: UserRecord },
        404: { description: 'No such user (`Identity.UserNotFound`)' },
        422: {
          description:
            action === 'deactivate'
              ? 'Yourself (`Identity.CannotDeactivateSelf`) or already deactivated (`Identity.UserAlreadyDeactivated`)'
              : 'The user is active (`Identity.UserNotDeactivated`)',
        },
      },
      handler: async ({ principal, params }) => json(await users[action](actorOf(principal), params.userId)),
    });

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/register',
      operationId: 'registerUser',
      summary: 'Register an account',
      description: 'Self-registration. Publishes `UserRegisteredEvent`. Sign in through the authorization endpoint afterwards.',
      tags: ['Users'],
      auth: 'anonymous',
      ratePolicy: 'registration',
      request: { body: RegisterInput },
      problemCodes: ['Identity.EmailTaken'],
      responses: {
        201: { description: 'The account was created', schema: Registered },
        409: { description: 'An account with this e-mail address exists (`Identity.EmailTaken`)' },
      },
      handler: async ({ body }) => json(await users.register(body), { status: 201 }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/users/me',
      operationId: 'getMyProfile',
      summary: 'Your profile',
      description: 'Works without an organization in the token.',
      tags: ['Users'],
      tenant: 'optional',
      responses: { 200: { description: 'Your profile', schema: UserRecord } },
      handler: async ({ principal }) => json(await users.profile(actorOf(principal)), { headers: NO_STORE }),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/identity/users/me',
      operationId: 'updateMyProfile',
      summary: 'Change your first or last name',
      description:
        'Works without an organization in the token. The e-mail address changes through `/v1/identity/auth/change-email`.',
      tags: ['Users'],
      tenant: 'optional',
      request: { body: UpdateProfileInput },
      responses: { 200: { description: 'Your updated profile', schema: UserRecord } },
      handler: async ({ principal, body }) => json(await users.updateProfile(actorOf(principal), body)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/users/me/organizations',
      operationId: 'listMyOrganizations',
      summary: 'The organizations you belong to, with your membership in each',
      description:
        'Every membership, whatever its state (active, pending, suspended, denied). Works without an organization in the token.',
      tags: ['Users', 'Organizations'],
      tenant: 'optional',
      responses: { 200: { description: 'Your organizations', schema: z.array(UserOrganization) } },
      handler: async ({ principal }) => json(await organizations.listMine(actorOf(principal)), { headers: NO_STORE }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/users',
      operationId: 'listUsers',
      summary: "The users of your token's organization",
      description:
        "Users holding a membership (any state) in the organization, oldest membership first. Read a long list with `cursor` (the previous page's `nextCursor`): every page then costs the same, where `page` N skips the N-1 pages before it.",
      tags: ['Users'],
      permissions: ['UsersRead'],
      request: { query: CursorPageQuery },
      responses: { 200: { description: 'A page of users', schema: cursorPageSchema(UserRecord) } },
      handler: async ({ principal, query }) => json(await users.list(actorOf(principal), query)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/users/{userId}',
      operationId: 'getUser',
      summary: "A user of your token's organization",
      tags: ['Users'],
      permissions: ['UsersRead'],
      request: { params: UserParams },
      problemCodes: ['Identity.UserNotFound'],
      responses: {
        200: { description: 'The user', schema: UserRecord },
        404: { description: 'No such user in your organization (`Identity.UserNotFound`)' },
      },
      handler: async ({ principal, params }) => json(await users.get(actorOf(principal), params.userId)),
    }),
    deactivation('deactivate'),
    deactivation('reactivate'),
  ];
}
