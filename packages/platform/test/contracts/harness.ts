import { coreMigrations } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { defineStoreContracts, recordingInvalidator } from '@idt/testing';
import { platformMigrations } from '../../src/knex.js';

export { winners } from '@idt/testing';

/**
 * The platform's contract suites (flags, settings, announcements, changelog,
 * webhooks) run on the core, identity and platform migrations, each store
 * built from `world().options`: the outbox, and an invalidator recording the
 * evictions of committed transactions. See `defineStoreContracts`.
 */
export const { ContractProbeEvent, describeStoreContract, itRunsOneUnitOfWork } = defineStoreContracts({
  module: 'platform',
  migrations: [coreMigrations, identityMigrations, platformMigrations],
  invalidator: recordingInvalidator,
  options: (effects) => effects,
});
