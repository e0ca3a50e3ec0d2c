import { coreMigrations } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { defineStoreContracts, withoutInvalidator } from '@idt/testing';
import { inquiriesMigrations } from '../../src/knex.js';

export { winners } from '@idt/testing';

/**
 * The inquiries store's contract suite runs on the core, identity and
 * inquiries migrations, the store built from `world().options` (the outbox
 * only: it keeps no cache, so there is no invalidator and its unit of work is
 * checked without evictions). See `defineStoreContracts`.
 */
export const { ContractProbeEvent, describeStoreContract, itRunsOneUnitOfWork } = defineStoreContracts({
  module: 'inquiries',
  migrations: [coreMigrations, identityMigrations, inquiriesMigrations],
  invalidator: withoutInvalidator,
  options: ({ db, outbox }) => ({ db, outbox }),
});
