import { type Clock, createTtlCache, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces, type CacheSubscriber, EVERY_KEY } from '../access/cache-namespaces.js';
import { type AccountsActor, requirePermissions, requireUserId } from '../accounts/actor.js';
import { AccountAuditActions, type AccountAuditContext, auditActorFor, auditRequestFacts } from '../audit/account-actions.js';
import { OrganizationSecurityPolicyChangedEvent } from './events.js';
import type { OrganizationPolicyStore, OrganizationSecurityPolicy } from './store.js';

export type { OrganizationSecurityPolicy } from './store.js';

/** The permission that lets a member read and change the policy (owners and admins hold it). */
export const ORGANIZATION_POLICY_PERMISSION = 'OrganizationsUpdate';

/** The body of `PUT /v1/identity/organizations/{orgId}/security-policy`: at least one field; unknown fields are refused. */
export const UpdateOrganizationSecurityPolicyInput = z
  .strictObject({
    requireMfa: z.boolean().optional().describe('Members need a second factor before a token for the organization is issued.'),
    requireVerifiedEmail: z
      .boolean()
      .optional()
      .describe('Members need a verified e-mail address to sign in to the organization.'),
  })
  .refine((body) => body.requireMfa !== undefined || body.requireVerifiedEmail !== undefined, {
    message: 'Give requireMfa, requireVerifiedEmail or both.',
  });

/** Input of {@link OrganizationSecurityPolicyService.update}. */
export type UpdateOrganizationSecurityPolicyInput = z.input<typeof UpdateOrganizationSecurityPolicyInput>;

/** The answer of the security-policy routes. */
export const OrganizationSecurityPolicyRecord = z.object({
  organizationId: z.string(),
  requireMfa: z.boolean().describe('Members need a second factor before a token for the organization is issued.'),
  requireVerifiedEmail: z.boolean().describe('Members need a verified e-mail address to sign in to the organization.'),
});

/** An organization's policy with its id, as the routes answer it. */
export type OrganizationSecurityPolicyRecord = z.infer<typeof OrganizationSecurityPolicyRecord>;

/** The policy of an organization that does not exist: nothing required. */
const NOTHING_REQUIRED: OrganizationSecurityPolicy = Object.freeze({ requireMfa: false, requireVerifiedEmail: false });

/**
 * Organizations' account-security policies (`requireMfa`,
 * `requireVerifiedEmail`), read on every sign-in through an in-memory cache
 * that every instance empties when a policy changes.
 */
export interface OrganizationSecurityPolicyService {
  /**
   * The organization's policy (cached; evicted everywhere on change). An
   * unknown organization requires nothing.
   */
  get(organizationId: string): Promise<OrganizationSecurityPolicy>;
  /** Whether any active membership of the user is in an active organization that requires MFA (cached). */
  requiresMfaForUser(userId: string): Promise<boolean>;
  /**
   * Whether signing in to `organizationId` needs a verified e-mail address:
   * the global `IDT_REQUIRE_VERIFIED_EMAIL` setting, or the organization's
   * `requireVerifiedEmail`. `null` (no organization decided yet) asks only
   * the global setting.
   */
  requiresVerifiedEmail(organizationId: string | null): Promise<boolean>;
  /**
   * The policy for the routes: owners and admins of the organization
   * ({@link ORGANIZATION_POLICY_PERMISSION}) and platform administrators.
   *
   * @throws ProblemError `Identity.OrganizationNotFound` (404) for an organization the caller cannot reach,
   *   `Auth.Forbidden` (403) for a member without the permission.
   */
  read(actor: AccountsActor, organizationId: string): Promise<OrganizationSecurityPolicyRecord>;
  /**
   * Changes the policy (same callers as {@link read}), publishes
   * `OrganizationSecurityPolicyChangedEvent` and records
   * `identity.securityPolicy.changed` on the organization's trail, in one
   * transaction; the caches of every instance drop the old policy once it commits.
   *
   * @param context the audit actor (`auditActorOf(principal)`) and request facts; by default the acting user.
   * @throws ProblemError as {@link read}; a zod error for a bad body.
   */
  update(
    actor: AccountsActor,
    organizationId: string,
    input: UpdateOrganizationSecurityPolicyInput,
    context?: AccountAuditContext,
  ): Promise<OrganizationSecurityPolicyRecord>;
}

/** Options of {@link createOrganizationSecurityPolicyService}. */
export interface OrganizationSecurityPolicyServiceOptions {
  readonly store: OrganizationPolicyStore;
  /** Subscribes to the cache invalidations of every instance (the module's `CacheInvalidator.subscribe`). */
  readonly subscribe: CacheSubscriber;
  /** `IDT_REQUIRE_VERIFIED_EMAIL`: every sign-in needs a verified address. Default false. */
  readonly requireVerifiedEmail?: boolean;
  readonly clock?: Clock;
  /** How long a policy stays cached without an eviction; 30 s by default. */
  readonly ttlMs?: number;
}

/**
 * Creates the organization security policy service.
 *
 * @example
 * const policies = createOrganizationSecurityPolicyService({ store: createKnexOrganizationPolicyStore(deps), subscribe });
 * if ((await policies.get(organizationId)).requireMfa) { ... }
 */
export function createOrganizationSecurityPolicyService(
  options: OrganizationSecurityPolicyServiceOptions,
): OrganizationSecurityPolicyService {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const ttl = { ttlMs: options.ttlMs ?? 30_000, clock };
  const policies = createTtlCache<OrganizationSecurityPolicy>(ttl);
  const mfaByUser = createTtlCache<boolean>(ttl);
  options.subscribe(CacheNamespaces.organizationPolicies, (key) => (key === EVERY_KEY ? policies.clear() : policies.delete(key)));
  // A policy change can flip any member's answer; a membership change flips its user's.
  options.subscribe(CacheNamespaces.organizationPolicies, () => mfaByUser.clear());
  options.subscribe(CacheNamespaces.memberships, (key) => {
    if (key === EVERY_KEY) mfaByUser.clear();
    else mfaByUser.delete(key.split(':')[0] ?? key);
  });

  const get = (organizationId: string) => {
    const id = organizationId.toLowerCase();
    return policies.getOrLoad(id, async () => Object.freeze({ ...((await store.find(id)) ?? NOTHING_REQUIRED) }));
  };

  /** Owners and admins of the organization, and platform administrators; others learn nothing. */
  async function authorize(actor: AccountsActor, organizationId: string): Promise<void> {
    requireUserId(actor);
    if (actor.organizationId === organizationId) {
      requirePermissions(actor, ORGANIZATION_POLICY_PERMISSION);
      return;
    }
    const platformAdministrator =
      actor.userId !== null &&
      actor.organizationId !== null &&
      actor.permissions.has(ORGANIZATION_POLICY_PERMISSION) &&
      (await store.isPlatformAdministrator(actor.userId, actor.organizationId));
    if (!platformAdministrator) throw new ProblemError('Identity.OrganizationNotFound');
  }

  return {
    get,
    requiresMfaForUser: (userId) =>
      mfaByUser.getOrLoad(userId.toLowerCase(), () => store.anyMembershipRequiresMfa(userId.toLowerCase())),
    async requiresVerifiedEmail(organizationId) {
      if (options.requireVerifiedEmail === true) return true;
      if (organizationId === null) return false;
      return (await get(organizationId)).requireVerifiedEmail;
    },
    async read(actor, organizationId) {
      const id = organizationId.toLowerCase();
      await authorize(actor, id);
      const policy = await store.find(id);
      if (!policy) throw new ProblemError('Identity.OrganizationNotFound');
      return { organizationId: id, ...policy };
    },
    async update(actor, organizationId, input, context = {}) {
      const id = organizationId.toLowerCase();
      await authorize(actor, id);
      const patch = UpdateOrganizationSecurityPolicyInput.parse(input);
      const at = clock.now().toISOString();
      const updated = await store.transaction(async (tx) => {
        const policy = await tx.update(id, patch, at);
        if (!policy) return undefined;
        await tx.evict([{ namespace: CacheNamespaces.organizationPolicies, key: id }]);
        await tx.publish([
          {
            event: OrganizationSecurityPolicyChangedEvent,
            payload: { organizationId: id, ...policy, changedByUserId: requireUserId(actor), changedAt: at },
          },
        ]);
        await tx.audit?.([
          {
            action: AccountAuditActions.securityPolicyChanged.action,
            organizationId: id,
            actor: auditActorFor(context, requireUserId(actor)),
            target: { type: 'organization', id, display: null },
            ...auditRequestFacts(context),
            metadata: { set: { ...patch }, policy: { ...policy } },
          },
        ]);
        return policy;
      });
      if (!updated) throw new ProblemError('Identity.OrganizationNotFound');
      return { organizationId: id, ...updated };
    },
  };
}
