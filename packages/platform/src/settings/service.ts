import { type Clock, compareCodeUnits, systemClock, type TransactionEffects } from '@idt/core';
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
import {
  PlatformAuditActions,
  type PlatformRequestFacts,
  platformAuditActor,
  requestFactsOf,
  settingValueFacts,
} from '../audit.js';
import { createKeyedCache } from '../cache.js';
import { SETTINGS_CACHE, SettingChangedEvent, type SettingChangedPayload } from '../events.js';
import {
  CUSTOM_SETTINGS_LIMIT,
  checkSettingValue,
  classifySettingKey,
  type JsonValue,
  type SettingDefinition,
  type SettingRegistry,
  type SettingType,
} from './definitions.js';
import type { SettingScope, SettingsStore, SettingTarget, SettingValueRecord } from './store.js';

/** Where a resolved value came from. */
export type SettingSource = 'user' | 'organization' | 'platform' | 'default';

/** A setting as the API answers it. */
export interface ResolvedSetting {
  readonly key: string;
  readonly value: JsonValue;
  readonly type: SettingType;
  readonly source: SettingSource;
  /** From the definition; absent for `custom.*` keys. */
  readonly description?: string;
  /** From the definition; absent for `custom.*` keys. */
  readonly defaultValue?: JsonValue;
}

/** Options of {@link createSettingsService}. */
export interface SettingsServiceOptions {
  readonly store: SettingsStore;
  readonly registry: SettingRegistry;
  readonly directory: PlatformDirectory;
  readonly clock?: Clock;
  /** Evicts the value caches when any instance changes a value; without it nothing is cached. */
  readonly invalidator?: CacheInvalidator;
  /** The deployment path prefix (`''` or `/segment`), for the route named in `Settings.SystemKeyBlocked`. */
  readonly pathPrefix?: string;
}

/**
 * Settings: organization values, user overrides, platform-wide `system.*`
 * values, and the merged view. Each change records `platform.setting.changed`
 * or `platform.setting.reset` in its transaction (on the organization's
 * trail; `system.*` on the platform trail); `request` gives the record the
 * request's address, user agent and trace id.
 */
export interface SettingsService {
  /** The organization's settings, every defined (non-system) key and its custom keys (`ConfigurationRead`). */
  listOrganization(actor: PlatformActor): Promise<ResolvedSetting[]>;
  /** Sets an organization value (`ConfigurationManage`). */
  setOrganization(actor: PlatformActor, key: string, value: unknown, request?: PlatformRequestFacts): Promise<ResolvedSetting>;
  /** Reverts an organization value to the default (`ConfigurationManage`). */
  resetOrganization(actor: PlatformActor, key: string, request?: PlatformRequestFacts): Promise<void>;
  /** The user-overridable settings as they resolve for the calling user. */
  listMine(actor: PlatformActor): Promise<ResolvedSetting[]>;
  /** Sets the calling user's override of an overridable key. */
  setMine(actor: PlatformActor, key: string, value: unknown, request?: PlatformRequestFacts): Promise<ResolvedSetting>;
  /** Removes the calling user's override. */
  resetMine(actor: PlatformActor, key: string, request?: PlatformRequestFacts): Promise<void>;
  /** Every `system.*` setting (platform administrators). */
  listSystem(actor: PlatformActor): Promise<ResolvedSetting[]>;
  /** Sets a `system.*` value (platform administrators). */
  setSystem(actor: PlatformActor, key: string, value: unknown, request?: PlatformRequestFacts): Promise<ResolvedSetting>;
  /** Reverts a `system.*` value to its default (platform administrators). */
  resetSystem(actor: PlatformActor, key: string, request?: PlatformRequestFacts): Promise<void>;
  /** Every setting merged user > organization > default (`system.*`: platform value > default). */
  resolve(organizationId: string | null, userId: string | null): Promise<Record<string, JsonValue>>;
}

function systemBlocked(pathPrefix: string): ProblemError {
  return new ProblemError(
    'Settings.SystemKeyBlocked',
    `system.* settings are platform-wide; platform administrators change them on ${pathPrefix}/v1/platform/settings/{key}.`,
  );
}

function unknownKey(key: string): ProblemError {
  return new ProblemError('Settings.UnknownKey', `Unknown setting key '${key.slice(0, 100)}'.`);
}

function checkValue(type: SettingType, value: unknown): JsonValue {
  if (value === undefined) throw new ValidationProblem({ value: ['A value is required.'] });
  const problem = checkSettingValue(type, value);
  if (problem) throw new ValidationProblem({ value: [problem] });
  return value as JsonValue;
}

function fromDefinition(definition: SettingDefinition, value: JsonValue | undefined, source: SettingSource): ResolvedSetting {
  return {
    key: definition.key,
    value: value === undefined ? definition.default : value,
    type: definition.type,
    source: value === undefined ? 'default' : source,
    description: definition.description,
    defaultValue: definition.default,
  };
}

function toMap(records: readonly SettingValueRecord[]): Map<string, JsonValue> {
  return new Map(records.map((record) => [record.key, record.value]));
}

/**
 * Creates the settings service. The key rules are {@link classifySettingKey}'s;
 * on the organization and user surfaces a `system.*` key is 422
 * `Settings.SystemKeyBlocked`, an unknown key 422 `Settings.UnknownKey`, and
 * a value of the wrong type 400 `Validation.Failed` keyed `value` (keys are
 * checked before values).
 *
 * @example
 * const settings = createSettingsService({ store, registry: createSettingRegistry(builtInSettings), directory });
 * await settings.setOrganization(principal, 'ui.theme', 'dark');
 */
export function createSettingsService(options: SettingsServiceOptions): SettingsService {
  const { store, registry, directory } = options;
  const clock = options.clock ?? systemClock;
  const pathPrefix = options.pathPrefix ?? '';
  const cache = createKeyedCache<Map<string, JsonValue>>(SETTINGS_CACHE, options.invalidator);

  const systemValues = () => cache.get('system', async () => toMap(await store.list('system', null, null)));
  const organizationValues = (organizationId: string) =>
    cache.get(organizationId, async () => toMap(await store.list('organization', organizationId, null)));
  const userValues = async (organizationId: string, userId: string) => toMap(await store.list('user', organizationId, userId));

  function userOf(actor: PlatformActor): string {
    if (actor.userId === null) throw new ProblemError('Auth.Forbidden', 'Only users have their own settings.');
    return actor.userId;
  }

  /** The cache key of a target's values: the organization id, or `system`. */
  const cacheKey = (target: SettingTarget) => (target.scope === 'system' ? 'system' : (target.organizationId ?? 'system'));

  /**
   * Records a change in the store's transaction: `SettingChangedEvent` and
   * the eviction of the target's cached values on every instance.
   */
  async function changed(
    tx: TransactionEffects,
    target: SettingTarget,
    change: SettingChangedPayload['change'],
    at: string,
    actor: PlatformActor,
    request: PlatformRequestFacts | undefined,
    value?: JsonValue,
  ): Promise<void> {
    const by = actor.subject;
    const payload: SettingChangedPayload = {
      scope: target.scope,
      organizationId: target.organizationId,
      userId: target.userId,
      key: target.key,
      change,
      changedBy: by,
      changedAt: at,
    };
    await tx.publish([{ event: SettingChangedEvent, payload }]);
    await tx.evict([{ namespace: SETTINGS_CACHE, key: cacheKey(target) }]);
    await tx.audit?.([
      {
        action: change === 'set' ? PlatformAuditActions.settingChanged.action : PlatformAuditActions.settingReset.action,
        // A user's override lives in the organization it applies in: its trail, not the platform's.
        organizationId: target.organizationId,
        actor: platformAuditActor(actor),
        target: { type: 'setting', id: target.key, display: target.key },
        ...requestFactsOf(request),
        metadata: {
          scope: target.scope,
          ...(target.userId === null ? {} : { userId: target.userId }),
          ...(value === undefined ? {} : settingValueFacts(target.key, value)),
        },
      },
    ]);
  }

  async function save(
    target: SettingTarget,
    value: JsonValue,
    actor: PlatformActor,
    request: PlatformRequestFacts | undefined,
    customLimit?: number,
  ): Promise<void> {
    const record: SettingValueRecord = { ...target, value, updatedAt: clock.now().toISOString(), updatedBy: actor.subject };
    const outcome = await store.transaction(async (tx) => {
      // A new custom key counts against the owner's limit; replacing a value does not.
      if (customLimit !== undefined && !(await tx.has(target)) && (await tx.count(target, 'custom.')) >= customLimit) {
        return 'limit-reached' as const;
      }
      await tx.put(record);
      await changed(tx, target, 'set', record.updatedAt, actor, request, value);
      return 'saved' as const;
    });
    if (outcome === 'limit-reached') {
      throw new ProblemError(
        'Settings.CustomLimitReached',
        `An organization has at most ${CUSTOM_SETTINGS_LIMIT} custom settings.`,
      );
    }
    cache.evict(cacheKey(target));
  }

  async function reset(target: SettingTarget, actor: PlatformActor, request: PlatformRequestFacts | undefined): Promise<void> {
    const at = clock.now().toISOString();
    await store.transaction(async (tx) => {
      // Nothing stored, nothing changed: no event and no audit record.
      if (await tx.remove(target)) await changed(tx, target, 'reset', at, actor, request);
    });
    cache.evict(cacheKey(target));
  }

  /** The definition of a key writable on the organization surface (`undefined` for custom keys). */
  function organizationKey(key: string): SettingDefinition | undefined {
    const found = classifySettingKey(key, registry);
    if (found.kind === 'system') throw systemBlocked(pathPrefix);
    if (found.kind === 'unknown') throw unknownKey(key);
    return found.kind === 'defined' ? found.definition : undefined;
  }

  function userKey(key: string): SettingDefinition {
    const found = classifySettingKey(key, registry);
    if (found.kind === 'system') throw systemBlocked(pathPrefix);
    if (found.kind === 'unknown') throw unknownKey(key);
    if (found.kind === 'custom' || !found.definition.userOverridable) {
      throw new ProblemError('Settings.NotOverridable', `'${key}' is decided by the organization; users cannot override it.`);
    }
    return found.definition;
  }

  function systemKey(key: string): SettingDefinition {
    const found = classifySettingKey(key, registry);
    if (found.kind !== 'system' || !found.definition) {
      throw new ProblemError(
        'Settings.UnknownKey',
        `Unknown system setting key '${key.slice(0, 100)}'; this route writes defined system.* keys only.`,
      );
    }
    return found.definition;
  }

  const target = (scope: SettingScope, organizationId: string | null, userId: string | null, key: string): SettingTarget => ({
    scope,
    organizationId,
    userId,
    key,
  });

  async function resolvedOrganization(organizationId: string, key: string): Promise<ResolvedSetting> {
    const values = await organizationValues(organizationId);
    const definition = registry.get(key);
    if (!definition) return { key, value: values.get(key) ?? '', type: 'string', source: 'organization' };
    return fromDefinition(definition, values.get(key), 'organization');
  }

  async function resolvedMine(organizationId: string, userId: string, definition: SettingDefinition): Promise<ResolvedSetting> {
    const mine = await userValues(organizationId, userId);
    if (mine.has(definition.key)) return fromDefinition(definition, mine.get(definition.key), 'user');
    return fromDefinition(definition, (await organizationValues(organizationId)).get(definition.key), 'organization');
  }

  async function platformAdministrator(actor: PlatformActor): Promise<void> {
    await requirePlatformAdministrator(directory, actor, PlatformPermissions.systemSettings);
  }

  return {
    async listOrganization(actor) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, PlatformPermissions.configurationRead);
      const values = await organizationValues(organizationId);
      const defined = registry
        .list()
        .filter((definition) => !definition.key.startsWith('system.'))
        .map((definition) => fromDefinition(definition, values.get(definition.key), 'organization'));
      const custom = [...values.entries()]
        .filter(([key]) => key.startsWith('custom.'))
        .sort(([a], [b]) => compareCodeUnits(a, b))
        .map(([key, value]): ResolvedSetting => ({ key, value, type: 'string', source: 'organization' }));
      return [...defined, ...custom];
    },

    async setOrganization(actor, key, value, request) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, PlatformPermissions.configurationManage);
      const definition = organizationKey(key);
      const checked = checkValue(definition?.type ?? 'string', value);
      await save(
        target('organization', organizationId, null, key),
        checked,
        actor,
        request,
        definition ? undefined : CUSTOM_SETTINGS_LIMIT,
      );
      return resolvedOrganization(organizationId, key);
    },

    async resetOrganization(actor, key, request) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, PlatformPermissions.configurationManage);
      organizationKey(key);
      await reset(target('organization', organizationId, null, key), actor, request);
    },

    async listMine(actor) {
      const organizationId = tenantOf(actor);
      const userId = userOf(actor);
      const mine = await userValues(organizationId, userId);
      const organization = await organizationValues(organizationId);
      return registry
        .list()
        .filter((definition) => definition.userOverridable)
        .map((definition) =>
          mine.has(definition.key)
            ? fromDefinition(definition, mine.get(definition.key), 'user')
            : fromDefinition(definition, organization.get(definition.key), 'organization'),
        );
    },

    async setMine(actor, key, value, request) {
      const organizationId = tenantOf(actor);
      const userId = userOf(actor);
      const definition = userKey(key);
      const checked = checkValue(definition.type, value);
      await save(target('user', organizationId, userId, key), checked, actor, request);
      return resolvedMine(organizationId, userId, definition);
    },

    async resetMine(actor, key, request) {
      const organizationId = tenantOf(actor);
      const userId = userOf(actor);
      userKey(key);
      await reset(target('user', organizationId, userId, key), actor, request);
    },

    async listSystem(actor) {
      await platformAdministrator(actor);
      const values = await systemValues();
      return registry
        .list()
        .filter((definition) => definition.key.startsWith('system.'))
        .map((definition) => fromDefinition(definition, values.get(definition.key), 'platform'));
    },

    async setSystem(actor, key, value, request) {
      await platformAdministrator(actor);
      const definition = systemKey(key);
      const checked = checkValue(definition.type, value);
      await save(target('system', null, null, key), checked, actor, request);
      return fromDefinition(definition, (await systemValues()).get(key), 'platform');
    },

    async resetSystem(actor, key, request) {
      await platformAdministrator(actor);
      systemKey(key);
      await reset(target('system', null, null, key), actor, request);
    },

    async resolve(organizationId, userId) {
      const system = await systemValues();
      const organization = organizationId === null ? new Map<string, JsonValue>() : await organizationValues(organizationId);
      const mine =
        organizationId === null || userId === null ? new Map<string, JsonValue>() : await userValues(organizationId, userId);
      const merged: Record<string, JsonValue> = {};
      for (const definition of registry.list()) {
        const { key } = definition;
        if (key.startsWith('system.')) merged[key] = system.get(key) ?? definition.default;
        else if (definition.userOverridable && mine.has(key)) merged[key] = mine.get(key) as JsonValue;
        else merged[key] = organization.has(key) ? (organization.get(key) as JsonValue) : definition.default;
      }
      for (const [key, value] of organization) if (key.startsWith('custom.')) merged[key] = value;
      return merged;
    },
  };
}
