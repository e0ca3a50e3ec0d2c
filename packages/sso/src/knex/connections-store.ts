import type { AuditTrail, EventOutbox, SecretBox } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { knexUnitOfWork, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type {
  AttributeMapping,
  ConnectionKind,
  ConnectionRecord,
  OidcConnectionConfig,
  RoleMappingEntry,
  SamlConnectionConfig,
} from '../connections/records.js';
import type { ConnectionsStore, ConnectionsWrites } from '../connections/store.js';
import { SSO_CONNECTIONS_TABLE } from './migrations.js';

/** The purpose the connection secrets' key is derived for (see `createSecretBox`). */
export const SSO_SECRET_PURPOSE = 'idt-sso-secrets';

type Row = Record<string, unknown>;

const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
const flag = (value: unknown) => value === true || value === 1 || value === '1';

function connectionFromRow(row: Row, box: SecretBox): ConnectionRecord {
  const id = String(row.id);
  const kind = String(row.kind) as ConnectionKind;
  const config = JSON.parse(String(row.config)) as Record<string, unknown>;
  const sealed = text(row.sealed_secret);
  return {
    id,
    organizationId: text(row.organization_id),
    kind,
    name: String(row.name),
    enabled: flag(row.enabled),
    oidc: kind === 'oidc' ? (config as unknown as OidcConnectionConfig) : null,
    saml: kind === 'saml' ? (config as unknown as SamlConnectionConfig) : null,
    clientSecret: sealed === null ? null : box.open(sealed, id),
    attributeMapping: JSON.parse(String(row.attribute_mapping)) as AttributeMapping,
    roleMapping: JSON.parse(String(row.role_mapping)) as RoleMappingEntry[],
    defaultRole: text(row.default_role),
    allowIdpInitiated: flag(row.allow_idp_initiated),
    defaultRelayState: text(row.default_relay_state),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function connectionRow(connection: ConnectionRecord, box: SecretBox) {
  return {
    organization_id: connection.organizationId,
    kind: connection.kind,
    name: connection.name,
    enabled: connection.enabled,
    config: JSON.stringify(connection.kind === 'oidc' ? connection.oidc : connection.saml),
    sealed_secret: connection.clientSecret === null ? null : box.seal(connection.clientSecret, connection.id),
    attribute_mapping: JSON.stringify(connection.attributeMapping),
    role_mapping: JSON.stringify(connection.roleMapping),
    default_role: connection.defaultRole,
    allow_idp_initiated: connection.allowIdpInitiated,
    default_relay_state: connection.defaultRelayState,
    updated_at: connection.updatedAt,
  };
}

/** Rows of one scope: an organization's, or the platform's (`organization_id IS NULL`). */
function scoped(query: Knex.QueryBuilder, organizationId: string | null): Knex.QueryBuilder {
  return organizationId === null ? query.whereNull('organization_id') : query.where({ organization_id: organizationId });
}

function connectionsWrites(trx: Knex.Transaction, box: SecretBox): ConnectionsWrites {
  return {
    async find(organizationId, id) {
      const row = await scoped(trx(SSO_CONNECTIONS_TABLE).where({ id }), organizationId).first();
      return row ? connectionFromRow(row, box) : undefined;
    },
    async insert(connection) {
      await trx(SSO_CONNECTIONS_TABLE).insert({
        id: connection.id,
        ...connectionRow(connection, box),
        created_at: connection.createdAt,
      });
    },
    async update(connection) {
      const changed = await scoped(trx(SSO_CONNECTIONS_TABLE).where({ id: connection.id }), connection.organizationId).update(
        connectionRow(connection, box),
      );
      return changed > 0;
    },
    async delete(organizationId, id) {
      return (await scoped(trx(SSO_CONNECTIONS_TABLE).where({ id }), organizationId).delete()) > 0;
    },
  };
}

/**
 * The knex {@link ConnectionsStore}. Client secrets are sealed with `box`
 * (the connection id as associated data, so a sealed value moved to another
 * row does not open).
 *
 * @example
 * const store = createKnexConnectionsStore({ db, outbox: bus, invalidator, box: createSecretBox(secret, SSO_SECRET_PURPOSE) });
 */
export function createKnexConnectionsStore(options: {
  db: Knex;
  outbox: EventOutbox;
  /** Evicts the sign-in pages' cached realms when a change commits. */
  invalidator: Pick<CacheInvalidator, 'invalidateMany'>;
  box: SecretBox;
  /** Records the audit entries the service writes in each transaction (`ctx.audit`); none without it. */
  audit?: Pick<AuditTrail, 'record'>;
}): ConnectionsStore {
  const { db, box } = options;
  return {
    ...knexUnitOfWork(options, (trx) => connectionsWrites(trx, box)),
    async list(organizationId) {
      const rows = await scoped(db(SSO_CONNECTIONS_TABLE), organizationId).orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ]);
      return rows.map((row: Row) => connectionFromRow(row, box));
    },
    async find(organizationId, id) {
      const row = await scoped(db(SSO_CONNECTIONS_TABLE).where({ id }), organizationId).first();
      return row ? connectionFromRow(row, box) : undefined;
    },
    async findById(id) {
      const row = await db(SSO_CONNECTIONS_TABLE).where({ id }).first();
      return row ? connectionFromRow(row, box) : undefined;
    },
  };
}
