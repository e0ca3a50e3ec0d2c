import { type Clock, createTtlCache, newId, randomToken, sha256Hex, systemClock } from '@idt/core';
import { ProblemError, ValidationProblem } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces, type CacheSubscriber, EVERY_KEY } from '../access/cache-namespaces.js';
import { type AccountsActor, requirePermissions, requireUserId } from '../accounts/actor.js';
import { OWNER_ROLE, RoleListSchema, resolveRoleNames } from '../accounts/role-policy.js';
import {
  boundedList,
  OrganizationAuditActions,
  type OrganizationAuditContext,
  organizationAuditEntry,
} from '../audit/organization-actions.js';
import { reconcileRoles, type ScimEffects } from './roles.js';
import type { ScimStore, ScimTokenIdentity, ScimTokenRecord } from './store.js';

/** The permission of SCIM administration in the organization itself (owners and admins hold it). */
export const SCIM_ADMIN_PERMISSION = 'OrganizationsUpdate';

/** The most live SCIM tokens one organization may hold. */
export const MAX_SCIM_TOKENS = 10;

/** The body of `POST /v1/identity/organizations/{orgId}/scim/tokens`. */
export const CreateScimTokenInput = z.strictObject({
  name: z
    .string({ error: 'Name the token, e.g. after the directory that uses it.' })
    .trim()
    .min(1, 'Name the token, e.g. after the directory that uses it.')
    .max(100, 'A token name has at most 100 characters.'),
});

/** The body of `PUT /v1/identity/organizations/{orgId}/scim/role-mappings`. */
export const ScimRoleMappingsInput = z.strictObject({
  mappings: z
    .array(
      z.strictObject({
        group: z
          .string()
          .trim()
          .min(1, 'Name the group (its SCIM displayName).')
          .max(200, 'A group name has at most 200 characters.'),
        roles: RoleListSchema,
      }),
    )
    .max(100, 'At most 100 mappings.'),
});

/** A new token: shown once. */
export interface CreatedScimToken extends ScimTokenRecord {
  /** The bearer token for the directory; stored only as its SHA-256. */
  readonly token: string;
}

/** The token API and the group→role mappings of an organization, for its owners and admins and platform administrators. */
export interface ScimAdminService {
  /** Creates a token, recording `identity.scim.tokenCreated` on the organization's trail. */
  createToken(
    actor: AccountsActor,
    organizationId: string,
    input: unknown,
    context?: OrganizationAuditContext,
  ): Promise<CreatedScimToken>;
  listTokens(actor: AccountsActor, organizationId: string): Promise<ScimTokenRecord[]>;
  /**
   * Revokes a token, recording `identity.scim.tokenRevoked`.
   *
   * @throws ProblemError `Scim.TokenNotFound`.
   */
  revokeToken(actor: AccountsActor, organizationId: string, tokenId: string, context?: OrganizationAuditContext): Promise<void>;
  listRoleMappings(actor: AccountsActor, organizationId: string): Promise<Array<{ group: string; roles: string[] }>>;
  /**
   * Replaces the mappings and recomputes the roles of every member of a group
   * they name (before or after); records `identity.scim.roleMappingsChanged`
   * when the mappings changed.
   */
  setRoleMappings(
    actor: AccountsActor,
    organizationId: string,
    input: unknown,
    context?: OrganizationAuditContext,
  ): Promise<Array<{ group: string; roles: string[] }>>;
  /** The organization, id and name of a live SCIM bearer token, or `undefined`. */
  resolveToken(token: string): Promise<ScimTokenIdentity | undefined>;
}

/** Dependencies of {@link createScimAdminService}. */
export interface ScimAdminServiceOptions {
  readonly store: ScimStore;
  readonly clock?: Clock;
  /**
   * Subscribes to cache evictions (see `createCacheInvalidator`): resolved
   * tokens are then kept for {@link SCIM_TOKEN_CACHE_TTL_MS} and dropped on
   * every instance when one is revoked. Without it every request reads the
   * token.
   */
  readonly subscribe?: CacheSubscriber;
}

/**
 * How long a resolved SCIM token is kept in memory (below the minute in
 * which its `lastUsedAt` is written once, so that still happens on a read).
 */
export const SCIM_TOKEN_CACHE_TTL_MS = 30_000;

const TOKEN_PREFIX = 'scim_';

/**
 * The SCIM administration service.
 *
 * @example
 * const admin = createScimAdminService({ store });
 * const { token } = await admin.createToken(principal, orgId, { name: 'Okta' });
 */
export function createScimAdminService(options: ScimAdminServiceOptions): ScimAdminService {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  // Directories send bursts of requests with one token: each would read it. Only live tokens are kept.
  const resolved = options.subscribe
    ? createTtlCache<ScimTokenIdentity>({ ttlMs: SCIM_TOKEN_CACHE_TTL_MS, clock, max: 1000 })
    : undefined;
  if (resolved) options.subscribe?.(CacheNamespaces.scimTokens, () => resolved.clear());

  /** Owners and admins of the organization, and platform administrators; others learn nothing (404). */
  async function authorize(actor: AccountsActor, organizationId: string): Promise<string> {
    const id = organizationId.toLowerCase();
    requireUserId(actor);
    if (actor.organizationId === id) {
      requirePermissions(actor, SCIM_ADMIN_PERMISSION);
      return id;
    }
    const platformAdministrator =
      actor.userId !== null &&
      actor.organizationId !== null &&
      actor.permissions.has(SCIM_ADMIN_PERMISSION) &&
      (await store.isPlatformAdministrator(actor.userId, actor.organizationId));
    if (!platformAdministrator || !(await store.organizationExists(id))) throw new ProblemError('Identity.OrganizationNotFound');
    return id;
  }

  return {
    async createToken(actor, organizationId, input, context) {
      const id = await authorize(actor, organizationId);
      const { name } = CreateScimTokenInput.parse(input);
      if ((await store.countTokens(id)) >= MAX_SCIM_TOKENS) throw new ProblemError('Scim.TokenLimitReached');
      const token = `${TOKEN_PREFIX}${randomToken(32)}`;
      const record = { id: newId(), name, prefix: token.slice(0, 16), createdAt: clock.now().toISOString(), lastUsedAt: null };
      await store.transaction(async (tx) => {
        await tx.insertToken({
          id: record.id,
          organizationId: id,
          name,
          prefix: record.prefix,
          tokenHash: sha256Hex(token),
          createdByUserId: actor.userId,
          at: record.createdAt,
        });
        await tx.audit?.([
          organizationAuditEntry(
            {
              action: OrganizationAuditActions.scimTokenCreated.action,
              organizationId: id,
              target: { type: 'scimToken', id: record.id, display: name },
            },
            context,
            actor,
          ),
        ]);
      });
      return { ...record, token };
    },
    async listTokens(actor, organizationId) {
      return store.listTokens(await authorize(actor, organizationId));
    },
    async revokeToken(actor, organizationId, tokenId, context) {
      const id = await authorize(actor, organizationId);
      const key = tokenId.toLowerCase();
      const at = clock.now().toISOString();
      const revoked = await store.transaction(async (tx) => {
        const token = await tx.revokeToken(id, key, at);
        if (!token) return false;
        // Every instance forgets the tokens it resolved once this commits: the next request with it is refused.
        await tx.evict([{ namespace: CacheNamespaces.scimTokens, key: EVERY_KEY }]);
        await tx.audit?.([
          organizationAuditEntry(
            {
              action: OrganizationAuditActions.scimTokenRevoked.action,
              organizationId: id,
              target: { type: 'scimToken', id: key, display: token.name },
            },
            context,
            actor,
          ),
        ]);
        return true;
      });
      if (!revoked) throw new ProblemError('Scim.TokenNotFound');
    },
    async listRoleMappings(actor, organizationId) {
      return store.listRoleMappings(await authorize(actor, organizationId));
    },
    async setRoleMappings(actor, organizationId, input, context) {
      const id = await authorize(actor, organizationId);
      const { mappings } = ScimRoleMappingsInput.parse(input);
      const seen = new Set<string>();
      mappings.forEach((mapping, index) => {
        const key = mapping.group.toLowerCase();
        if (seen.has(key)) throw new ValidationProblem({ [`mappings[${index}].group`]: ['Each group is mapped once.'] });
        seen.add(key);
        if (mapping.roles.includes(OWNER_ROLE)) {
          throw new ValidationProblem({
            [`mappings[${index}].roles`]: ['The owner role is never granted through a directory group.'],
          });
        }
      });
      const at = clock.now().toISOString();
      await store.transaction(async (tx) => {
        const effects: ScimEffects = { events: [], evictions: [] };
        if (!(await tx.lockOrganization(id))) throw new ProblemError('Identity.OrganizationNotFound');
        const custom = await tx.customRoleNames(id);
        const customRoles = new Map([...custom].map((name) => [name, [] as string[]]));
        const resolved = mappings.map((mapping, index) => ({
          group: mapping.group,
          roles: resolveRoleNames(mapping.roles, customRoles, `mappings[${index}].roles`),
        }));
        const previous = await tx.roleMappings(id);
        await tx.replaceRoleMappings(id, resolved, at);
        const affected = await tx.membersOfGroupsNamed(id, [...new Set([...previous.keys(), ...seen])]);
        await reconcileRoles(tx, id, affected, at, effects, new Set([...previous.values()].flat()));
        await tx.publish(effects.events);
        await tx.evict(effects.evictions);
        const described = (map: ReadonlyMap<string, readonly string[]>) =>
          [...map].map(([group, roles]) => `${group}:${[...roles].sort().join(' ')}`).sort();
        const before = described(previous);
        const after = described(new Map(resolved.map((mapping) => [mapping.group.toLowerCase(), mapping.roles])));
        if (before.join('\n') !== after.join('\n')) {
          await tx.audit?.([
            organizationAuditEntry(
              {
                action: OrganizationAuditActions.scimRoleMappingsChanged.action,
                organizationId: id,
                target: { type: 'organization', id, display: null },
                metadata: {
                  mappings: boundedList(
                    resolved.map((mapping) => ({ group: mapping.group, roles: [...mapping.roles] })),
                    6_000,
                  ),
                  mappingCount: resolved.length,
                  previousMappings: boundedList(
                    [...previous].map(([group, roles]) => ({ group, roles: [...roles] })),
                    6_000,
                  ),
                  previousMappingCount: previous.size,
                  membersChanged: effects.events.length,
                },
              },
              context,
              actor,
            ),
          ]);
        }
      });
      return store.listRoleMappings(id);
    },
    async resolveToken(token) {
      if (!token.startsWith(TOKEN_PREFIX) || token.length > 200) return undefined;
      const hash = sha256Hex(token);
      const load = () => store.resolveToken(hash, clock.now().toISOString());
      if (!resolved) return load();
      // An unknown token's answer is not kept: it could be anything anyone sends.
      return resolved.getOrLoad(hash, load as () => Promise<ScimTokenIdentity>);
    },
  };
}
