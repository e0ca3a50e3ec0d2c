import type { Knex } from 'knex';
import type { RealmConnection, RealmStore } from '../sign-in/realm-cache.js';
import { SSO_CONNECTIONS_TABLE, SSO_DOMAINS_TABLE, SSO_POLICIES_TABLE } from './migrations.js';

const flag = (value: unknown) => value === true || value === 1 || value === '1';

/**
 * The knex {@link RealmStore}: two statements, the enabled connections (of
 * the platform and of active organizations, with the organization's name and
 * `ssoRequired`, oldest first) and the verified domains of organizations
 * with an enabled connection.
 *
 * @example
 * const realms = createRealmCache({ store: createKnexRealmStore(db), subscribe: invalidator.subscribe });
 */
export function createKnexRealmStore(db: Knex): RealmStore {
  return {
    async load() {
      const rows: Array<Record<string, unknown>> = await db(`${SSO_CONNECTIONS_TABLE} as c`)
        .leftJoin('identity_organizations as o', 'o.id', 'c.organization_id')
        .leftJoin(`${SSO_POLICIES_TABLE} as p`, 'p.organization_id', 'c.organization_id')
        .where('c.enabled', true)
        .andWhere((query) => query.whereNull('c.organization_id').orWhere('o.status', 'active'))
        .orderBy([
          { column: 'c.created_at', order: 'asc' },
          { column: 'c.id', order: 'asc' },
        ])
        .select('c.id', 'c.name', 'c.organization_id', 'o.name as organization_name', 'p.sso_required');
      const connections: RealmConnection[] = rows.map((row) => ({
        id: String(row.id),
        name: String(row.name),
        organizationId: row.organization_id === null || row.organization_id === undefined ? null : String(row.organization_id),
        organizationName:
          row.organization_name === null || row.organization_name === undefined ? null : String(row.organization_name),
        ssoRequired: flag(row.sso_required),
      }));
      const domains: Array<Record<string, unknown>> = await db(`${SSO_DOMAINS_TABLE} as d`)
        .whereNotNull('d.verified_at')
        .whereIn(
          'd.organization_id',
          db(SSO_CONNECTIONS_TABLE).where('enabled', true).whereNotNull('organization_id').select('organization_id'),
        )
        .select('d.domain', 'd.organization_id');
      return {
        connections,
        verifiedDomains: domains.map((row) => ({ domain: String(row.domain), organizationId: String(row.organization_id) })),
      };
    },
  };
}
