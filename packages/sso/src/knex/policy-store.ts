import type { AuditTrail, EventOutbox } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { knexUnitOfWork, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { SsoPolicyStore } from '../policy/store.js';
import { SSO_POLICIES_TABLE } from './migrations.js';

const flag = (value: unknown) => value === true || value === 1 || value === '1';

/**
 * The knex {@link SsoPolicyStore} (`sso_organization_policies`; no row is
 * `ssoRequired: false`).
 *
 * @example
 * const store = createKnexSsoPolicyStore({ db, outbox: bus, invalidator });
 */
export function createKnexSsoPolicyStore(options: {
  db: Knex;
  outbox: EventOutbox;
  invalidator: Pick<CacheInvalidator, 'invalidateMany'>;
  /** Records the audit entries the service writes in each transaction (`ctx.audit`); none without it. */
  audit?: Pick<AuditTrail, 'record'>;
}): SsoPolicyStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, (trx) => ({
      async put(organizationId, ssoRequired, updatedBy, at) {
        const current = await trx(SSO_POLICIES_TABLE).where({ organization_id: organizationId }).first('sso_required');
        await trx(SSO_POLICIES_TABLE)
          .insert({ organization_id: organizationId, sso_required: ssoRequired, updated_by: updatedBy, updated_at: at })
          .onConflict('organization_id')
          .merge();
        return (current ? flag(current.sso_required) : false) !== ssoRequired;
      },
    })),
    async get(organizationId) {
      const row = await db(SSO_POLICIES_TABLE).where({ organization_id: organizationId }).first();
      return {
        organizationId,
        ssoRequired: row ? flag(row.sso_required) : false,
        updatedAt: row ? toIsoOrNull(row.updated_at) : null,
      };
    },
  };
}
