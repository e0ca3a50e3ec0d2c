import type { AuditTrail, EventOutbox } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { isUniqueViolation, knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { DomainRecord } from '../connections/records.js';
import type { DomainsStore, DomainsWrites } from '../domains/store.js';
import { SSO_DOMAINS_TABLE } from './migrations.js';

type Row = Record<string, unknown>;

function domainFromRow(row: Row): DomainRecord {
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    domain: String(row.domain),
    token: String(row.token),
    verifiedAt: toIsoOrNull(row.verified_at),
    createdAt: toIso(row.created_at),
  };
}

function domainsWrites(trx: Knex.Transaction): DomainsWrites {
  return {
    async insert(domain) {
      const present = await trx(SSO_DOMAINS_TABLE)
        .where({ organization_id: domain.organizationId, domain: domain.domain })
        .first('id');
      if (present) return 'exists';
      try {
        await trx(SSO_DOMAINS_TABLE).insert({
          id: domain.id,
          organization_id: domain.organizationId,
          domain: domain.domain,
          token: domain.token,
          verified_at: domain.verifiedAt,
          created_at: domain.createdAt,
        });
      } catch (error) {
        if (isUniqueViolation(error)) return 'exists';
        throw error;
      }
      return 'created';
    },
    async markVerified(organizationId, id, at) {
      try {
        const changed = await trx(SSO_DOMAINS_TABLE)
          .where({ id, organization_id: organizationId })
          .whereNull('verified_at')
          .update({ verified_at: at });
        return changed > 0 ? 'verified' : 'missing';
      } catch (error) {
        if (isUniqueViolation(error)) return 'taken';
        throw error;
      }
    },
    async delete(organizationId, id) {
      return (await trx(SSO_DOMAINS_TABLE).where({ id, organization_id: organizationId }).delete()) > 0;
    },
  };
}

/**
 * The knex {@link DomainsStore}: every statement filters by organization,
 * except {@link DomainsStore.verifiedBy}, which answers for home-realm
 * discovery.
 *
 * @example
 * const store = createKnexDomainsStore({ db, outbox: bus, invalidator });
 */
export function createKnexDomainsStore(options: {
  db: Knex;
  outbox: EventOutbox;
  /** Evicts the sign-in pages' cached realms when a change commits. */
  invalidator: Pick<CacheInvalidator, 'invalidateMany'>;
  /** Records the audit entries the service writes in each transaction (`ctx.audit`); none without it. */
  audit?: Pick<AuditTrail, 'record'>;
}): DomainsStore {
  const { db } = options;
  return {
    ...knexUnitOfWork(options, domainsWrites),
    async list(organizationId) {
      const rows = await db(SSO_DOMAINS_TABLE)
        .where({ organization_id: organizationId })
        .orderBy([
          { column: 'created_at', order: 'asc' },
          { column: 'id', order: 'asc' },
        ]);
      return rows.map(domainFromRow);
    },
    async find(organizationId, id) {
      const row = await db(SSO_DOMAINS_TABLE).where({ id, organization_id: organizationId }).first();
      return row ? domainFromRow(row) : undefined;
    },
    async verifiedBy(domain) {
      const row = await db(SSO_DOMAINS_TABLE).where({ domain }).whereNotNull('verified_at').first('organization_id');
      return row ? String(row.organization_id) : undefined;
    },
  };
}
