import { type Clock, isUniqueViolation } from '@idt/core';
import type { ScimEffects } from './roles.js';
import type { ScimStore, ScimTransaction } from './store.js';

/** A SCIM write: the work of one request inside its transaction, with the effects it decides and the time. */
export type ScimWork<T> = (tx: ScimTransaction, effects: ScimEffects, at: string) => Promise<T>;

/**
 * The write runner of a SCIM resource service: each write runs in one
 * transaction under the organization's lock (an organization that is gone
 * answers `notFound()`), then publishes and evicts what it decided; a
 * unique violation of a race answers `taken()`.
 *
 * @example
 * const write = createScimWrite(store, clock, notFound, () => new ScimError(409, 'Taken.', 'uniqueness'));
 * await write(organizationId, async (tx, effects, at) => tx.deleteGroup(organizationId, id));
 */
export function createScimWrite(store: ScimStore, clock: Clock, notFound: () => Error, taken: () => Error) {
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
