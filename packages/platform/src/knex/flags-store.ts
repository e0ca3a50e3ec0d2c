import type { EventOutbox } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import { FeatureFlagChangedEvent, type FeatureFlagChangedPayload, FLAGS_CACHE } from '../events.js';
import type { FlagOverride, FlagType, FlagVariant } from '../flags/evaluate.js';
import type { FlagRecord, FlagsStore } from '../flags/store.js';
import { FLAG_OVERRIDES_TABLE, FLAGS_TABLE } from './migrations.js';

/** Options of {@link createKnexFlagsStore}. */
export interface KnexFlagsStoreOptions {
  readonly db: Knex;
  readonly outbox: EventOutbox;
  readonly invalidator: CacheInvalidator;
}

type Row = Record<string, unknown>;

const bool = (value: unknown) => value === true || value === 1;

function flagFromRow(row: Row): FlagRecord {
  return {
    key: String(row.key),
    name: String(row.name),
    description: String(row.description),
    type: String(row.type) as FlagType,
    defaultEnabled: bool(row.default_enabled),
    rolloutPercentage: Number(row.rollout_percentage),
    variants: JSON.parse(String(row.variants)) as FlagVariant[],
    defaultVariant: row.default_variant === null || row.default_variant === undefined ? null : String(row.default_variant),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function overrideFromRow(row: Row): FlagOverride {
  return {
    flagKey: String(row.flag_key),
    organizationId: String(row.organization_id),
    userId: row.user_id === '' ? null : String(row.user_id),
    enabled: row.enabled === null || row.enabled === undefined ? null : bool(row.enabled),
    variant: row.variant === null || row.variant === undefined ? null : String(row.variant),
    expiresAt: toIsoOrNull(row.expires_at),
  };
}

function flagRow(flag: FlagRecord) {
  return {
    name: flag.name,
    description: flag.description,
    type: flag.type,
    default_enabled: flag.defaultEnabled,
    rollout_percentage: flag.rolloutPercentage,
    variants: JSON.stringify(flag.variants),
    default_variant: flag.defaultVariant,
    updated_at: flag.updatedAt,
  };
}

/**
 * The knex {@link FlagsStore}: every write also writes
 * `FeatureFlagChangedEvent` and the cache eviction (`definitions`, or the
 * organization id of an override) in its transaction.
 *
 * @example
 * const store = createKnexFlagsStore({ db, outbox: bus, invalidator });
 */
export function createKnexFlagsStore(options: KnexFlagsStoreOptions): FlagsStore {
  const { db, outbox, invalidator } = options;

  async function announce(trx: Knex.Transaction, payload: FeatureFlagChangedPayload) {
    await outbox.write(trx, [{ event: FeatureFlagChangedEvent, payload }]);
    await invalidator.invalidate(FLAGS_CACHE, payload.organizationId ?? 'definitions', trx);
    // A deleted flag takes every organization's overrides with it.
    if (payload.change === 'deleted') await invalidator.invalidate(FLAGS_CACHE, '*', trx);
  }

  return {
    async list() {
      return (await db(FLAGS_TABLE).orderBy('key')).map(flagFromRow);
    },

    async find(key) {
      const row = await db(FLAGS_TABLE).where({ key }).first();
      return row ? flagFromRow(row) : undefined;
    },

    insert: (flag, by) =>
      db.transaction(async (trx) => {
        const inserted: Row[] = await trx(FLAGS_TABLE)
          .insert({ key: flag.key, ...flagRow(flag), created_at: flag.createdAt })
          .onConflict('key')
          .ignore()
          .returning('key');
        if (inserted.length === 0) return 'exists' as const;
        await announce(trx, {
          key: flag.key,
          organizationId: null,
          userId: null,
          change: 'created',
          changedBy: by,
          changedAt: flag.createdAt,
        });
        return 'created' as const;
      }),

    update: (flag, by) =>
      db.transaction(async (trx) => {
        const updated = await trx(FLAGS_TABLE).where({ key: flag.key }).update(flagRow(flag));
        if (updated === 0) return false;
        await announce(trx, {
          key: flag.key,
          organizationId: null,
          userId: null,
          change: 'updated',
          changedBy: by,
          changedAt: flag.updatedAt,
        });
        return true;
      }),

    remove: (key, at, by) =>
      db.transaction(async (trx) => {
        await trx(FLAG_OVERRIDES_TABLE).where({ flag_key: key }).delete();
        const removed = await trx(FLAGS_TABLE).where({ key }).delete();
        if (removed === 0) return false;
        await announce(trx, { key, organizationId: null, userId: null, change: 'deleted', changedBy: by, changedAt: at });
        return true;
      }),

    async overrides(organizationId) {
      const rows = await db(FLAG_OVERRIDES_TABLE).where({ organization_id: organizationId }).orderBy(['flag_key', 'user_id']);
      return rows.map(overrideFromRow);
    },

    putOverride: (override, at, by) =>
      db.transaction(async (trx) => {
        // Taking the flag row keeps a concurrent delete from leaving an orphan override.
        const present = await trx(FLAGS_TABLE)
          .where({ key: override.flagKey })
          .update({ key: trx.ref('key') });
        if (present === 0) return false;
        await trx(FLAG_OVERRIDES_TABLE)
          .insert({
            flag_key: override.flagKey,
            organization_id: override.organizationId,
            user_id: override.userId ?? '',
            enabled: override.enabled,
            variant: override.variant,
            expires_at: override.expiresAt,
            updated_at: at,
            updated_by: by,
          })
          .onConflict(['flag_key', 'organization_id', 'user_id'])
          .merge(['enabled', 'variant', 'expires_at', 'updated_at', 'updated_by']);
        await announce(trx, {
          key: override.flagKey,
          organizationId: override.organizationId,
          userId: override.userId,
          change: 'override-set',
          changedBy: by,
          changedAt: at,
        });
        return true;
      }),

    removeOverride: (flagKey, organizationId, userId, at, by) =>
      db.transaction(async (trx) => {
        const removed = await trx(FLAG_OVERRIDES_TABLE)
          .where({ flag_key: flagKey, organization_id: organizationId, user_id: userId ?? '' })
          .delete();
        if (removed === 0) return false;
        await announce(trx, { key: flagKey, organizationId, userId, change: 'override-removed', changedBy: by, changedAt: at });
        return true;
      }),
  };
}
