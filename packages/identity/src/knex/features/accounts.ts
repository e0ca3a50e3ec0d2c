import { accountsEvents } from '../../accounts/events.js';
import { createInvitationRoutes } from '../../http/routes/invitations.js';
import { createMemberRoutes } from '../../http/routes/members.js';
import { createOrganizationRoutes } from '../../http/routes/organizations.js';
import { createRoleRoutes } from '../../http/routes/roles.js';
import { createUserRoutes } from '../../http/routes/users.js';
import { createInvitationMailHandler } from '../../invitations/mail.js';
import { createInvitationsService, type InvitationsService } from '../../invitations/service.js';
import { createMembershipsService, type MembershipsService } from '../../memberships/service.js';
import { createOperatorService, type OperatorService } from '../../operator/service.js';
import { createOrganizationsService, type OrganizationsService } from '../../organizations/service.js';
import { createRolesService, type RolesService } from '../../roles/service.js';
import { createUsersService, type UsersService } from '../../users/service.js';
import type { UsersStore } from '../../users/store.js';
import { createKnexInvitationsStore } from '../invitations-store.js';
import { createKnexMembershipsStore } from '../memberships-store.js';
import { createKnexOperatorStore } from '../operator-store.js';
import { createKnexOrganizationsStore } from '../organizations-store.js';
import { createKnexRolesStore } from '../roles-store.js';
import { createKnexUsersStore } from '../users-store.js';
import type { FeatureContext, IdentityFeature } from './context.js';

/** The services of the accounts feature, for hosts, the OpenID provider and the CLI. */
export interface AccountsServices {
  readonly users: UsersService;
  readonly organizations: OrganizationsService;
  /** Includes `enroll`, which the OpenID provider runs at authorize time. */
  readonly memberships: MembershipsService;
  readonly invitations: InvitationsService;
  readonly roles: RolesService;
  /** Operator lookups and member adding for the `idt` CLI and seeding; not exposed over HTTP. */
  readonly operator: OperatorService;
}

/** Users, organizations, memberships, invitations and roles. */
export interface AccountsFeature extends IdentityFeature {
  readonly services: AccountsServices;
  /** Users by id through the users cache, for the other features' lists (SCIM). */
  readonly users: Pick<UsersStore, 'findMany'>;
}

/**
 * Builds the accounts feature: its knex stores, services, routes, events and
 * the invitation mail handler.
 *
 * @example
 * const accounts = createAccountsFeature(ctx);
 * const state = await accounts.services.memberships.enroll(userId, organizationId);
 */
export function createAccountsFeature(ctx: FeatureContext): AccountsFeature {
  const { db, outbox, invalidator, clock, settings, audit } = ctx;
  // Organization changes are recorded on the audit trail in their transactions (actions registered with the passwords').
  const storeOptions = { db, outbox, invalidator, ...(audit ? { audit } : {}) };
  const usersStore = createKnexUsersStore({
    ...storeOptions,
    cache: { subscribe: (namespace, listener) => invalidator.subscribe(namespace, listener), clock },
  });
  const organizationsStore = createKnexOrganizationsStore(storeOptions);
  const invitationsStore = createKnexInvitationsStore(storeOptions);

  const users = createUsersService({
    users: usersStore,
    organizations: organizationsStore,
    hasher: ctx.hasher,
    ...(ctx.passwordPolicy ? { policy: ctx.passwordPolicy } : {}),
    clock,
  });
  const organizations = createOrganizationsService({ organizations: organizationsStore, clock });
  const membershipsStore = createKnexMembershipsStore(storeOptions);
  const rolesStore = createKnexRolesStore(storeOptions);
  const memberships = createMembershipsService({
    memberships: membershipsStore,
    organizations: organizationsStore,
    users: usersStore,
    clock,
  });
  const invitations = createInvitationsService({
    invitations: invitationsStore,
    tokens: ctx.tokens,
    authUrl: settings.authUrl,
    clock,
  });
  const roles = createRolesService({ roles: rolesStore, clock });
  const operator = createOperatorService({
    operator: createKnexOperatorStore(db),
    memberships: membershipsStore,
    users: usersStore,
    roles: rolesStore,
    clock,
  });

  return {
    users: usersStore,
    routes: [
      ...createUserRoutes({ users, organizations }),
      ...createOrganizationRoutes(organizations),
      ...createMemberRoutes(memberships),
      ...createInvitationRoutes(invitations),
      ...createRoleRoutes(roles),
    ],
    events: accountsEvents,
    handlers: [
      createInvitationMailHandler({
        invitations: invitationsStore,
        organizations: organizationsStore,
        mailer: ctx.mailer,
        acceptUrl: invitations.acceptUrl,
        clock,
      }),
    ],
    jobs: [],
    services: { users, organizations, memberships, invitations, roles, operator },
  };
}
