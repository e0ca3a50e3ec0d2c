import type { Clock } from '@idt/core';
import { type CacheInvalidator, coreMigrations } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { defineStoreContracts, type StoreContractEffects, type StoreContractWorld, startedInvalidator } from '@idt/testing';
import { createKnexAdapterClass, type OidcAdapter, oidcMigrations } from '../../src/knex.js';

export { winners } from '@idt/testing';

/**
 * What a contract suite of `@idt/oidc` runs against: a throwaway database of
 * one engine with the core, identity and oidc migrations, a real outbox, and
 * a started cache invalidator that also records the evictions of the
 * transactions that committed.
 */
export type ContractWorld = StoreContractWorld<CacheInvalidator, StoreContractEffects<CacheInvalidator>>;

/**
 * The store contract helpers of oidc (see `defineStoreContracts`):
 * `describeStoreContract` runs a suite on every engine of the run,
 * `itRunsOneUnitOfWork` checks a store's unit of work, and
 * `ContractProbeEvent` is the event only these suites publish.
 */
export const { ContractProbeEvent, describeStoreContract, itRunsOneUnitOfWork } = defineStoreContracts({
  module: 'oidc',
  migrations: [coreMigrations, identityMigrations, oidcMigrations],
  invalidator: startedInvalidator,
  options: (effects) => effects,
});

/**
 * The provider's own storage adapter on the world's database, timed by
 * `clock` and serving no client, as the suites seed the rows their store
 * reads and deletes; its class is built on first use (inside a test, once
 * the world exists).
 *
 * @example
 * const adapter = providerAdapter(world, createManualClock(START));
 * await adapter('Grant').upsert(grantId, { accountId, clientId }, 3600);
 */
export function providerAdapter(world: () => ContractWorld, clock: Clock): (model: string) => OidcAdapter {
  let Adapter: (new (name: string) => OidcAdapter) | undefined;
  return (model) => {
    Adapter ??= createKnexAdapterClass({
      db: world().db,
      clock,
      invalidator: world().invalidator,
      findClient: async () => undefined,
      clientMetadata: () => ({}),
    });
    return new Adapter(model);
  };
}

/** A `Date` `ms` milliseconds after `start` (an ISO 8601 instant or a `Date`). */
export function after(start: string | Date, ms: number): Date {
  return new Date(new Date(start).getTime() + ms);
}
