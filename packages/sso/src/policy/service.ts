import { type Clock, systemClock } from '@idt/core';
import { z } from 'zod';
import { authorizeOrganization, type SsoActor, type SsoDirectory } from '../access.js';
import { SsoAuditActions, ssoChangeEntry } from '../audit-actions.js';
import { SsoPolicyChangedEvent, type SsoPolicyChangedPayload } from '../events.js';
import { SIGN_IN_REALM_EVICTIONS } from '../sign-in/realm-cache.js';
import type { SsoPolicyStore } from './store.js';

/** The body of `PUT …/sso/policy`. */
export const SsoPolicyInput = z.strictObject({
  ssoRequired: z
    .boolean({ error: 'ssoRequired is true or false.' })
    .describe(
      'Refuse password, passkey and e-mailed-code sign-in for addresses of the organization’s verified domains: they sign in through its connection.',
    ),
});

/** The input of {@link SsoPolicyService.put}. */
export type SsoPolicyInput = z.output<typeof SsoPolicyInput>;

/** An organization's single sign-on policy, as the API answers it. */
export const SsoPolicyResponse = z.object({
  organizationId: z.string(),
  ssoRequired: z.boolean(),
  updatedAt: z.string().nullable().describe('ISO 8601 UTC; null while never set.'),
});

/** The answer of the policy routes. */
export type SsoPolicyResponse = z.output<typeof SsoPolicyResponse>;

/** Options of {@link createSsoPolicyService}. */
export interface SsoPolicyServiceOptions {
  readonly store: SsoPolicyStore;
  readonly directory: SsoDirectory;
  readonly clock?: Clock;
}

/**
 * An organization's single sign-on policy, for the same people as its
 * connections (owners, admins, platform administrators; another
 * organization answers 404). A change evicts the sign-in pages' realms on
 * every instance and publishes `SsoPolicyChangedEvent`, in one transaction.
 */
export interface SsoPolicyService {
  get(actor: SsoActor, organizationId: string): Promise<SsoPolicyResponse>;
  put(actor: SsoActor, organizationId: string, input: SsoPolicyInput): Promise<SsoPolicyResponse>;
}

/**
 * Creates the policy service.
 *
 * @example
 * const policies = createSsoPolicyService({ store, directory, clock });
 * await policies.put(principal, organizationId, { ssoRequired: true });
 */
export function createSsoPolicyService(options: SsoPolicyServiceOptions): SsoPolicyService {
  const { store, directory } = options;
  const clock = options.clock ?? systemClock;
  return {
    async get(actor, organizationId) {
      await authorizeOrganization(directory, actor, organizationId);
      return { ...(await store.get(organizationId)) };
    },
    async put(actor, organizationId, input) {
      await authorizeOrganization(directory, actor, organizationId);
      const { ssoRequired } = SsoPolicyInput.parse(input);
      const at = clock.now().toISOString();
      await store.transaction(async (tx) => {
        if (!(await tx.put(organizationId, ssoRequired, actor.userId, at))) return;
        await tx.evict(SIGN_IN_REALM_EVICTIONS);
        const payload: SsoPolicyChangedPayload = { organizationId, ssoRequired, changedBy: actor.userId, changedAt: at };
        await tx.publish([{ event: SsoPolicyChangedEvent, payload }]);
        await tx.audit?.([
          ssoChangeEntry(
            SsoAuditActions.policyChanged.action,
            actor,
            organizationId,
            { type: 'organization', id: organizationId, display: null },
            { from: !ssoRequired, to: ssoRequired },
          ),
        ]);
      });
      return { ...(await store.get(organizationId)) };
    },
  };
}
