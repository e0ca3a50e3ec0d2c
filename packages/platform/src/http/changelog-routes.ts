import { defineRoute, json, type Route } from '@idt/core';
import { z } from 'zod';
import { callerOf } from '../access.js';
import { ChangelogEntryResponse, ChangelogInput, ChangelogListQuery } from '../changelog/schemas.js';
import type { ChangelogService } from '../changelog/service.js';

const TAGS = ['Changelog'];
const IdParams = z.object({ id: z.string().min(1).max(100).describe('The entry id (a GUID).') });
const VersionParams = z.object({ version: z.string().min(1).max(100).describe('A semantic version, e.g. 1.4.0') });
const notFound = { description: 'No such entry (`Changelog.NotFound`)' } as const;

/**
 * The routes of the changelog: anonymous reads of published entries under
 * `/v1/changelog`, writes by platform administrators under `/v1/admin/changelog`.
 *
 * @example
 * routes.push(...createChangelogRoutes(changelog));
 */
export function createChangelogRoutes(changelog: ChangelogService): Route[] {
  const admin = (
    method: 'POST',
    suffix: 'publish' | 'unpublish',
    summary: string,
    run: (principal: Parameters<ChangelogService['publish']>[0], id: string) => Promise<unknown>,
  ) =>
    defineRoute({
      method,
      path: `/v1/admin/changelog/{id}/${suffix}`,
      operationId: `${suffix}ChangelogEntry`,
      summary,
      description: 'Platform administrators with `ChangelogManage`. Idempotent.',
      tags: TAGS,
      permissions: ['ChangelogManage'],
      request: { params: IdParams },
      problemCodes: ['Changelog.NotFound'],
      responses: { 200: { description: 'The entry', schema: ChangelogEntryResponse }, 404: notFound },
      handler: async ({ principal, params }) => json(await run(callerOf(principal), params.id)),
    });

  return [
    defineRoute({
      method: 'GET',
      path: '/v1/changelog',
      operationId: 'listChangelog',
      summary: 'Published changelog entries, newest first',
      tags: TAGS,
      auth: 'anonymous',
      request: { query: ChangelogListQuery },
      responses: { 200: { description: 'The entries', schema: z.array(ChangelogEntryResponse) } },
      handler: async ({ query }) => json(await changelog.listPublished(query.limit)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/changelog/latest',
      operationId: 'getLatestChangelogEntry',
      summary: 'The newest published changelog entry',
      tags: TAGS,
      auth: 'anonymous',
      problemCodes: ['Changelog.NotFound'],
      responses: { 200: { description: 'The entry', schema: ChangelogEntryResponse }, 404: notFound },
      handler: async () => json(await changelog.latest()),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/changelog/{version}',
      operationId: 'getChangelogEntry',
      summary: 'A published changelog entry by version',
      tags: TAGS,
      auth: 'anonymous',
      request: { params: VersionParams },
      problemCodes: ['Changelog.NotFound'],
      responses: { 200: { description: 'The entry', schema: ChangelogEntryResponse }, 404: notFound },
      handler: async ({ params }) => json(await changelog.byVersion(params.version)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/admin/changelog',
      operationId: 'listAllChangelogEntries',
      summary: 'Every changelog entry, drafts included',
      description: 'Platform administrators with `ChangelogManage`.',
      tags: TAGS,
      permissions: ['ChangelogManage'],
      responses: { 200: { description: 'The entries', schema: z.array(ChangelogEntryResponse) } },
      handler: async ({ principal }) => json(await changelog.listAll(callerOf(principal))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/admin/changelog',
      operationId: 'createChangelogEntry',
      summary: 'Create an unpublished changelog entry',
      description: 'Platform administrators with `ChangelogManage`. A version that exists is 409 `Changelog.VersionExists`.',
      tags: TAGS,
      permissions: ['ChangelogManage'],
      request: { body: ChangelogInput },
      problemCodes: ['Changelog.VersionExists'],
      responses: {
        201: { description: 'The entry', schema: ChangelogEntryResponse, headers: { Location: '`/v1/admin/changelog/{id}`' } },
        409: { description: 'The version exists (`Changelog.VersionExists`)' },
      },
      handler: async ({ prefix, principal, body }) => {
        const created = await changelog.create(callerOf(principal), body);
        return json(created, { status: 201, headers: { location: `${prefix}/v1/admin/changelog/${created.id}` } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/admin/changelog/{id}',
      operationId: 'getChangelogEntryById',
      summary: 'One changelog entry, draft or not',
      tags: TAGS,
      permissions: ['ChangelogManage'],
      request: { params: IdParams },
      problemCodes: ['Changelog.NotFound'],
      responses: { 200: { description: 'The entry', schema: ChangelogEntryResponse }, 404: notFound },
      handler: async ({ principal, params }) => json(await changelog.get(callerOf(principal), params.id)),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/admin/changelog/{id}',
      operationId: 'updateChangelogEntry',
      summary: 'Replace a changelog entry’s fields',
      description: 'Its publication state stays. A version another entry has is 409 `Changelog.VersionExists`.',
      tags: TAGS,
      permissions: ['ChangelogManage'],
      request: { params: IdParams, body: ChangelogInput },
      problemCodes: ['Changelog.NotFound', 'Changelog.VersionExists'],
      responses: {
        200: { description: 'The entry', schema: ChangelogEntryResponse },
        404: notFound,
        409: { description: 'The version exists (`Changelog.VersionExists`)' },
      },
      handler: async ({ principal, params, body }) => json(await changelog.update(callerOf(principal), params.id, body)),
    }),
    admin('POST', 'publish', 'Publish a changelog entry', (actor, id) => changelog.publish(actor, id)),
    admin('POST', 'unpublish', 'Unpublish a changelog entry', (actor, id) => changelog.unpublish(actor, id)),
  ];
}
