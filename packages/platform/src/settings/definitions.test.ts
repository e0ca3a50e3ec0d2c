import { ProblemError } from '@idt/problem';
import { describe, expect, it } from 'vitest';
import '../problems.js';
import type { PlatformActor, PlatformDirectory } from '../access.js';
import {
  builtInSettings,
  CUSTOM_SETTINGS_LIMIT,
  checkSettingValue,
  classifySettingKey,
  createSettingRegistry,
  type JsonValue,
  type SettingDefinition,
} from './definitions.js';
import { createSettingsService } from './service.js';
import type { SettingsStore, SettingsWrites, SettingValueRecord } from './store.js';

const definitions: SettingDefinition[] = [
  { key: 'billing.currency', type: 'string', default: 'EUR', description: 'Invoice currency' },
  { key: 'billing.seats', type: 'number', default: 5, description: 'Seats' },
  { key: 'ui.compact', type: 'boolean', default: false, description: 'Compact lists', userOverridable: true },
  { key: 'ui.dashboard', type: 'json', default: { widgets: [] }, description: 'Dashboard layout', userOverridable: true },
  { key: 'system.banner', type: 'string', default: '', description: 'Platform banner' },
];
const registry = createSettingRegistry(definitions);

describe('classifySettingKey', () => {
  const cases: Array<[string, string]> = [
    ['system.banner', 'system'],
    ['system.undefinedThing', 'system'],
    ['custom.color', 'custom'],
    ['custom.a.b-c_d', 'custom'],
    ['billing.currency', 'defined'],
    ['ui.compact', 'defined'],
    ['billing.unknown', 'unknown'],
    ['nomodule', 'unknown'],
    ['', 'unknown'],
    ['.leading', 'unknown'],
    ['trailing.', 'unknown'],
    ['Billing.currency', 'unknown'],
    ['billing..currency', 'unknown'],
    ['billing.curr ency', 'unknown'],
    ['custom.', 'unknown'],
    ['system.', 'unknown'],
    [`custom.${'x'.repeat(100)}`, 'unknown'],
    ['billing.currency/../x', 'unknown'],
    ['SYSTEM.banner', 'unknown'],
    ['CUSTOM.color', 'unknown'],
  ];
  it.each(cases)('%j is %s', (key, kind) => {
    expect(classifySettingKey(key, registry).kind).toBe(kind);
  });
});

describe('checkSettingValue', () => {
  const values: Array<[string, unknown]> = [
    ['string', 'text'],
    ['number', 3.5],
    ['boolean', true],
    ['json', { a: [1, 2] }],
    ['null', null],
    ['array', [1]],
    ['NaN', Number.NaN],
    ['undefined', undefined],
  ];
  const accepts: Record<string, string[]> = {
    string: ['string'],
    number: ['number'],
    boolean: ['boolean'],
    json: ['string', 'number', 'boolean', 'json', 'null', 'array', 'NaN'],
  };
  for (const type of ['string', 'number', 'boolean', 'json'] as const) {
    it.each(values)(`type ${type} with a %s value`, (name, value) => {
      expect(checkSettingValue(type, value) === undefined).toBe(accepts[type]?.includes(name));
    });
  }
  it('limits strings and serialized JSON', () => {
    expect(checkSettingValue('string', 'x'.repeat(4000))).toBeUndefined();
    expect(checkSettingValue('string', 'x'.repeat(4001))).toMatch(/at most/);
    expect(checkSettingValue('json', { x: 'y'.repeat(20_000) })).toMatch(/at most/);
  });
});

describe('createSettingRegistry', () => {
  it('refuses malformed, custom, duplicate, mistyped and overridable system definitions', () => {
    const base = { type: 'string', default: '', description: '' } as const;
    expect(() => createSettingRegistry([{ ...base, key: 'nodot' }])).toThrow(/<module>.<name>/);
    expect(() => createSettingRegistry([{ ...base, key: 'custom.x' }])).toThrow(/custom/);
    expect(() =>
      createSettingRegistry([
        { ...base, key: 'a.b' },
        { ...base, key: 'a.b' },
      ]),
    ).toThrow(/twice/);
    expect(() => createSettingRegistry([{ ...base, key: 'a.b', type: 'number' }])).toThrow(/type/);
    expect(() => createSettingRegistry([{ ...base, key: 'system.x', userOverridable: true }])).toThrow(/overridable/);
    expect(
      createSettingRegistry(builtInSettings)
        .list()
        .map((d) => d.key),
    ).toEqual([...builtInSettings.map((d) => d.key)].sort());
  });
});

/** An in-memory store, enough for the key rules (its transactions neither roll back nor record effects). */
function memoryStore(): SettingsStore & { rows: SettingValueRecord[] } {
  const rows: SettingValueRecord[] = [];
  const same = (a: SettingValueRecord, b: { scope: string; organizationId: string | null; userId: string | null; key: string }) =>
    a.scope === b.scope && a.organizationId === b.organizationId && a.userId === b.userId && a.key === b.key;
  const owned = (row: SettingValueRecord, owner: { scope: string; organizationId: string | null; userId: string | null }) =>
    row.scope === owner.scope &&
    (owner.scope === 'system' || row.organizationId === owner.organizationId) &&
    (owner.scope !== 'user' || row.userId === owner.userId);
  const writes: SettingsWrites = {
    has: async (target) => rows.some((row) => same(row, target)),
    count: async (owner, prefix) => rows.filter((row) => owned(row, owner) && row.key.startsWith(prefix)).length,
    async put(record) {
      const index = rows.findIndex((row) => same(row, record));
      if (index === -1) rows.push(record);
      else rows[index] = record;
    },
    async remove(target) {
      const index = rows.findIndex((row) => same(row, target));
      if (index === -1) return false;
      rows.splice(index, 1);
      return true;
    },
  };
  return {
    rows,
    async list(scope, organizationId, userId) {
      return rows.filter((row) => owned(row, { scope, organizationId, userId }));
    },
    transaction: (work) => work({ ...writes, publish: async () => undefined, evict: async () => undefined }),
  };
}

const PLATFORM_ORG = 'platform-org';
const directory: PlatformDirectory = {
  isPlatformOrganization: async (id) => id === PLATFORM_ORG,
  isMember: async () => true,
  rolesOf: async () => [],
  members: async () => [],
  platformAdministrators: async () => [],
};

function actor(organizationId: string, permissions: string[], userId: string | null = 'user-1'): PlatformActor {
  return { kind: 'user', subject: userId ?? 'sa-x', userId, clientId: null, organizationId, permissions: new Set(permissions) };
}

const manager = actor('org-a', ['ConfigurationRead', 'ConfigurationManage', 'SystemSettings']);
const platformAdmin = actor(PLATFORM_ORG, ['ConfigurationRead', 'ConfigurationManage', 'SystemSettings']);

async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    if (error instanceof ProblemError) return `${error.status} ${error.code}`;
    throw error;
  }
}

describe('the key rules on every surface', () => {
  const valueFor: Record<string, JsonValue> = {
    'system.banner': 'hello',
    'system.undefinedThing': 'x',
    'custom.color': 'blue',
    'billing.currency': 'USD',
    'ui.compact': true,
    'billing.unknown': 'x',
    'not a key': 'x',
  };
  // key → [organization surface, user surface (/me), platform surface]
  const expected: Record<string, [string, string, string]> = {
    'system.banner': ['422 Settings.SystemKeyBlocked', '422 Settings.SystemKeyBlocked', 'ok'],
    'system.undefinedThing': ['422 Settings.SystemKeyBlocked', '422 Settings.SystemKeyBlocked', '422 Settings.UnknownKey'],
    'custom.color': ['ok', '422 Settings.NotOverridable', '422 Settings.UnknownKey'],
    'billing.currency': ['ok', '422 Settings.NotOverridable', '422 Settings.UnknownKey'],
    'ui.compact': ['ok', 'ok', '422 Settings.UnknownKey'],
    'billing.unknown': ['422 Settings.UnknownKey', '422 Settings.UnknownKey', '422 Settings.UnknownKey'],
    'not a key': ['422 Settings.UnknownKey', '422 Settings.UnknownKey', '422 Settings.UnknownKey'],
  };
  for (const [key, [organization, user, platform]] of Object.entries(expected)) {
    it(`${key}: organization ${organization}, user ${user}, platform ${platform}`, async () => {
      const service = createSettingsService({ store: memoryStore(), registry, directory });
      const value = valueFor[key];
      expect(await outcome(() => service.setOrganization(manager, key, value))).toBe(organization);
      expect(await outcome(() => service.resetOrganization(manager, key))).toBe(organization);
      expect(await outcome(() => service.setMine(manager, key, value))).toBe(user);
      expect(await outcome(() => service.resetMine(manager, key))).toBe(user);
      expect(await outcome(() => service.setSystem(platformAdmin, key, value))).toBe(platform);
      expect(await outcome(() => service.resetSystem(platformAdmin, key))).toBe(platform);
    });
  }

  it('checks the key before the value: an unknown key with a wrong value is 422, a known key with one 400', async () => {
    const service = createSettingsService({ store: memoryStore(), registry, directory });
    expect(await outcome(() => service.setOrganization(manager, 'billing.nope', 42))).toBe('422 Settings.UnknownKey');
    expect(await outcome(() => service.setOrganization(manager, 'system.banner', 42))).toBe('422 Settings.SystemKeyBlocked');
    expect(await outcome(() => service.setOrganization(manager, 'billing.currency', 42))).toBe('400 Validation.Failed');
    expect(await outcome(() => service.setOrganization(manager, 'custom.x', 42))).toBe('400 Validation.Failed');
    expect(await outcome(() => service.setOrganization(manager, 'billing.seats', '5'))).toBe('400 Validation.Failed');
    expect(await outcome(() => service.setOrganization(manager, 'billing.seats', undefined))).toBe('400 Validation.Failed');
    expect(await outcome(() => service.setMine(manager, 'ui.compact', 'yes'))).toBe('400 Validation.Failed');
    expect(await outcome(() => service.setSystem(platformAdmin, 'system.banner', false))).toBe('400 Validation.Failed');
    const error = await service.setOrganization(manager, 'billing.seats', 'five').catch((e: ProblemError) => e);
    expect((error as ProblemError).errors).toEqual({ value: ['The value must be a finite number.'] });
  });

  it('lets only platform administrators write system.* keys', async () => {
    const service = createSettingsService({ store: memoryStore(), registry, directory });
    expect(await outcome(() => service.setSystem(manager, 'system.banner', 'x'))).toBe('403 Auth.Forbidden');
    const withoutPermission = actor(PLATFORM_ORG, ['ConfigurationManage']);
    expect(await outcome(() => service.setSystem(withoutPermission, 'system.banner', 'x'))).toBe('403 Auth.Forbidden');
    expect(await outcome(() => service.listSystem(manager))).toBe('403 Auth.Forbidden');
  });

  it(`allows ${CUSTOM_SETTINGS_LIMIT} custom keys per organization, and updates of existing ones beyond`, async () => {
    const store = memoryStore();
    const service = createSettingsService({ store, registry, directory });
    for (let i = 0; i < CUSTOM_SETTINGS_LIMIT; i += 1) await service.setOrganization(manager, `custom.k${i}`, 'v');
    expect(await outcome(() => service.setOrganization(manager, 'custom.one-more', 'v'))).toBe('422 Settings.CustomLimitReached');
    expect(await outcome(() => service.setOrganization(manager, 'custom.k7', 'changed'))).toBe('ok');
    // Another organization has its own hundred.
    expect(await outcome(() => service.setOrganization(actor('org-b', ['ConfigurationManage']), 'custom.k0', 'v'))).toBe('ok');
  });

  it('merges user > organization > default, and system values over their defaults', async () => {
    const service = createSettingsService({ store: memoryStore(), registry, directory });
    await service.setOrganization(manager, 'ui.compact', true);
    await service.setOrganization(manager, 'billing.currency', 'USD');
    await service.setOrganization(manager, 'custom.color', 'blue');
    await service.setMine(manager, 'ui.compact', false);
    await service.setSystem(platformAdmin, 'system.banner', 'Maintenance at 6');
    const merged = await service.resolve('org-a', 'user-1');
    expect(merged).toMatchObject({
      'billing.currency': 'USD',
      'billing.seats': 5,
      'ui.compact': false,
      'ui.dashboard': { widgets: [] },
      'system.banner': 'Maintenance at 6',
      'custom.color': 'blue',
    });
    expect((await service.resolve('org-a', 'user-2'))['ui.compact']).toBe(true);
    expect((await service.resolve('org-b', 'user-1'))['ui.compact']).toBe(false);
    expect((await service.resolve('org-b', 'user-1'))['custom.color']).toBeUndefined();
  });
});
