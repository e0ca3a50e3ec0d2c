import { isUuid, LightResponse, type Route } from '@idt/core';
import { ScimError, scimJson } from './errors.js';
import { type FilterableAttributes, GROUP_FILTER_ATTRIBUTES, parseScimFilter, USER_FILTER_ATTRIBUTES } from './filter.js';
import { isKnownGroupAttribute, parseGroupInput, toScimGroup } from './groups.js';
import type { ScimGroupsService } from './groups-service.js';
import { excludesMembers, listResponse, pageOf, type ScimEndpoint, type ScimTokenResolver, scimRoutes } from './http.js';
import { applyPatch, parsePatchOperations } from './patch.js';
import type { ScimResourceService } from './resource-service.js';
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

function filterOf(url: URL, attributes: FilterableAttributes) {
  const filter = url.searchParams.get('filter');
  return filter === null || filter.trim() === '' ? undefined : parseScimFilter(filter, attributes);
}

const location = (body: Record<string, unknown>) => String((body.meta as { location: string }).location);

/**
 * The list and the by-id endpoints of a discovery collection (`/ResourceTypes`,
 * `/Schemas`), answered without a token; `what` names one of its documents.
 */
function discoveryEndpoints(
  collection: 'ResourceTypes' | 'Schemas',
  what: string,
  documentsOf: (base: string) => Array<{ id: string }>,
): ScimEndpoint[] {
  return [
    {
      method: 'GET',
      path: `/${collection}`,
      operationId: `scim${collection}`,
      summary: `SCIM ${what}s`,
      anonymous: true,
      handler: async ({ base }) => {
        const documents = documentsOf(base);
        return scimJson(listResponse(documents.length, 1, documents));
      },
    },
    {
      method: 'GET',
      path: `/${collection}/{id}`,
      operationId: `scim${collection.slice(0, -1)}`,
      summary: `One SCIM ${what}`,
      anonymous: true,
      handler: async ({ base, ctx }) => {
        const id = (ctx.params.id ?? '').toLowerCase();
        const found = documentsOf(base).find((document) => document.id.toLowerCase() === id);
        if (!found) throw new ScimError(404, `No such ${what}.`);
        return scimJson(found);
      },
    },
  ];
}

/** What the endpoints of one SCIM resource type (Users, Groups) are built from. */
interface ResourceEndpointsOptions<TRecord, TInput> {
  /** The resource type: its paths are `/${name}s` and `/${name}s/{id}`. */
  readonly name: 'User' | 'Group';
  /**
   * The service; reads are told whether to read a Group's members (all of
   * them for a PATCH, else unless `excludedAttributes` names `members`), which
   * the Users service does not take.
   */
  readonly service: ScimResourceService<TRecord, TInput, [withMembers: boolean]>;
  readonly filterAttributes: FilterableAttributes;
  /** Reads a POST or PUT body, or a resource after PATCH operations. */
  readonly parse: (body: unknown) => TInput;
  /** The SCIM representation of a resource, `meta.location` under `base`. */
  readonly render: (record: TRecord, base: string) => Record<string, unknown>;
  /** Whether a root attribute name belongs to the resource's schema (for PATCH paths). */
  readonly isKnownAttribute: (name: string) => boolean;
  /** The summary of each endpoint. */
  readonly summaries: Readonly<Record<'list' | 'create' | 'get' | 'replace' | 'patch' | 'remove', string>>;
}

/** The list, create, get, replace, patch and delete endpoints of one SCIM resource type. */
function resourceEndpoints<TRecord, TInput>(options: ResourceEndpointsOptions<TRecord, TInput>): ScimEndpoint[] {
  const { name, service, parse, render, summaries } = options;
  const collection = `/${name}s`;
  const item = `${collection}/{id}`;
  return [
    {
      method: 'GET',
      path: collection,
      operationId: `scimList${name}s`,
      summary: summaries.list,
      handler: async ({ ctx, organizationId, base }) => {
        const page = pageOf(ctx.url);
        const filter = filterOf(ctx.url, options.filterAttributes);
        const { total, records } = await service.list(organizationId, filter, page, !excludesMembers(ctx.url));
        return scimJson(
          listResponse(
            total,
            page.startIndex,
            records.map((record) => render(record, base)),
          ),
        );
      },
    },
    {
      method: 'POST',
      path: collection,
      operationId: `scimCreate${name}`,
      summary: summaries.create,
      handler: async ({ organizationId, base, body, audit }) => {
        const created = render(await service.create(organizationId, parse(body), audit), base);
        return scimJson(created, { status: 201, headers: { location: location(created) } });
      },
    },
    {
      method: 'GET',
      path: item,
      operationId: `scimGet${name}`,
      summary: summaries.get,
      handler: async ({ ctx, organizationId, base }) =>
        scimJson(render(await service.get(organizationId, idOf(ctx.params.id, name), !excludesMembers(ctx.url)), base)),
    },
    {
      method: 'PUT',
      path: item,
      operationId: `scimReplace${name}`,
      summary: summaries.replace,
      handler: async ({ ctx, organizationId, base, body, audit }) =>
        scimJson(render(await service.replace(organizationId, idOf(ctx.params.id, name), parse(body), audit), base)),
    },
    {
      method: 'PATCH',
      path: item,
      operationId: `scimPatch${name}`,
      summary: summaries.patch,
      handler: async ({ ctx, organizationId, base, body, audit }) => {
        const id = idOf(ctx.params.id, name);
        const operations = parsePatchOperations(body, options.isKnownAttribute);
        const current = render(await service.get(organizationId, id, true), base);
        const input = parse(applyPatch(current, operations));
        return scimJson(render(await service.replace(organizationId, id, input, audit), base));
      },
    },
    {
      method: 'DELETE',
      path: item,
      operationId: `scimDelete${name}`,
      summary: summaries.remove,
      handler: async ({ ctx, organizationId, audit }) => {
        await service.remove(organizationId, idOf(ctx.params.id, name), audit);
        return new LightResponse(null, { status: 204 });
      },
    },
  ];
}

/** The SCIM 2.0 service at `/scim/v2`: discovery, Users and Groups of the token's organization. */
export function createScimRoutes(options: ScimRoutesOptions): Route[] {
  const { users, groups } = options;
  const discovery = (base: string) => discoveryDocuments(base);

  const endpoints: ScimEndpoint[] = [
    {
      method: 'GET',
      path: '/ServiceProviderConfig',
      operationId: 'scimServiceProviderConfig',
      summary: 'SCIM service provider configuration',
      anonymous: true,
      handler: async ({ base }) => scimJson(discovery(base).serviceProviderConfig),
    },
    ...discoveryEndpoints('ResourceTypes', 'resource type', (base) => discovery(base).resourceTypes),
    ...discoveryEndpoints('Schemas', 'schema', (base) => discovery(base).schemas),
    ...resourceEndpoints({
      name: 'User',
      service: users,
      filterAttributes: USER_FILTER_ATTRIBUTES,
      parse: parseUserInput,
      render: toScimUser,
      isKnownAttribute: isKnownUserAttribute,
      summaries: {
        list: 'List and filter the SCIM Users (members) of the organization',
        create: 'Provision a user into the organization',
        get: 'One SCIM User of the organization',
        replace: 'Replace a SCIM User',
        patch: 'Change a SCIM User with add, replace and remove operations',
        remove: 'Deprovision a SCIM User: the membership is suspended and their access to the organization ends',
      },
    }),
    ...resourceEndpoints({
      name: 'Group',
      service: groups,
      filterAttributes: GROUP_FILTER_ATTRIBUTES,
      parse: parseGroupInput,
      render: toScimGroup,
      isKnownAttribute: isKnownGroupAttribute,
      summaries: {
        list: 'List and filter the SCIM Groups of the organization',
        create: 'Create a SCIM Group',
        get: 'One SCIM Group',
        replace: 'Replace a SCIM Group',
        patch: 'Rename a SCIM Group or add and remove members',
        remove: 'Delete a SCIM Group; its members lose the roles it granted',
      },
    }),
    ...unsupportedEndpoints(),
  ];
  return scimRoutes(endpoints, options.resolveToken);
}

/**
 * The optional parts of RFC 7644 this service does not offer, answered with
 * SCIM's own 501 error rather than a 404 or 405 a SCIM client cannot read:
 * `/Me` (§3.11: a SCIM token names an organization, not a user), `/Bulk`
 * (§3.7; `bulk.supported` is false) and the `/.search` POSTs (§3.4.3; filter
 * with GET).
 */
function unsupportedEndpoints(): ScimEndpoint[] {
  const refuse = (detail: string) => async (): Promise<never> => {
    throw new ScimError(501, detail);
  };
  const me = refuse('/Me is not supported: a SCIM token acts for an organization, not a user. Use /Users/{id}.');
  return [
    ...(['GET', 'PUT', 'PATCH', 'DELETE', 'POST'] as const).map(
      (method): ScimEndpoint => ({
        method,
        path: '/Me',
        operationId: `scimMe${method.charAt(0)}${method.slice(1).toLowerCase()}`,
        summary: '/Me is not supported (501)',
        ignoresBody: true,
        handler: me,
      }),
    ),
    {
      method: 'POST',
      path: '/Bulk',
      operationId: 'scimBulk',
      summary: 'Bulk operations are not supported (501; bulk.supported is false)',
      ignoresBody: true,
      handler: refuse('Bulk operations are not supported: send each operation on its own.'),
    },
    ...(['', '/Users', '/Groups'] as const).map(
      (prefix): ScimEndpoint => ({
        method: 'POST',
        path: `${prefix}/.search`,
        operationId: `scimSearch${prefix.replace('/', '') || 'All'}`,
        summary: 'Searching by POST is not supported (501); list with GET and a filter',
        ignoresBody: true,
        handler: refuse('Searching by POST is not supported: use GET with a filter.'),
      }),
    ),
  ];
}
