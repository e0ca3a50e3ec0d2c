import type { AuditTrail, EventOutbox } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { FlagOverride, FlagType, FlagVariant } from '../flags/evaluate.js';
import type { FlagRecord, FlagsStore, FlagsWrites } from '../flags/store.js';
import { FLAG_OVERRIDES_TABLE, FLAGS_TABLE } from './migrations.js';

/** Options of {@link createKnexFlagsStore}. */
export interface KnexFlagsStoreOptions {
  readonly db: Knex;
  /** Writes the events the flags service publishes, in the store's transaction. */
  readonly outbox: EventOutbox;
  /** Evicts the flag caches the flags service names, once the store's transaction commits. */
  readonly invalidator: Pick<CacheInvalidator, 'invalidateMany'>;
  /** Records the audit entries the flags service writes, in the store's transaction (`ctx.audit`); none without it. */
  readonly audit?: Pick<AuditTrail, 'record'>;
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

/** The {@link FlagsWrites} primitives over one transaction. */
function flagsWrites(trx: Knex.Transaction): FlagsWrites {
  return {
    async insert(flag) {
      const inserted: Row[] = await trx(FLAGS_TABLE)
        .insert({ key: flag.key, ...flagRow(flag), created_at: flag.createdAt })
        .onConflict('key')
        .ignore()
        .returning('key');
      return inserted.length === 0 ? 'exists' : 'created';
    },

    async update(flag) {
      return (await trx(FLAGS_TABLE).where({ key: flag.key }).update(flagRow(flag))) > 0;
    },

    async remove(key) {
      await trx(FLAG_OVERRIDES_TABLE).where({ flag_key: key }).delete();
      return (await trx(FLAGS_TABLE).where({ key }).delete()) > 0;
    },

    async putOverride(override, at, by) {
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
      return true;
    },

    async removeOverride(flagKey, organizationId, userId) {
      const removed = await trx(FLAG_OVERRIDES_TABLE)
        .where({ flag_key: flagKey, organization_id: organizationId, user_id: userId ?? '' })
        .delete();
      return removed > 0;
    },
  };
}

/**
 * The knex {@link FlagsStore}: the flags service writes
 * `FeatureFlagChangedEvent` and the cache evictions in the store's
 * transactions, through `outbox` and `invalidator`.
 *
 * @example
 * const store = createKnexFlagsStore({ db, outbox: bus, invalidator });
 */
export function createKnexFlagsStore(options: KnexFlagsStoreOptions): FlagsStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, flagsWrites),

    async list() {
      return (await db(FLAGS_TABLE).orderBy('key')).map(flagFromRow);
    },

    async find(key) {
      const row = await db(FLAGS_TABLE).where({ key }).first();
      return row ? flagFromRow(row) : undefined;
    },

    async overrides(organizationId) {
      const rows = await db(FLAG_OVERRIDES_TABLE).where({ organization_id: organizationId }).orderBy(['flag_key', 'user_id']);
      return rows.map(overrideFromRow);
    },
  };
}
