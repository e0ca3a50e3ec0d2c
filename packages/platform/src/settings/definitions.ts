import { compareCodeUnits } from '@idt/core';

/** The value types a setting may have. */
export type SettingType = 'string' | 'number' | 'boolean' | 'json';

/** A JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * A typed setting a module contributes: `key` is `<module>.<name>`
 * (`system.<name>` for platform-wide settings, written only by platform
 * administrators), `default` has the declared `type`.
 */
export interface SettingDefinition {
  readonly key: string;
  readonly type: SettingType;
  readonly default: JsonValue;
  readonly description: string;
  /** Whether a user may override the organization's value for themselves. */
  readonly userOverridable?: boolean;
}

/** Longest setting key. */
export const SETTING_KEY_MAX = 100;
/** At most this many `custom.*` settings per organization. */
export const CUSTOM_SETTINGS_LIMIT = 100;
/** Longest string value (custom settings included). */
export const STRING_VALUE_MAX = 4000;
/** Largest serialized `json` value, in characters. */
export const JSON_VALUE_MAX = 16_384;

/** `<module>.<name>`: lowercase-first segments of letters, digits, `_` and `-`, separated by dots. */
const KEY_SYNTAX = /^[a-z][a-zA-Z0-9_-]*(\.[a-zA-Z0-9][a-zA-Z0-9_-]*)+$/;

/**
 * The settings idt defines itself: display preferences a user may override,
 * and two platform-wide `system.*` switches.
 */
export const builtInSettings: readonly SettingDefinition[] = Object.freeze([
  { key: 'ui.theme', type: 'string', default: 'light', description: 'Colour theme: light or dark.', userOverridable: true },
  {
    key: 'ui.locale',
    type: 'string',
    default: 'en-US',
    description: 'BCP 47 language tag for the interface.',
    userOverridable: true,
  },
  { key: 'ui.timezone', type: 'string', default: 'UTC', description: 'IANA time zone for dates.', userOverridable: true },
  {
    key: 'announcements.enabled',
    type: 'boolean',
    default: true,
    description: 'Whether members see announcements.',
    userOverridable: false,
  },
  {
    key: 'system.maintenanceMode',
    type: 'boolean',
    default: false,
    description: 'Platform-wide: clients show a maintenance notice.',
  },
  {
    key: 'system.supportEmail',
    type: 'string',
    default: '',
    description: 'Platform-wide: the support address clients show.',
  },
] satisfies SettingDefinition[]);

/** How a key is treated (see {@link classifySettingKey}). */
export type SettingKeyClass =
  /** `system.*`: platform-wide; a definition is still needed to write it. */
  | { readonly kind: 'system'; readonly definition: SettingDefinition | undefined }
  /** `custom.*`: organization-defined string. */
  | { readonly kind: 'custom' }
  /** A key a module defines. */
  | { readonly kind: 'defined'; readonly definition: SettingDefinition }
  /** Anything else (malformed keys included). */
  | { readonly kind: 'unknown' };

/** Settings by key; built with {@link createSettingRegistry}. */
export interface SettingRegistry {
  get(key: string): SettingDefinition | undefined;
  /** Every definition, sorted by key. */
  list(): readonly SettingDefinition[];
}

/** Whether `value` has the setting type `type` (and fits its size limit). */
export function checkSettingValue(type: SettingType, value: unknown): string | undefined {
  switch (type) {
    case 'string':
      if (typeof value !== 'string') return 'The value must be a string.';
      if (value.length > STRING_VALUE_MAX) return `Use at most ${STRING_VALUE_MAX} characters.`;
      return undefined;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'The value must be a finite number.';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'The value must be true or false.';
    case 'json':
      if (value === undefined) return 'A value is required.';
      return JSON.stringify(value).length > JSON_VALUE_MAX
        ? `The serialized value must have at most ${JSON_VALUE_MAX} characters.`
        : undefined;
  }
}

/**
 * Builds the registry from module definitions.
 *
 * @throws Error for a malformed key, a `custom.*` key, a duplicate, or a default of the wrong type (a programming error).
 */
export function createSettingRegistry(definitions: readonly SettingDefinition[]): SettingRegistry {
  const byKey = new Map<string, SettingDefinition>();
  for (const definition of definitions) {
    if (!KEY_SYNTAX.test(definition.key) || definition.key.length > SETTING_KEY_MAX) {
      throw new Error(`Setting key "${definition.key}" is not <module>.<name>`);
    }
    if (definition.key.startsWith('custom.'))
      throw new Error(`Setting key "${definition.key}": custom.* keys belong to organizations`);
    if (byKey.has(definition.key)) throw new Error(`Setting "${definition.key}" is defined twice`);
    const problem = checkSettingValue(definition.type, definition.default);
    if (problem) throw new Error(`Setting "${definition.key}": the default does not fit its type: ${problem}`);
    if (definition.key.startsWith('system.') && definition.userOverridable) {
      throw new Error(`Setting "${definition.key}": system.* settings are not user-overridable`);
    }
    byKey.set(definition.key, Object.freeze({ ...definition }));
  }
  const sorted = [...byKey.values()].sort((a, b) => compareCodeUnits(a.key, b.key));
  return { get: (key) => byKey.get(key), list: () => sorted };
}

/**
 * The key rules, in order: `system.*` is platform-wide (blocked on the
 * organization and user surfaces), `custom.<name>` is an organization's own
 * string, a defined key is what a module registered, anything else —
 * malformed keys included — is unknown. Keys are case-sensitive.
 */
export function classifySettingKey(key: string, registry: SettingRegistry): SettingKeyClass {
  if (key.length === 0 || key.length > SETTING_KEY_MAX || !KEY_SYNTAX.test(key)) return { kind: 'unknown' };
  if (key.startsWith('system.')) return { kind: 'system', definition: registry.get(key) };
  if (key.startsWith('custom.')) return { kind: 'custom' };
  const definition = registry.get(key);
  return definition ? { kind: 'defined', definition } : { kind: 'unknown' };
}
