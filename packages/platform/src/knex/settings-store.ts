import type { EventOutbox } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import { SETTINGS_CACHE, SettingChangedEvent, type SettingChangedPayload } from '../events.js';
import type { JsonValue } from '../settings/definitions.js';
import type { SettingScope, SettingsStore, SettingTarget, SettingValueRecord } from '../settings/store.js';
import { SETTINGS_TABLE } from './migrations.js';

/** Options of {@link createKnexSettingsStore}. */
export interface KnexSettingsStoreOptions {
  readonly db: Knex;
  readonly outbox: EventOutbox;
  readonly invalidator: CacheInvalidator;
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

/**
 * The knex {@link SettingsStore}: every write also writes
 * `SettingChangedEvent` and the cache eviction (key: the organization id,
 * or `system`) in its transaction.
 *
 * @example
 * const store = createKnexSettingsStore({ db, outbox: bus, invalidator });
 */
export function createKnexSettingsStore(options: KnexSettingsStoreOptions): SettingsStore {
  const { db, outbox, invalidator } = options;

  async function announce(
    trx: Knex.Transaction,
    target: SettingTarget,
    change: SettingChangedPayload['change'],
    at: string,
    by: string,
  ) {
    const payload: SettingChangedPayload = {
      scope: target.scope,
      organizationId: target.organizationId,
      userId: target.userId,
      key: target.key,
      change,
      changedBy: by,
      changedAt: at,
    };
    await outbox.write(trx, [{ event: SettingChangedEvent, payload }]);
    await invalidator.invalidate(SETTINGS_CACHE, target.scope === 'system' ? 'system' : (target.organizationId ?? 'system'), trx);
  }

  return {
    async list(scope, organizationId, userId) {
      const rows = await db(SETTINGS_TABLE)
        .where({ scope, owner_key: ownerKey(scope, organizationId, userId) })
        .orderBy('key');
      return rows.map(fromRow);
    },

    upsert: (record, { customLimit } = {}) =>
      db.transaction(async (trx) => {
        const owner = ownerKey(record.scope, record.organizationId, record.userId);
        if (customLimit !== undefined) {
          const present = await trx(SETTINGS_TABLE)
            .where({ scope: record.scope, owner_key: owner, key: record.key })
            .first('key');
          if (!present) {
            const counted = await trx(SETTINGS_TABLE)
              .where({ scope: record.scope, owner_key: owner })
              .andWhere('key', 'like', 'custom.%')
              .count({ n: '*' })
              .first();
            if (Number(counted?.n ?? 0) >= customLimit) return 'limit-reached' as const;
          }
        }
        await trx(SETTINGS_TABLE)
          .insert({
            scope: record.scope,
            owner_key: owner,
            key: record.key,
            organization_id: record.organizationId,
            user_id: record.userId,
            value: JSON.stringify(record.value),
            updated_at: record.updatedAt,
            updated_by: record.updatedBy,
          })
          .onConflict(['scope', 'owner_key', 'key'])
          .merge(['value', 'updated_at', 'updated_by']);
        await announce(trx, record, 'set', record.updatedAt, record.updatedBy);
        return 'saved' as const;
      }),

    remove: (target, at, by) =>
      db.transaction(async (trx) => {
        const removed = await trx(SETTINGS_TABLE)
          .where({
            scope: target.scope,
            owner_key: ownerKey(target.scope, target.organizationId, target.userId),
            key: target.key,
          })
          .delete();
        if (removed === 0) return false;
        await announce(trx, target, 'reset', at, by);
        return true;
      }),
  };
}
