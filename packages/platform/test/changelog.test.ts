import { createTestIdt, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, outboxEvents, seedWorld, type World } from './helpers.js';

function entry(overrides: Record<string, unknown> = {}) {
  return {
    version: '1.0.0',
    title: 'First release',
    content: 'Everything is new.',
    releasedAt: '2026-01-10T09:00:00.000Z',
    items: [
      { description: 'Sign-in with passkeys', type: 'Feature' },
      { description: 'Faster token endpoint', type: 'Improvement' },
    ],
    ...overrides,
  };
}

describe.each(testDialects())('changelog over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: World;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  const create = async (overrides: Record<string, unknown> = {}) =>
    expectJson(await call('POST', '/v1/admin/changelog', { token: world.platformToken, body: entry(overrides) }), 201);

  it('creates an unpublished entry (201, Location) that anonymous readers do not see until it is published', async () => {
    const response = await call('POST', '/v1/admin/changelog', { token: world.platformToken, body: entry() });
    const created = await expectJson(response, 201);
    expect(response.headers.get('location')).toBe(`/v1/admin/changelog/${created.id}`);
    expect(created).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), ...entry(), isPublished: false });
    expect(await expectJson(await call('GET', '/v1/changelog'))).toEqual([]);
    await expectProblem(await call('GET', '/v1/changelog/1.0.0'), 404, 'Changelog.NotFound');
    await expectProblem(await call('GET', '/v1/changelog/latest'), 404, 'Changelog.NotFound');

    const published = await expectJson(
      await call('POST', `/v1/admin/changelog/${created.id}/publish`, { token: world.platformToken }),
    );
    expect(published).toMatchObject({ id: created.id, isPublished: true });
    // Publishing again changes nothing and writes no second event.
    await expectJson(await call('POST', `/v1/admin/changelog/${created.id}/publish`, { token: world.platformToken }));
    const events = await outboxEvents(server.database.db, 'ChangelogPublishedEvent');
    expect(events).toEqual([
      expect.objectContaining({
        entryId: created.id,
        version: '1.0.0',
        title: 'First release',
        publishedBy: world.platformAdmin.id,
      }),
    ]);

    expect(await expectJson(await call('GET', '/v1/changelog'))).toEqual([published]);
    expect(await expectJson(await call('GET', '/v1/changelog/1.0.0'))).toEqual(published);
    expect(await expectJson(await call('GET', '/v1/changelog/latest'))).toEqual(published);
  });

  it('answers 409 Changelog.VersionExists for a duplicate version, also to a concurrent double POST', async () => {
    await expectProblem(
      await call('POST', '/v1/admin/changelog', { token: world.platformToken, body: entry({ title: 'Again' }) }),
      409,
      'Changelog.VersionExists',
    );
    const responses = await Promise.all(
      [1, 2, 3].map(() => call('POST', '/v1/admin/changelog', { token: world.platformToken, body: entry({ version: '1.1.0' }) })),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([201, 409, 409]);
    for (const response of responses) {
      const body = (await response.json()) as { code: string };
      if (response.status === 409) expect(body.code).toBe('Changelog.VersionExists');
    }
    expect(await server.database.db('platform_changelog_entries').where({ version: '1.1.0' })).toHaveLength(1);
  });

  it('lists newest releasedAt first, honours limit (1..100), and unpublishes', async () => {
    const older = await create({ version: '0.9.0', releasedAt: '2025-12-01T00:00:00.000Z' });
    const newer = await create({ version: '2.0.0-rc.1', releasedAt: '2026-02-01T00:00:00.000Z' });
    for (const id of [older.id, newer.id]) {
      await expectJson(await call('POST', `/v1/admin/changelog/${id}/publish`, { token: world.platformToken }));
    }
    const versions = (await expectJson(await call('GET', '/v1/changelog'))).map((e: { version: string }) => e.version);
    expect(versions).toEqual(['2.0.0-rc.1', '1.0.0', '0.9.0']);
    expect((await expectJson(await call('GET', '/v1/changelog?limit=1'))).map((e: { version: string }) => e.version)).toEqual([
      '2.0.0-rc.1',
    ]);
    expect((await expectJson(await call('GET', '/v1/changelog/latest'))).version).toBe('2.0.0-rc.1');
    for (const limit of ['0', '101', 'ten']) {
      const problem = await expectProblem(await call('GET', `/v1/changelog?limit=${limit}`), 400, 'Validation.Failed');
      expect(Object.keys(problem.errors)).toEqual(['limit']);
    }
    const unpublished = await expectJson(
      await call('POST', `/v1/admin/changelog/${newer.id}/unpublish`, { token: world.platformToken }),
    );
    expect(unpublished.isPublished).toBe(false);
    expect((await expectJson(await call('GET', '/v1/changelog/latest'))).version).toBe('1.0.0');
    await expectProblem(await call('GET', '/v1/changelog/2.0.0-rc.1'), 404, 'Changelog.NotFound');
  });

  it('updates an entry with PUT, keeping its publication state; a taken version is 409', async () => {
    const draft = await create({ version: '3.0.0' });
    const updated = await expectJson(
      await call('PUT', `/v1/admin/changelog/${draft.id}`, {
        token: world.platformToken,
        body: entry({ version: '3.0.1', title: 'Renamed', items: [{ description: 'Old API removed', type: 'Breaking' }] }),
      }),
    );
    expect(updated).toMatchObject({ version: '3.0.1', title: 'Renamed', isPublished: false, items: [{ type: 'Breaking' }] });
    await expectProblem(
      await call('PUT', `/v1/admin/changelog/${draft.id}`, { token: world.platformToken, body: entry({ version: '1.0.0' }) }),
      409,
      'Changelog.VersionExists',
    );
    await expectProblem(
      await call('PUT', '/v1/admin/changelog/00000000-0000-4000-8000-000000000000', {
        token: world.platformToken,
        body: entry({ version: '9.9.9' }),
      }),
      404,
      'Changelog.NotFound',
    );
    const all = await expectJson(await call('GET', '/v1/admin/changelog', { token: world.platformToken }));
    expect(all.map((e: { version: string }) => e.version)).toContain('3.0.1');
    expect(await expectJson(await call('GET', `/v1/admin/changelog/${draft.id}`, { token: world.platformToken }))).toMatchObject({
      version: '3.0.1',
    });
  });

  it('validates the body (400 keyed by field)', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ version: 'v1.0.0' }, 'version'],
      [{ version: '1.0' }, 'version'],
      [{ title: '' }, 'title'],
      [{ content: 'x'.repeat(10_001) }, 'content'],
      [{ releasedAt: 'yesterday' }, 'releasedAt'],
      [{ items: [{ description: 'x', type: 'Chore' }] }, 'items[0].type'],
      [{ items: [{ description: '', type: 'Fix' }] }, 'items[0].description'],
    ];
    for (const [overrides, field] of cases) {
      const problem = await expectProblem(
        await call('POST', '/v1/admin/changelog', {
          token: world.platformToken,
          body: entry({ version: '4.0.0', ...overrides }),
        }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors), field).toContain(field);
    }
  });

  it('registers the platform events in the event catalog (AsyncAPI)', () => {
    const types = server.idt.infrastructure.events
      .catalog()
      .events.filter((event) => event.module === 'platform')
      .map((event) => event.type);
    expect(types.sort()).toEqual([
      'AnnouncementPublishedEvent',
      'ChangelogPublishedEvent',
      'FeatureFlagChangedEvent',
      'SettingChangedEvent',
      'WebhookEndpointDisabledEvent',
    ]);
  });

  it('lets only platform administrators write (an organization owner holds ChangelogManage but gets 403)', async () => {
    for (const token of [world.a.tokens.owner, world.a.tokens.user]) {
      await expectProblem(
        await call('POST', '/v1/admin/changelog', { token, body: entry({ version: '5.0.0' }) }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(await call('GET', '/v1/admin/changelog', { token }), 403, 'Auth.Forbidden');
    }
    await expectProblem(
      await call('POST', '/v1/admin/changelog', { body: entry({ version: '5.0.0' }) }),
      401,
      'Auth.Unauthenticated',
    );
    // Anonymous reads need no credential at all, and an invalid one is not even read.
    expect((await call('GET', '/v1/changelog', { token: 'not-a-token' })).status).toBe(200);
  });
});
