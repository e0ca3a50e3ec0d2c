import { createScimAdminRoutes } from '../../scim/admin-routes.js';
import { createScimAdminService, type ScimAdminService } from '../../scim/admin-service.js';
import { scimEvents } from '../../scim/events.js';
import { createScimGroupsService, type ScimGroupsService } from '../../scim/groups-service.js';
import { createScimRoutes } from '../../scim/routes.js';
import { createScimUsersService, type ScimUsersService } from '../../scim/users-service.js';
import type { UsersStore } from '../../users/store.js';
import { createKnexScimStore } from '../scim-store.js';
import type { FeatureContext, IdentityFeature } from './context.js';

/** The services of SCIM provisioning. */
export interface ScimServices {
  /** Tokens and group→role mappings. */
  readonly admin: ScimAdminService;
  readonly users: ScimUsersService;
  readonly groups: ScimGroupsService;
}

/** SCIM 2.0 provisioning: `/scim/v2` and its administration API. */
export interface ScimFeature extends IdentityFeature {
  readonly services: ScimServices;
}

/**
 * Builds the SCIM feature over knex.
 *
 * @example
 * const scim = createScimFeature(ctx, accounts.users);
 * const { token } = await scim.services.admin.createToken(principal, orgId, { name: 'Okta' });
 */
export function createScimFeature(ctx: FeatureContext, accountUsers: Pick<UsersStore, 'findMany'>): ScimFeature {
  const store = createKnexScimStore({
    db: ctx.db,
    outbox: ctx.outbox,
    invalidator: ctx.invalidator,
    ...(ctx.audit ? { audit: ctx.audit } : {}),
    users: accountUsers,
  });
  const admin = createScimAdminService({
    store,
    clock: ctx.clock,
    subscribe: (namespace, listener) => ctx.invalidator.subscribe(namespace, listener),
  });
  const users = createScimUsersService({ store, clock: ctx.clock });
  const groups = createScimGroupsService({ store, clock: ctx.clock });
  return {
    routes: [...createScimAdminRoutes(admin), ...createScimRoutes({ users, groups, resolveToken: admin.resolveToken })],
    events: scimEvents,
    handlers: [],
    jobs: [],
    services: { admin, users, groups },
  };
}
