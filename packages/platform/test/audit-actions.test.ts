import { createTestIdt, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, seedWorld, type World } from './helpers.js';

type Row = Record<string, any>;

/**
 * The platform module's audit actions (issue 51): each setting, flag and
 * webhook endpoint change through the HTTP API records exactly one record
 * on the right trail with the caller as actor; a refused change records
 * nothing, and another organization never sees the records.
 */
describe.each(testDialects())('platform audit actions on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: World;

  beforeAll(async () => {
    server = await createTestIdt({
      dialect,
      moduleOptions: { platform: { webhooks: { allowPrivateHosts: true, jobIntervalMs: 3_600_000 } } },
    });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  /** The records of one action, straight from the table. */
  async function recorded(action: string): Promise<Row[]> {
    const rows: Row[] = await server.database.db('core_audit_events').where({ action });
    return rows;
  }

  /** Runs a change and returns the one record of `action` it wrote (asserting there is exactly one). */
  async function one(action: string, change: () => Promise<unknown>): Promise<Row> {
    const before = new Set((await recorded(action)).map((row) => row.id));
    await change();
    const added = (await recorded(action)).filter((row) => !before.has(row.id));
    expect(added).toHaveLength(1);
    return added[0] as Row;
  }

  /** Runs a refused change and asserts it recorded nothing at all. */
  async function none(change: () => Promise<unknown>): Promise<void> {
    const [{ n: before } = {}] = (await server.database.db('core_audit_events').count({ n: '*' })) as Array<{
      n?: number | string;
    }>;
    await change();
    const [{ n: after } = {}] = (await server.database.db('core_audit_events').count({ n: '*' })) as Array<{
      n?: number | string;
    }>;
    expect(Number(after)).toBe(Number(before));
  }

  const metadataOf = (row: Row) => (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata);

  it('records an organization setting set and reset on its trail, listed to its owner and to no other organization', async () => {
    const a = world.a.organization.id;
    const set = await one('platform.setting.changed', async () =>
      expectJson(
        await call('PUT', '/v1/configuration/settings/ui.theme', { token: world.a.tokens.admin, body: { value: 'dark' } }),
      ),
    );
    expect(set).toMatchObject({
      chain: a,
      actor_type: 'user',
      actor_id: world.a.admin.id,
      target_type: 'setting',
      target_id: 'ui.theme',
      outcome: 'success',
    });
    expect(metadataOf(set)).toEqual({ scope: 'organization', value: 'dark' });

    const reset = await one('platform.setting.reset', async () =>
      expect((await call('DELETE', '/v1/configuration/settings/ui.theme', { token: world.a.tokens.admin })).status).toBe(204),
    );
    expect(reset).toMatchObject({ chain: a, actor_id: world.a.admin.id, target_id: 'ui.theme' });
    // Nothing stored any more: a second reset changes nothing and records nothing.
    await none(async () =>
      expect((await call('DELETE', '/v1/configuration/settings/ui.theme', { token: world.a.tokens.admin })).status).toBe(204),
    );

    const listed = await expectJson(
      await call('GET', '/v1/audit/events?action=platform.setting.changed', { token: world.a.tokens.owner }),
    );
    expect(listed.items.map((item: Row) => item.target.id)).toContain('ui.theme');
    expect(listed.items[0]).toMatchObject({ organizationId: a, actor: { type: 'user', id: world.a.admin.id } });
    const other = await expectJson(
      await call('GET', '/v1/audit/events?action=platform.setting.changed', { token: world.b.tokens.owner }),
    );
    expect(other.items).toEqual([]);
    await expectProblem(
      await call('GET', `/v1/audit/events?organizationId=${a}`, { token: world.b.tokens.owner }),
      404,
      'Audit.OrganizationNotFound',
    );
  });

  it('never copies a custom value, and records nothing for a refused value or key', async () => {
    const custom = await one('platform.setting.changed', async () =>
      expectJson(
        await call('PUT', '/v1/configuration/settings/custom.crm', { token: world.a.tokens.admin, body: { value: 'xyzzy' } }),
      ),
    );
    expect(metadataOf(custom)).toEqual({ scope: 'organization', valueLength: 7 });
    await none(async () =>
      expectProblem(
        await call('PUT', '/v1/configuration/settings/ui.theme', { token: world.a.tokens.admin, body: { value: 42 } }),
        400,
        'Validation.Failed',
      ),
    );
    await none(async () =>
      expectProblem(
        await call('PUT', '/v1/configuration/settings/no.such', { token: world.a.tokens.admin, body: { value: 'x' } }),
        422,
        'Settings.UnknownKey',
      ),
    );
    await none(async () =>
      expectProblem(
        await call('PUT', '/v1/configuration/settings/ui.theme', { token: world.a.tokens.user, body: { value: 'dark' } }),
        403,
        'Auth.Forbidden',
      ),
    );
  });

  it('records a user override on the organization trail, and a system setting on the platform trail', async () => {
    const mine = await one('platform.setting.changed', async () =>
      expectJson(
        await call('PUT', '/v1/configuration/settings/me/ui.locale', { token: world.a.tokens.user, body: { value: 'de' } }),
      ),
    );
    expect(mine).toMatchObject({ chain: world.a.organization.id, actor_id: world.a.user.id, target_id: 'ui.locale' });
    expect(metadataOf(mine)).toEqual({ scope: 'user', userId: world.a.user.id, value: 'de' });
    await one('platform.setting.reset', async () =>
      expect((await call('DELETE', '/v1/configuration/settings/me/ui.locale', { token: world.a.tokens.user })).status).toBe(204),
    );

    const system = await one('platform.setting.changed', async () =>
      expectJson(
        await call('PUT', '/v1/platform/settings/system.maintenanceMode', { token: world.platformToken, body: { value: true } }),
      ),
    );
    expect(system).toMatchObject({ chain: 'platform', actor_id: world.platformAdmin.id, target_id: 'system.maintenanceMode' });
    expect(metadataOf(system)).toEqual({ scope: 'system', value: true });
    await one('platform.setting.reset', async () =>
      expect((await call('DELETE', '/v1/platform/settings/system.maintenanceMode', { token: world.platformToken })).status).toBe(
        204,
      ),
    );
    // A tenant owner cannot read the platform trail.
    await expectProblem(
      await call('GET', '/v1/audit/events?organizationId=platform', { token: world.a.tokens.owner }),
      404,
      'Audit.OrganizationNotFound',
    );
  });

  it('records flag definitions on the platform trail and an organization’s overrides on its own', async () => {
    const body = { key: 'audit-flag', name: 'Audited flag', description: 'For the trail', type: 'boolean' };
    const created = await one('platform.flag.created', async () =>
      expectJson(await call('POST', '/v1/platform/flags', { token: world.platformToken, body }), 201),
    );
    expect(created).toMatchObject({
      chain: 'platform',
      actor_id: world.platformAdmin.id,
      target_type: 'featureFlag',
      target_id: 'audit-flag',
      target_display: 'Audited flag',
    });
    await none(async () =>
      expectProblem(
        await call('POST', '/v1/platform/flags', { token: world.platformToken, body }),
        409,
        'FeatureFlags.KeyExists',
      ),
    );
    await one('platform.flag.updated', async () =>
      expectJson(
        await call('PUT', '/v1/platform/flags/audit-flag', {
          token: world.platformToken,
          body: { name: 'Audited flag', description: 'For the trail', type: 'boolean', rolloutPercentage: 50 },
        }),
      ),
    );

    const override = await one('platform.flagOverride.set', async () =>
      expectJson(
        await call('PUT', '/v1/configuration/flags/audit-flag/override', {
          token: world.a.tokens.admin,
          body: { enabled: true },
        }),
      ),
    );
    expect(override).toMatchObject({ chain: world.a.organization.id, actor_id: world.a.admin.id, target_id: 'audit-flag' });
    expect(metadataOf(override)).toEqual({ userId: null, enabled: true, variant: null, expiresAt: null });
    await none(async () =>
      expectProblem(
        await call('PUT', '/v1/configuration/flags/audit-flag/override', {
          token: world.a.tokens.admin,
          body: { enabled: true, userId: world.b.user.id },
        }),
        400,
        'Validation.Failed',
      ),
    );
    await one('platform.flagOverride.removed', async () =>
      expect((await call('DELETE', '/v1/configuration/flags/audit-flag/override', { token: world.a.tokens.admin })).status).toBe(
        204,
      ),
    );
    const other = await expectJson(
      await call('GET', '/v1/audit/events?action=platform.flagOverride.set', { token: world.b.tokens.owner }),
    );
    expect(other.items).toEqual([]);

    await one('platform.flag.deleted', async () =>
      expect((await call('DELETE', '/v1/platform/flags/audit-flag', { token: world.platformToken })).status).toBe(204),
    );
    await none(async () =>
      expectProblem(
        await call('DELETE', '/v1/platform/flags/audit-flag', { token: world.platformToken }),
        404,
        'FeatureFlags.NotFound',
      ),
    );
  });

  it('records webhook endpoint changes on the platform trail, without the URL’s query or any secret', async () => {
    const token = world.platformToken;
    let id = '';
    const created = await one('platform.webhookEndpoint.created', async () => {
      const answer = await expectJson(
        await call('POST', '/v1/webhooks/endpoints', {
          token,
          body: {
            url: 'http://127.0.0.1:9/hooks?token=abc',
            eventTypes: ['audit.event'],
            organizationId: world.a.organization.id,
          },
        }),
        201,
      );
      id = answer.endpoint.id;
    });
    expect(created).toMatchObject({
      chain: 'platform',
      actor_id: world.platformAdmin.id,
      target_type: 'webhookEndpoint',
      target_id: id,
      target_display: 'http://127.0.0.1:9/hooks',
    });
    expect(metadataOf(created)).toEqual({ organizationId: world.a.organization.id, eventTypes: ['audit.event'], enabled: true });
    await none(async () =>
      expectProblem(
        await call('POST', '/v1/webhooks/endpoints', { token, body: { url: 'ftp://example.com/x' } }),
        400,
        'Validation.Failed',
      ),
    );
    await none(async () =>
      expectProblem(
        await call('POST', '/v1/webhooks/endpoints', { token: world.a.tokens.owner, body: { url: 'http://127.0.0.1:9/x' } }),
        403,
        'Auth.Forbidden',
      ),
    );

    const updated = await one('platform.webhookEndpoint.updated', async () =>
      expectJson(await call('PATCH', `/v1/webhooks/endpoints/${id}`, { token, body: { enabled: false } })),
    );
    expect(metadataOf(updated)).toMatchObject({ changed: ['enabled'], enabled: false });

    const rotated = await one('platform.webhookEndpoint.secretRotated', async () => {
      const answer = await expectJson(
        await call('POST', `/v1/webhooks/endpoints/${id}/rotate-secret`, { token, body: { graceSeconds: 60 } }),
      );
      expect(JSON.stringify(await recorded('platform.webhookEndpoint.secretRotated'))).not.toContain(answer.secret);
    });
    expect(metadataOf(rotated)).toMatchObject({ graceSeconds: 60 });

    await one('platform.webhookEndpoint.deleted', async () =>
      expect((await call('DELETE', `/v1/webhooks/endpoints/${id}`, { token })).status).toBe(204),
    );
    await none(async () =>
      expectProblem(await call('DELETE', `/v1/webhooks/endpoints/${id}`, { token }), 404, 'Webhooks.EndpointNotFound'),
    );
    // Platform administration: the organization the endpoint served does not list it.
    const listed = await expectJson(
      await call('GET', '/v1/audit/events?action=platform.webhookEndpoint.created', { token: world.a.tokens.owner }),
    );
    expect(listed.items).toEqual([]);
  });
});
