import { coreMigrations } from '@idt/core/knex';
import { defineStoreContracts, recordingInvalidator } from '@idt/testing';
import { identityMigrations } from '../../src/knex.js';

export { winners } from '@idt/testing';

/**
 * Identity's contract suites run on the core and identity migrations; every
 * knex store of identity is built from `world().options` (the world's outbox,
 * and an invalidator that records the evictions of committed transactions).
 * See `defineStoreContracts` for `describeStoreContract` and `itRunsOneUnitOfWork`.
 */
export const { ContractProbeEvent, describeStoreContract, itRunsOneUnitOfWork } = defineStoreContracts({
  module: 'identity',
  migrations: [coreMigrations, identityMigrations],
  invalidator: recordingInvalidator,
  options: (effects) => effects,
});

/** An ISO 8601 instant `ms` milliseconds after `start`. */
export function after(start: string, ms: number): string {
  return new Date(new Date(start).getTime() + ms).toISOString();
}
