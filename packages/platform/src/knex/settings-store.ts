import type { AuditTrail, EventOutbox } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { knexUnitOfWork, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { JsonValue } from '../settings/definitions.js';
import type { SettingScope, SettingsStore, SettingsWrites, SettingValueRecord } from '../settings/store.js';
import { SETTINGS_TABLE } from './migrations.js';

/** Options of {@link createKnexSettingsStore}. */
export interface KnexSettingsStoreOptions {
  readonly db: Knex;
  /** Writes the events the settings service publishes, in the store's transaction. */
  readonly outbox: EventOutbox;
  /** Evicts the setting caches the settings service names, once the store's transaction commits. */
  readonly invalidator: Pick<CacheInvalidator, 'invalidateMany'>;
  /** Records the audit entries the settings service writes, in the store's transaction (`ctx.audit`); none without it. */
  readonly audit?: Pick<AuditTrail, 'record'>;
}

type Row = Record<string, unknown>;

function ownerKey(scope: SettingScope, organizationId: string | null, userId: string | null): string {
  if (scope === 'system') return '';
  if (scope === 'organization') return organizationId ?? '';
  return `${organizationId ?? ''}:${userId ?? ''}`;
}

function fromRow(row: Row): SettingValueRecord {
  return {
    scope: row.scope as SettingScope,
    organizationId: row.organization_id === null || row.organization_id === undefined ? null : String(row.organization_id),
    userId: row.user_id === null || row.user_id === undefined ? null : String(row.user_id),
    key: String(row.key),
    value: JSON.parse(String(row.value)) as JsonValue,
    updatedAt: toIso(row.updated_at),
    updatedBy: String(row.updated_by),
  };
}

/** The {@link SettingsWrites} primitives over one transaction. */
function settingsWrites(trx: Knex.Transaction): SettingsWrites {
  return {
    async has(target) {
      const present = await trx(SETTINGS_TABLE)
        .where({ scope: target.scope, owner_key: ownerKey(target.scope, target.organizationId, target.userId), key: target.key })
        .first('key');
      return present !== undefined;
    },

    async count(owner, prefix) {
      const counted = await trx(SETTINGS_TABLE)
        .where({ scope: owner.scope, owner_key: ownerKey(owner.scope, owner.organizationId, owner.userId) })
        .andWhere('key', 'like', `${prefix}%`)
        .count({ n: '*' })
        .first();
      return Number(counted?.n ?? 0);
    },

    async put(record) {
      await trx(SETTINGS_TABLE)
        .insert({
          scope: record.scope,
          owner_key: ownerKey(record.scope, record.organizationId, record.userId),
          key: record.key,
          organization_id: record.organizationId,
          user_id: record.userId,
          value: JSON.stringify(record.value),
          updated_at: record.updatedAt,
          updated_by: record.updatedBy,
        })
        .onConflict(['scope', 'owner_key', 'key'])
        .merge(['value', 'updated_at', 'updated_by']);
    },

    async remove(target) {
      const removed = await trx(SETTINGS_TABLE)
        .where({
          scope: target.scope,
          owner_key: ownerKey(target.scope, target.organizationId, target.userId),
          key: target.key,
        })
        .delete();
      return removed > 0;
    },
  };
}

/**
 * The knex {@link SettingsStore}: the settings service writes
 * `SettingChangedEvent` and the cache eviction in the store's transactions,
 * through `outbox` and `invalidator`.
 *
 * @example
 * const store = createKnexSettingsStore({ db, outbox: bus, invalidator });
 */
export function createKnexSettingsStore(options: KnexSettingsStoreOptions): SettingsStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, settingsWrites),

    async list(scope, organizationId, userId) {
      const rows = await db(SETTINGS_TABLE)
        .where({ scope, owner_key: ownerKey(scope, organizationId, userId) })
        .orderBy('key');
      return rows.map(fromRow);
    },
  };
}
