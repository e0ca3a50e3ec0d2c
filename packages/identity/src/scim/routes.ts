import { isUuid, LightResponse, type Route } from '@idt/core';
import { ScimError, scimJson } from './errors.js';
import { GROUP_FILTER_ATTRIBUTES, parseScimFilter, USER_FILTER_ATTRIBUTES } from './filter.js';
import { isKnownGroupAttribute, parseGroupInput, toScimGroup } from './groups.js';
import type { ScimGroupsService } from './groups-service.js';
import { excludesMembers, listResponse, pageOf, type ScimEndpoint, type ScimTokenResolver, scimRoutes } from './http.js';
import { applyPatch, parsePatchOperations } from './patch.js';
import { discoveryDocuments } from './schemas.js';
import { isKnownUserAttribute, parseUserInput, toScimUser } from './users.js';
import type { ScimUsersService } from './users-service.js';

/** What the `/scim/v2` routes are built from. */
export interface ScimRoutesOptions {
  readonly users: ScimUsersService;
  readonly groups: ScimGroupsService;
  readonly resolveToken: ScimTokenResolver;
}

/** A resource id from the path: anything but a GUID is no resource of ours. */
function idOf(raw: string | undefined, what: 'User' | 'Group'): string {
  if (!raw || !isUuid(raw)) throw new ScimError(404, `No such ${what} in this organization.`);
  return raw.toLowerCase();
}

function filterOf(url: URL, attributes: typeof USER_FILTER_ATTRIBUTES) {
  const filter = url.searchParams.get('filter');
  return filter === null || filter.trim() === '' ? undefined : parseScimFilter(filter, attributes);
}

const location = (body: Record<string, unknown>) => String((body.meta as { location: string }).location);

/** The SCIM 2.0 service at `/scim/v2`: discovery, Users and Groups of the token's organization. */
export function createScimRoutes(options: ScimRoutesOptions): Route[] {
  const { users, groups } = options;
  const discovery = (base: string) => discoveryDocuments(base);
  const byId = <T extends { id: string }>(items: T[], id: string | undefined, what: string) => {
    const found = items.find((item) => item.id.toLowerCase() === (id ?? '').toLowerCase());
    if (!found) throw new ScimError(404, `No such ${what}.`);
    return found;
  };

  const endpoints: ScimEndpoint[] = [
    {
      method: 'GET',
      path: '/ServiceProviderConfig',
      operationId: 'scimServiceProviderConfig',
      summary: 'SCIM service provider configuration',
      anonymous: true,
      handler: async ({ base }) => scimJson(discovery(base).serviceProviderConfig),
    },
    {
      method: 'GET',
      path: '/ResourceTypes',
      operationId: 'scimResourceTypes',
      summary: 'SCIM resource types',
      anonymous: true,
      handler: async ({ base }) => {
        const types = discovery(base).resourceTypes;
        return scimJson(listResponse(types.length, 1, types));
      },
    },
    {
      method: 'GET',
      path: '/ResourceTypes/{id}',
      operationId: 'scimResourceType',
      summary: 'One SCIM resource type',
      anonymous: true,
      handler: async ({ base, ctx }) => scimJson(byId(discovery(base).resourceTypes, ctx.params.id, 'resource type')),
    },
    {
      method: 'GET',
      path: '/Schemas',
      operationId: 'scimSchemas',
      summary: 'SCIM schemas',
      anonymous: true,
      handler: async ({ base }) => {
        const schemas = discovery(base).schemas;
        return scimJson(listResponse(schemas.length, 1, schemas));
      },
    },
    {
      method: 'GET',
      path: '/Schemas/{id}',
      operationId: 'scimSchema',
      summary: 'One SCIM schema',
      anonymous: true,
      handler: async ({ base, ctx }) => scimJson(byId(discovery(base).schemas, ctx.params.id, 'schema')),
    },
    {
      method: 'GET',
      path: '/Users',
      operationId: 'scimListUsers',
      summary: 'List and filter the SCIM Users (members) of the organization',
      handler: async ({ ctx, organizationId, base }) => {
        const page = pageOf(ctx.url);
        const { total, records } = await users.list(organizationId, filterOf(ctx.url, USER_FILTER_ATTRIBUTES), page);
        return scimJson(
          listResponse(
            total,
            page.startIndex,
            records.map((record) => toScimUser(record, base)),
          ),
        );
      },
    },
    {
      method: 'POST',
      path: '/Users',
      operationId: 'scimCreateUser',
      summary: 'Provision a user into the organization',
      handler: async ({ organizationId, base, body, audit }) => {
        const created = toScimUser(await users.create(organizationId, parseUserInput(body), audit), base);
        return scimJson(created, { status: 201, headers: { location: location(created) } });
      },
    },
    {
      method: 'GET',
      path: '/Users/{id}',
      operationId: 'scimGetUser',
      summary: 'One SCIM User of the organization',
      handler: async ({ ctx, organizationId, base }) =>
        scimJson(toScimUser(await users.get(organizationId, idOf(ctx.params.id, 'User')), base)),
    },
    {
      method: 'PUT',
      path: '/Users/{id}',
      operationId: 'scimReplaceUser',
      summary: 'Replace a SCIM User',
      handler: async ({ ctx, organizationId, base, body, audit }) =>
        scimJson(toScimUser(await users.replace(organizationId, idOf(ctx.params.id, 'User'), parseUserInput(body), audit), base)),
    },
    {
      method: 'PATCH',
      path: '/Users/{id}',
      operationId: 'scimPatchUser',
      summary: 'Change a SCIM User with add, replace and remove operations',
      handler: async ({ ctx, organizationId, base, body, audit }) => {
        const id = idOf(ctx.params.id, 'User');
        const operations = parsePatchOperations(body, isKnownUserAttribute);
        const current = toScimUser(await users.get(organizationId, id), base);
        const input = parseUserInput(applyPatch(current, operations));
        return scimJson(toScimUser(await users.replace(organizationId, id, input, audit), base));
      },
    },
    {
      method: 'DELETE',
      path: '/Users/{id}',
      operationId: 'scimDeleteUser',
      summary: 'Deprovision a SCIM User: the membership is suspended and their access to the organization ends',
      handler: async ({ ctx, organizationId, audit }) => {
        await users.remove(organizationId, idOf(ctx.params.id, 'User'), audit);
        return new LightResponse(null, { status: 204 });
      },
    },
    {
      method: 'GET',
      path: '/Groups',
      operationId: 'scimListGroups',
      summary: 'List and filter the SCIM Groups of the organization',
      handler: async ({ ctx, organizationId, base }) => {
        const page = pageOf(ctx.url);
        const filter = filterOf(ctx.url, GROUP_FILTER_ATTRIBUTES);
        const { total, records } = await groups.list(organizationId, filter, page, !excludesMembers(ctx.url));
        return scimJson(
          listResponse(
            total,
            page.startIndex,
            records.map((record) => toScimGroup(record, base)),
          ),
        );
      },
    },
    {
      method: 'POST',
      path: '/Groups',
      operationId: 'scimCreateGroup',
      summary: 'Create a SCIM Group',
      handler: async ({ organizationId, base, body, audit }) => {
        const created = toScimGroup(await groups.create(organizationId, parseGroupInput(body), audit), base);
        return scimJson(created, { status: 201, headers: { location: location(created) } });
      },
    },
    {
      method: 'GET',
      path: '/Groups/{id}',
      operationId: 'scimGetGroup',
      summary: 'One SCIM Group',
      handler: async ({ ctx, organizationId, base }) =>
        scimJson(toScimGroup(await groups.get(organizationId, idOf(ctx.params.id, 'Group'), !excludesMembers(ctx.url)), base)),
    },
    {
      method: 'PUT',
      path: '/Groups/{id}',
      operationId: 'scimReplaceGroup',
      summary: 'Replace a SCIM Group',
      handler: async ({ ctx, organizationId, base, body, audit }) =>
        scimJson(
          toScimGroup(await groups.replace(organizationId, idOf(ctx.params.id, 'Group'), parseGroupInput(body), audit), base),
        ),
    },
    {
      method: 'PATCH',
      path: '/Groups/{id}',
      operationId: 'scimPatchGroup',
      summary: 'Rename a SCIM Group or add and remove members',
      handler: async ({ ctx, organizationId, base, body, audit }) => {
        const id = idOf(ctx.params.id, 'Group');
        const operations = parsePatchOperations(body, isKnownGroupAttribute);
        const current = toScimGroup(await groups.get(organizationId, id, true), base);
        const input = parseGroupInput(applyPatch(current, operations));
        return scimJson(toScimGroup(await groups.replace(organizationId, id, input, audit), base));
      },
    },
    {
      method: 'DELETE',
      path: '/Groups/{id}',
      operationId: 'scimDeleteGroup',
      summary: 'Delete a SCIM Group; its members lose the roles it granted',
      handler: async ({ ctx, organizationId, audit }) => {
        await groups.remove(organizationId, idOf(ctx.params.id, 'Group'), audit);
        return new LightResponse(null, { status: 204 });
      },
    },
  ];
  return scimRoutes(endpoints, options.resolveToken);
}
