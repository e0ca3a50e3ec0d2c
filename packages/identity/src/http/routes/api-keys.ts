import { defineRoute, json, noContent, type Principal, type Route } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { type ApiKeyService, CreateApiKeyInput } from '../../api-keys/service.js';
import { accountAuditContextOf } from '../../audit/account-actions.js';

const ApiKeyCreated = z.object({
  keyId: z.uuid(),
  apiKey: z.string().meta({ description: 'The key itself; shown only in this response.', example: 'sk_live_…' }),
  prefix: z.string().meta({ description: 'The first 16 characters, for display.' }),
  name: z.string(),
  scopes: z.array(z.string()),
  expiresAt: z.iso.datetime().nullable(),
});

const ApiKeyListed = z.object({
  keyId: z.uuid(),
  name: z.string(),
  prefix: z.string(),
  scopes: z.array(z.string()),
  expiresAt: z.iso.datetime().nullable(),
  lastUsedAt: z.iso.datetime().nullable(),
  createdAt: z.iso.datetime(),
});

const KeyParams = z.object({ keyId: z.uuid({ error: 'A key id is a GUID.' }) });

function ownerOf(principal: Principal | null): { userId: string; organizationId: string } {
  if (!principal?.userId) throw new ProblemError('Auth.Forbidden', 'API keys belong to users; sign in as one.');
  if (!principal.organizationId) throw new ProblemError('ApiKeys.OrganizationRequired');
  return { userId: principal.userId, organizationId: principal.organizationId };
}

/** `POST|GET /v1/identity/auth/keys` and `DELETE /v1/identity/auth/keys/{keyId}` (SPEC 4.7). */
export function createApiKeyRoutes(apiKeys: ApiKeyService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/identity/auth/keys',
      operationId: 'createApiKey',
      summary: 'Create an API key in your organization',
      description:
        'Needs a bearer token and the `ApiKeysCreate` permission. Scopes must lie within your own permissions (platform-only scopes: platform administrators only); without `scopes` the key gets every non-platform scope within them. At most 10 live keys per user. The key is shown once and stored only as a SHA-256 hash.',
      tags: ['API keys'],
      tenant: 'optional',
      request: { body: CreateApiKeyInput },
      problemCodes: ['ApiKeys.OrganizationRequired', 'ApiKeys.ScopeExceedsPermissions', 'ApiKeys.LimitReached'],
      responses: {
        201: { description: 'The key (shown once)', schema: ApiKeyCreated },
        403: {
          description:
            'No organization (`ApiKeys.OrganizationRequired`), no `ApiKeysCreate` (`Auth.Forbidden`), or a scope beyond your permissions (`ApiKeys.ScopeExceedsPermissions`)',
        },
        422: { description: 'You already have 10 live keys (`ApiKeys.LimitReached`)' },
      },
      handler: async (ctx) => {
        const { principal, body, headers } = ctx;
        if (principal?.kind !== 'user' || !principal.userId || !headers.get('authorization')) {
          throw new ProblemError('Auth.Forbidden', 'Creating an API key needs a user’s bearer access token.');
        }
        const created = await apiKeys.create(
          { userId: principal.userId, organizationId: principal.organizationId, permissions: principal.permissions },
          body,
          accountAuditContextOf(ctx),
        );
        return json(created, { status: 201, headers: { 'cache-control': 'no-store' } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/identity/auth/keys',
      operationId: 'listApiKeys',
      summary: 'Your API keys in this organization (without the keys)',
      tags: ['API keys'],
      permissions: ['ApiKeysRead'],
      responses: { 200: { description: 'Your unrevoked keys, newest first', schema: z.array(ApiKeyListed) } },
      handler: async ({ principal }) => {
        const { userId, organizationId } = ownerOf(principal);
        return json(await apiKeys.list(userId, organizationId), { headers: { 'cache-control': 'no-store' } });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/identity/auth/keys/{keyId}',
      operationId: 'deleteApiKey',
      summary: 'Delete one of your API keys; it stops working at once',
      description:
        'Any signed-in user may delete their own keys. An API key caller needs the `apikeys.manage` scope (`ApiKeyManage`) or `ApiKeysDelete`. Another user’s key, or one of another organization, answers 404.',
      tags: ['API keys'],
      request: { params: KeyParams },
      problemCodes: ['ApiKeys.NotFound'],
      responses: {
        204: { description: 'The key was deleted' },
        404: { description: 'You have no such key in this organization (`ApiKeys.NotFound`)' },
      },
      handler: async (ctx) => {
        const { principal, params } = ctx;
        const { userId, organizationId } = ownerOf(principal);
        if (
          principal?.kind === 'apiKey' &&
          !principal.permissions.has('ApiKeyManage') &&
          !principal.permissions.has('ApiKeysDelete')
        ) {
          throw new ProblemError('Auth.Forbidden', 'Deleting keys with an API key needs the apikeys.manage scope.');
        }
        await apiKeys.revoke(userId, organizationId, params.keyId, accountAuditContextOf(ctx));
        return noContent();
      },
    }),
  ];
}
