import { type Clock, systemClock, type TransactionEffects } from '@idt/core';
import type { CacheInvalidator } from '@idt/core/knex';
import { ProblemError, ValidationProblem } from '@idt/problem';
import {
  type PlatformActor,
  type PlatformDirectory,
  PlatformPermissions,
  requirePermission,
  requirePlatformAdministrator,
  tenantOf,
} from '../access.js';
import { PlatformAuditActions, type PlatformRequestFacts, platformAuditActor, requestFactsOf } from '../audit.js';
import { ALL_KEYS, createKeyedCache } from '../cache.js';
import { FeatureFlagChangedEvent, type FeatureFlagChangedPayload, FLAGS_CACHE } from '../events.js';
import { evaluateFlag, type FlagOverride, type FlagValue } from './evaluate.js';
import {
  FlagCreateInput,
  FlagOverrideInput,
  type FlagOverrideResponse,
  type FlagResponse,
  FlagUpdateInput,
  type OrganizationFlagResponse,
} from './schemas.js';
import type { FlagRecord, FlagsStore } from './store.js';

/** Options of {@link createFlagsService}. */
export interface FlagsServiceOptions {
  readonly store: FlagsStore;
  readonly directory: PlatformDirectory;
  readonly clock?: Clock;
  /** Evicts the flag caches when any instance changes a flag; without it nothing is cached. */
  readonly invalidator?: CacheInvalidator;
}

/** Who flags are evaluated for. */
export interface FlagCaller {
  readonly organizationId: string | null;
  readonly userId: string | null;
}

/** Feature flags: platform definitions, organization and user overrides, evaluation. */
export interface FlagsService {
  /** Every flag (platform administrators). */
  list(actor: PlatformActor): Promise<FlagResponse[]>;
  /** Defines a flag (platform administrators); 409 `FeatureFlags.KeyExists` for a taken key. */
  create(actor: PlatformActor, input: unknown, request?: PlatformRequestFacts): Promise<FlagResponse>;
  /** Replaces a flag's definition (platform administrators). */
  update(actor: PlatformActor, key: string, input: unknown, request?: PlatformRequestFacts): Promise<FlagResponse>;
  /** Deletes a flag and its overrides (platform administrators). */
  remove(actor: PlatformActor, key: string, request?: PlatformRequestFacts): Promise<void>;
  /** Every flag with the caller organization's overrides (`ConfigurationRead`). */
  listForOrganization(actor: PlatformActor): Promise<OrganizationFlagResponse[]>;
  /** Sets the organization's (or one member's) override (`ConfigurationManage`). */
  putOverride(actor: PlatformActor, key: string, input: unknown, request?: PlatformRequestFacts): Promise<FlagOverrideResponse>;
  /** Removes the organization's (or one member's) override (`ConfigurationManage`). */
  removeOverride(actor: PlatformActor, key: string, userId: string | null, request?: PlatformRequestFacts): Promise<void>;
  /** Every flag evaluated for a caller: `{key: boolean | variant}`. */
  evaluate(caller: FlagCaller): Promise<Record<string, FlagValue>>;
}

function toFlagResponse(flag: FlagRecord): FlagResponse {
  return {
    key: flag.key,
    name: flag.name,
    description: flag.description,
    type: flag.type,
    defaultEnabled: flag.defaultEnabled,
    rolloutPercentage: flag.rolloutPercentage,
    variants: flag.variants.map((variant) => ({ name: variant.name, weight: variant.weight })),
    defaultVariant: flag.defaultVariant,
    createdAt: flag.createdAt,
    updatedAt: flag.updatedAt,
  };
}

/**
 * Records a flag change in the store's transaction: `FeatureFlagChangedEvent`
 * and the eviction of the flag caches it touched (`definitions`, or the
 * organization id of an override) on every instance.
 */
async function changed(tx: TransactionEffects, payload: FeatureFlagChangedPayload): Promise<void> {
  await tx.publish([{ event: FeatureFlagChangedEvent, payload }]);
  await tx.evict([
    { namespace: FLAGS_CACHE, key: payload.organizationId ?? 'definitions' },
    // A deleted flag takes every organization's overrides with it.
    ...(payload.change === 'deleted' ? [{ namespace: FLAGS_CACHE, key: ALL_KEYS }] : []),
  ]);
}

/** What a flag's audit record says about its definition. */
function definitionFacts(flag: FlagRecord) {
  return {
    type: flag.type,
    defaultEnabled: flag.defaultEnabled,
    rolloutPercentage: flag.rolloutPercentage,
    variants: flag.variants.map((variant) => variant.name),
    defaultVariant: flag.defaultVariant,
  };
}

/**
 * Records a flag change in the store's transaction: definitions on the
 * platform trail, an organization's overrides on its own.
 */
async function audited(
  tx: TransactionEffects,
  action: string,
  actor: PlatformActor,
  request: PlatformRequestFacts | undefined,
  flag: { key: string; name?: string; organizationId: string | null },
  metadata: Record<string, string | number | boolean | null | string[]>,
): Promise<void> {
  await tx.audit?.([
    {
      action,
      organizationId: flag.organizationId,
      actor: platformAuditActor(actor),
      target: { type: 'featureFlag', id: flag.key, display: flag.name ?? flag.key },
      ...requestFactsOf(request),
      metadata,
    },
  ]);
}

function notFound(key: string): ProblemError {
  return new ProblemError('FeatureFlags.NotFound', `No feature flag has the key '${key.slice(0, 100)}'.`);
}

/**
 * Creates the feature flag service. Every change writes
 * `FeatureFlagChangedEvent` and evicts the flag caches of every instance in
 * the store's transaction; evaluation reads flags and overrides from those
 * caches; an
 * override's `expiresAt` is compared with the injected clock at evaluation.
 *
 * @example
 * const flags = createFlagsService({ store, directory, invalidator });
 * const values = await flags.evaluate({ organizationId, userId });
 */
export function createFlagsService(options: FlagsServiceOptions): FlagsService {
  const { store, directory } = options;
  const clock = options.clock ?? systemClock;
  const definitions = createKeyedCache<FlagRecord[]>(FLAGS_CACHE, options.invalidator);
  const overrides = createKeyedCache<FlagOverride[]>(FLAGS_CACHE, options.invalidator);

  const allFlags = () => definitions.get('definitions', () => store.list());
  const overridesOf = (organizationId: string) => overrides.get(organizationId, () => store.overrides(organizationId));

  const admin = (actor: PlatformActor) => requirePlatformAdministrator(directory, actor, PlatformPermissions.systemSettings);

  function overrideResponse(override: FlagOverride): FlagOverrideResponse {
    return {
      userId: override.userId,
      enabled: override.enabled,
      variant: override.variant,
      expiresAt: override.expiresAt,
      isExpired: override.expiresAt !== null && Date.parse(override.expiresAt) <= clock.now().getTime(),
    };
  }

  async function existing(key: string): Promise<FlagRecord> {
    const flag = await store.find(key);
    if (!flag) throw notFound(key);
    return flag;
  }

  return {
    async list(actor) {
      await admin(actor);
      return (await store.list()).map(toFlagResponse);
    },

    async create(actor, input, request) {
      await admin(actor);
      const data = FlagCreateInput.parse(input);
      const now = clock.now().toISOString();
      const record: FlagRecord = { ...data, createdAt: now, updatedAt: now };
      const inserted = await store.transaction(async (tx) => {
        const outcome = await tx.insert(record);
        if (outcome === 'created') {
          await changed(tx, {
            key: record.key,
            organizationId: null,
            userId: null,
            change: 'created',
            changedBy: actor.subject,
            changedAt: record.createdAt,
          });
          await audited(
            tx,
            PlatformAuditActions.flagCreated.action,
            actor,
            request,
            { ...record, organizationId: null },
            definitionFacts(record),
          );
        }
        return outcome;
      });
      if (inserted === 'exists') {
        throw new ProblemError('FeatureFlags.KeyExists', `A feature flag with the key '${data.key}' already exists.`);
      }
      definitions.evict('definitions');
      return toFlagResponse(record);
    },

    async update(actor, key, input, request) {
      await admin(actor);
      const data = FlagUpdateInput.parse(input);
      const current = await existing(key);
      const record: FlagRecord = {
        ...data,
        key: current.key,
        createdAt: current.createdAt,
        updatedAt: clock.now().toISOString(),
      };
      const updated = await store.transaction(async (tx) => {
        if (!(await tx.update(record))) return false;
        await changed(tx, {
          key: record.key,
          organizationId: null,
          userId: null,
          change: 'updated',
          changedBy: actor.subject,
          changedAt: record.updatedAt,
        });
        await audited(
          tx,
          PlatformAuditActions.flagUpdated.action,
          actor,
          request,
          { ...record, organizationId: null },
          definitionFacts(record),
        );
        return true;
      });
      if (!updated) throw notFound(key);
      definitions.evict('definitions');
      return toFlagResponse(record);
    },

    async remove(actor, key, request) {
      await admin(actor);
      const at = clock.now().toISOString();
      const removed = await store.transaction(async (tx) => {
        if (!(await tx.remove(key))) return false;
        await changed(tx, {
          key,
          organizationId: null,
          userId: null,
          change: 'deleted',
          changedBy: actor.subject,
          changedAt: at,
        });
        await audited(tx, PlatformAuditActions.flagDeleted.action, actor, request, { key, organizationId: null }, {});
        return true;
      });
      if (!removed) throw notFound(key);
      definitions.evict('definitions');
    },

    async listForOrganization(actor) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, PlatformPermissions.configurationRead);
      const [flags, own] = await Promise.all([allFlags(), overridesOf(organizationId)]);
      return flags.map((flag) => {
        const mine = own.filter((override) => override.flagKey === flag.key);
        const organization = mine.find((override) => override.userId === null);
        return {
          ...toFlagResponse(flag),
          override: organization ? overrideResponse(organization) : null,
          userOverrides: mine.filter((override) => override.userId !== null).map(overrideResponse),
        };
      });
    },

    async putOverride(actor, key, input, request) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, PlatformPermissions.configurationManage);
      const data = FlagOverrideInput.parse(input);
      const flag = await existing(key);
      if (data.variant !== null && !flag.variants.some((variant) => variant.name === data.variant)) {
        throw new ValidationProblem({
          variant: [flag.type === 'variant' ? 'Name one of the flag’s variants.' : 'Only variant flags have variants.'],
        });
      }
      if (data.userId !== null && !(await directory.isMember(organizationId, data.userId))) {
        throw new ValidationProblem({ userId: ['Not a member of your organization.'] });
      }
      const override: FlagOverride = { flagKey: flag.key, organizationId, ...data };
      const at = clock.now().toISOString();
      const put = await store.transaction(async (tx) => {
        if (!(await tx.putOverride(override, at, actor.subject))) return false;
        await changed(tx, {
          key: override.flagKey,
          organizationId,
          userId: override.userId,
          change: 'override-set',
          changedBy: actor.subject,
          changedAt: at,
        });
        await audited(
          tx,
          PlatformAuditActions.flagOverrideSet.action,
          actor,
          request,
          { key: flag.key, name: flag.name, organizationId },
          { userId: override.userId, enabled: override.enabled, variant: override.variant, expiresAt: override.expiresAt },
        );
        return true;
      });
      if (!put) throw notFound(key);
      overrides.evict(organizationId);
      return overrideResponse(override);
    },

    async removeOverride(actor, key, userId, request) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, PlatformPermissions.configurationManage);
      const flag = await existing(key);
      const at = clock.now().toISOString();
      await store.transaction(async (tx) => {
        if (!(await tx.removeOverride(key, organizationId, userId))) return;
        await changed(tx, { key, organizationId, userId, change: 'override-removed', changedBy: actor.subject, changedAt: at });
        await audited(
          tx,
          PlatformAuditActions.flagOverrideRemoved.action,
          actor,
          request,
          { key: flag.key, name: flag.name, organizationId },
          { userId },
        );
      });
      overrides.evict(organizationId);
    },

    async evaluate(caller) {
      const flags = await allFlags();
      const own = caller.organizationId === null ? [] : await overridesOf(caller.organizationId);
      const now = clock.now();
      const values: Record<string, FlagValue> = {};
      for (const flag of flags) {
        const organizationOverride = own.find((override) => override.flagKey === flag.key && override.userId === null);
        const userOverride =
          caller.userId === null
            ? undefined
            : own.find((override) => override.flagKey === flag.key && override.userId === caller.userId);
        values[flag.key] = evaluateFlag(flag, { userId: caller.userId, organizationOverride, userOverride }, now);
      }
      return values;
    },
  };
}
