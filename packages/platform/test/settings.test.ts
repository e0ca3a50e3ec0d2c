import { createTestIdt, mintAccessToken, mintServiceToken, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, outboxEvents, seedWorld, type World } from './helpers.js';

/** How soon a change on one instance must be seen on another. */
const PROPAGATION_MS = 2_000;

describe.each(testDialects())('settings over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: World;

  beforeAll(async () => {
    server = await createTestIdt({
      dialect,
      moduleOptions: {
        platform: {
          settings: [
            { key: 'billing.currency', type: 'string', default: 'EUR', description: 'Invoice currency' },
            { key: 'billing.seats', type: 'number', default: 5, description: 'Seats' },
            { key: 'billing.layout', type: 'json', default: { columns: 2 }, description: 'Layout', userOverridable: true },
          ],
        },
      },
    });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  const keysOf = (list: Array<{ key: string }>) => list.map((setting) => setting.key);

  describe('GET /v1/configuration/settings', () => {
    it('lists every defined non-system setting with its default, for ConfigurationRead', async () => {
      const list = await expectJson(await call('GET', '/v1/configuration/settings', { token: world.a.tokens.user }));
      expect(keysOf(list)).toEqual([
        'announcements.enabled',
        'billing.currency',
        'billing.layout',
        'billing.seats',
        'ui.locale',
        'ui.theme',
        'ui.timezone',
      ]);
      expect(list.find((s: { key: string }) => s.key === 'billing.seats')).toEqual({
        key: 'billing.seats',
        value: 5,
        type: 'number',
        source: 'default',
        description: 'Seats',
        defaultValue: 5,
      });
    });

    it('answers 401 without a credential, 403 without ConfigurationRead or an organization', async () => {
      await expectProblem(await call('GET', '/v1/configuration/settings'), 401, 'Auth.Unauthenticated');
      // The manager role manages configuration but does not hold ConfigurationRead.
      await expectProblem(
        await call('GET', '/v1/configuration/settings', { token: world.a.tokens.manager }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(
        await call('GET', '/v1/configuration/settings', { token: world.outsiderToken }),
        403,
        'Tenant.Required',
      );
    });
  });

  describe('PUT and DELETE /v1/configuration/settings/{key}', () => {
    it('sets a value (200 resolved setting), writes SettingChangedEvent, and another organization never sees it', async () => {
      const saved = await expectJson(
        await call('PUT', '/v1/configuration/settings/billing.currency', {
          token: world.a.tokens.manager,
          body: { value: 'USD' },
        }),
      );
      expect(saved).toEqual({
        key: 'billing.currency',
        value: 'USD',
        type: 'string',
        source: 'organization',
        description: 'Invoice currency',
        defaultValue: 'EUR',
      });
      const events = await outboxEvents(server.database.db, 'SettingChangedEvent');
      expect(events.at(-1)).toMatchObject({
        scope: 'organization',
        organizationId: world.a.organization.id,
        userId: null,
        key: 'billing.currency',
        change: 'set',
        changedBy: world.a.manager.id,
      });
      const a = await expectJson(await call('GET', '/v1/configuration/settings', { token: world.a.tokens.owner }));
      expect(a.find((s: { key: string }) => s.key === 'billing.currency')).toMatchObject({
        value: 'USD',
        source: 'organization',
      });
      const b = await expectJson(await call('GET', '/v1/configuration/settings', { token: world.b.tokens.owner }));
      expect(b.find((s: { key: string }) => s.key === 'billing.currency')).toMatchObject({ value: 'EUR', source: 'default' });
    });

    it('reverts to the default on DELETE (204, idempotent)', async () => {
      await expectJson(
        await call('PUT', '/v1/configuration/settings/billing.seats', { token: world.a.tokens.owner, body: { value: 12 } }),
      );
      expect((await call('DELETE', '/v1/configuration/settings/billing.seats', { token: world.a.tokens.owner })).status).toBe(
        204,
      );
      expect((await call('DELETE', '/v1/configuration/settings/billing.seats', { token: world.a.tokens.owner })).status).toBe(
        204,
      );
      const list = await expectJson(await call('GET', '/v1/configuration/settings', { token: world.a.tokens.owner }));
      expect(list.find((s: { key: string }) => s.key === 'billing.seats')).toMatchObject({ value: 5, source: 'default' });
    });

    it('answers 422 Settings.SystemKeyBlocked for system.*, 422 Settings.UnknownKey for unknown keys', async () => {
      for (const method of ['PUT', 'DELETE']) {
        const body = method === 'PUT' ? { value: true } : undefined;
        await expectProblem(
          await call(method, '/v1/configuration/settings/system.maintenanceMode', {
            token: world.a.tokens.owner,
            ...(body ? { body } : {}),
          }),
          422,
          'Settings.SystemKeyBlocked',
        );
        await expectProblem(
          await call(method, '/v1/configuration/settings/billing.nothing', {
            token: world.a.tokens.owner,
            ...(body ? { body } : {}),
          }),
          422,
          'Settings.UnknownKey',
        );
      }
    });

    it('answers 400 Validation.Failed keyed value for a wrong or missing value', async () => {
      const wrong = await expectProblem(
        await call('PUT', '/v1/configuration/settings/billing.seats', { token: world.a.tokens.owner, body: { value: '12' } }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(wrong.errors)).toEqual(['value']);
      const missing = await expectProblem(
        await call('PUT', '/v1/configuration/settings/billing.seats', { token: world.a.tokens.owner, body: {} }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(missing.errors)).toEqual(['value']);
      const custom = await expectProblem(
        await call('PUT', '/v1/configuration/settings/custom.flag', { token: world.a.tokens.owner, body: { value: true } }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(custom.errors)).toEqual(['value']);
    });

    it('answers 403 without ConfigurationManage', async () => {
      await expectProblem(
        await call('PUT', '/v1/configuration/settings/billing.currency', { token: world.a.tokens.user, body: { value: 'GBP' } }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(
        await call('DELETE', '/v1/configuration/settings/billing.currency', { token: world.a.tokens.user }),
        403,
        'Auth.Forbidden',
      );
    });

    it('keeps custom.* keys per organization, at most 100', async () => {
      await expectJson(
        await call('PUT', '/v1/configuration/settings/custom.brand-color', {
          token: world.b.tokens.owner,
          body: { value: '#0af' },
        }),
      );
      const b = await expectJson(await call('GET', '/v1/configuration/settings', { token: world.b.tokens.owner }));
      expect(b.at(-1)).toEqual({ key: 'custom.brand-color', value: '#0af', type: 'string', source: 'organization' });
      const a = await expectJson(await call('GET', '/v1/configuration/settings', { token: world.a.tokens.owner }));
      expect(keysOf(a)).not.toContain('custom.brand-color');

      const rows = Array.from({ length: 99 }, (_, i) => ({
        scope: 'organization',
        owner_key: world.b.organization.id,
        key: `custom.k${i}`,
        organization_id: world.b.organization.id,
        user_id: null,
        value: '"v"',
        updated_at: new Date().toISOString(),
        updated_by: 'test',
      }));
      await server.database.db('platform_settings').insert(rows);
      await expectProblem(
        await call('PUT', '/v1/configuration/settings/custom.one-more', { token: world.b.tokens.owner, body: { value: 'x' } }),
        422,
        'Settings.CustomLimitReached',
      );
      // Changing one of the hundred is still allowed, and removing one makes room.
      await expectJson(
        await call('PUT', '/v1/configuration/settings/custom.k3', { token: world.b.tokens.owner, body: { value: 'w' } }),
      );
      expect((await call('DELETE', '/v1/configuration/settings/custom.k3', { token: world.b.tokens.owner })).status).toBe(204);
      await expectJson(
        await call('PUT', '/v1/configuration/settings/custom.one-more', { token: world.b.tokens.owner, body: { value: 'x' } }),
      );
    });
  });

  describe('/v1/configuration/settings/me', () => {
    it('lists the overridable settings, and a user override wins over the organization value', async () => {
      await expectJson(
        await call('PUT', '/v1/configuration/settings/ui.theme', { token: world.a.tokens.owner, body: { value: 'dark' } }),
      );
      const before = await expectJson(await call('GET', '/v1/configuration/settings/me', { token: world.a.tokens.user }));
      expect(keysOf(before)).toEqual(['billing.layout', 'ui.locale', 'ui.theme', 'ui.timezone']);
      expect(before.find((s: { key: string }) => s.key === 'ui.theme')).toMatchObject({ value: 'dark', source: 'organization' });

      const mine = await expectJson(
        await call('PUT', '/v1/configuration/settings/me/ui.theme', {
          token: world.a.tokens.user,
          body: { value: 'high-contrast' },
        }),
      );
      expect(mine).toMatchObject({ key: 'ui.theme', value: 'high-contrast', source: 'user', defaultValue: 'light' });
      const others = await expectJson(await call('GET', '/v1/configuration/settings/me', { token: world.a.tokens.admin }));
      expect(others.find((s: { key: string }) => s.key === 'ui.theme')).toMatchObject({ value: 'dark', source: 'organization' });

      expect((await call('DELETE', '/v1/configuration/settings/me/ui.theme', { token: world.a.tokens.user })).status).toBe(204);
      const after = await expectJson(await call('GET', '/v1/configuration/settings/me', { token: world.a.tokens.user }));
      expect(after.find((s: { key: string }) => s.key === 'ui.theme')).toMatchObject({ value: 'dark', source: 'organization' });
    });

    it('refuses keys users may not override, system and unknown keys, and wrong types', async () => {
      const token = world.a.tokens.user;
      await expectProblem(
        await call('PUT', '/v1/configuration/settings/me/billing.currency', { token, body: { value: 'X' } }),
        422,
        'Settings.NotOverridable',
      );
      await expectProblem(
        await call('PUT', '/v1/configuration/settings/me/custom.x', { token, body: { value: 'X' } }),
        422,
        'Settings.NotOverridable',
      );
      await expectProblem(
        await call('PUT', '/v1/configuration/settings/me/system.supportEmail', { token, body: { value: 'X' } }),
        422,
        'Settings.SystemKeyBlocked',
      );
      await expectProblem(
        await call('PUT', '/v1/configuration/settings/me/ui.nothing', { token, body: { value: 'X' } }),
        422,
        'Settings.UnknownKey',
      );
      const wrong = await expectProblem(
        await call('PUT', '/v1/configuration/settings/me/ui.theme', { token, body: { value: 1 } }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(wrong.errors)).toEqual(['value']);
    });

    it('has no settings of its own for a service account (403)', async () => {
      const token = await mintServiceToken(server, {
        clientId: 'sa-alpha-config',
        organizationId: world.a.organization.id,
        scope: 'configuration.read',
      });
      await expectProblem(await call('GET', '/v1/configuration/settings/me', { token }), 403, 'Auth.Forbidden');
      // configuration.read maps to ConfigurationRead.
      await expectJson(await call('GET', '/v1/configuration/settings', { token }));
    });
  });

  describe('/v1/platform/settings', () => {
    it('lets platform administrators set system.* values, which every organization then sees', async () => {
      const saved = await expectJson(
        await call('PUT', '/v1/platform/settings/system.maintenanceMode', { token: world.platformToken, body: { value: true } }),
      );
      expect(saved).toMatchObject({
        key: 'system.maintenanceMode',
        value: true,
        type: 'boolean',
        source: 'platform',
        defaultValue: false,
      });
      const list = await expectJson(await call('GET', '/v1/platform/settings', { token: world.platformToken }));
      expect(keysOf(list)).toEqual(['system.maintenanceMode', 'system.supportEmail']);
      const config = await expectJson(await call('GET', '/v1/configuration/config', { token: world.b.tokens.user }));
      expect(config.settings['system.maintenanceMode']).toBe(true);
      expect((await outboxEvents(server.database.db, 'SettingChangedEvent')).at(-1)).toMatchObject({
        scope: 'system',
        organizationId: null,
        key: 'system.maintenanceMode',
      });
      expect((await call('DELETE', '/v1/platform/settings/system.maintenanceMode', { token: world.platformToken })).status).toBe(
        204,
      );
      const reverted = await expectJson(await call('GET', '/v1/configuration/config', { token: world.b.tokens.user }));
      expect(reverted.settings['system.maintenanceMode']).toBe(false);
    });

    it('answers 403 to an owner of another organization, 422 for keys that are not system.*, 400 for a wrong type', async () => {
      await expectProblem(
        await call('PUT', '/v1/platform/settings/system.maintenanceMode', { token: world.a.tokens.owner, body: { value: true } }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(await call('GET', '/v1/platform/settings', { token: world.a.tokens.owner }), 403, 'Auth.Forbidden');
      await expectProblem(
        await call('PUT', '/v1/platform/settings/ui.theme', { token: world.platformToken, body: { value: 'dark' } }),
        422,
        'Settings.UnknownKey',
      );
      await expectProblem(
        await call('PUT', '/v1/platform/settings/system.supportEmail', { token: world.platformToken, body: { value: false } }),
        400,
        'Validation.Failed',
      );
    });
  });

  describe('GET /v1/configuration/config', () => {
    it('merges user > organization > default, with the flags evaluated for the caller', async () => {
      await expectJson(
        await call('PUT', '/v1/configuration/settings/billing.layout', {
          token: world.a.tokens.owner,
          body: { value: { columns: 3 } },
        }),
      );
      await expectJson(
        await call('PUT', '/v1/configuration/settings/me/billing.layout', {
          token: world.a.tokens.admin,
          body: { value: { columns: 1 } },
        }),
      );
      const user = await expectJson(await call('GET', '/v1/configuration/config', { token: world.a.tokens.user }));
      const admin = await expectJson(await call('GET', '/v1/configuration/config', { token: world.a.tokens.admin }));
      const other = await expectJson(await call('GET', '/v1/configuration/config', { token: world.b.tokens.user }));
      expect(user.settings['billing.layout']).toEqual({ columns: 3 });
      expect(admin.settings['billing.layout']).toEqual({ columns: 1 });
      expect(other.settings['billing.layout']).toEqual({ columns: 2 });
      expect(other.settings['custom.brand-color']).toBe('#0af');
      expect(user.settings['custom.brand-color']).toBeUndefined();
      expect(user.flags).toEqual(expect.any(Object));
      await expectProblem(await call('GET', '/v1/configuration/config'), 401, 'Auth.Unauthenticated');
    });

    it('answers an organization-less caller with the defaults', async () => {
      const config = await expectJson(await call('GET', '/v1/configuration/config', { token: world.outsiderToken }));
      expect(config.settings['billing.currency']).toBe('EUR');
    });
  });

  it('evicts the caches of another instance on the same database when a value changes', async () => {
    const second = await createTestIdt({ dialect, database: server.database });
    try {
      // Minted and verified by the second instance, with its own caches.
      const token = await mintAccessToken(second, { sub: world.a.user.id, org_id: world.a.organization.id });
      const read = async () =>
        (await expectJson(await caller(second)('GET', '/v1/configuration/config', { token }))).settings['ui.locale'];
      expect(await read()).toBe('en-US');
      await expectJson(
        await call('PUT', '/v1/configuration/settings/ui.locale', { token: world.a.tokens.owner, body: { value: 'de-CH' } }),
      );
      const deadline = performance.now() + PROPAGATION_MS;
      let seen = await read();
      while (seen !== 'de-CH' && performance.now() < deadline) seen = await read();
      expect(seen).toBe('de-CH');
    } finally {
      await second.close();
    }
  });
});
