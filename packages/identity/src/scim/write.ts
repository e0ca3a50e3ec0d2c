import { isUniqueViolation, systemClock } from '@idt/core';
import {
  type OrganizationAuditContext,
  type OrganizationAuditFacts,
  organizationAuditEntry,
} from '../audit/organization-actions.js';
import type { ScimResourceServiceOptions } from './resource-service.js';
import type { ScimEffects } from './roles.js';
import type { ScimTransaction } from './store.js';

/** A SCIM write: the work of one request inside its transaction, with the effects it decides and the time. */
export type ScimWork<T> = (tx: ScimTransaction, effects: ScimEffects, at: string) => Promise<T>;

/**
 * The write runner of a SCIM resource service: each write runs in one
 * transaction under the organization's lock (an organization that is gone
 * answers `notFound()`), then publishes and evicts what it decided; a
 * unique violation of a race answers `taken()`. Writes are stamped with the
 * service's clock (the system clock by default).
 *
 * @example
 * const write = createScimWrite({ store }, notFound, () => new ScimError(409, 'Taken.', 'uniqueness'));
 * await write(organizationId, async (tx, effects, at) => tx.deleteGroup(organizationId, id));
 */
export function createScimWrite(options: ScimResourceServiceOptions, notFound: () => Error, taken: () => Error) {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  return async function write<T>(organizationId: string, work: ScimWork<T>): Promise<T> {
    const at = clock.now().toISOString();
    try {
      return await store.transaction(async (tx) => {
        const effects: ScimEffects = { events: [], evictions: [] };
        if (!(await tx.lockOrganization(organizationId))) throw notFound();
        const result = await work(tx, effects, at);
        await tx.publish(effects.events);
        await tx.evict(effects.evictions);
        return result;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw taken();
      throw error;
    }
  };
}

/**
 * Records `facts` on the organization's audit trail in the write's
 * transaction (a store without a trail records nothing), as `context` says
 * who acted and from where.
 *
 * @example
 * await recordScimAudit(tx, context, { action: OrganizationAuditActions.scimGroupDeleted.action, organizationId, target });
 */
export async function recordScimAudit(
  tx: ScimTransaction,
  context: OrganizationAuditContext | undefined,
  ...facts: OrganizationAuditFacts[]
): Promise<void> {
  await tx.audit?.(facts.map((fact) => organizationAuditEntry(fact, context)));
}
