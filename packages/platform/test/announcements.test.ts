import { createManualClock } from '@idt/core';
import { createTestIdt, mintAccessToken, mintServiceToken, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, outboxEvents, seedWorld, type World } from './helpers.js';

const HOUR = 60 * 60 * 1000;

function announcement(overrides: Record<string, unknown> = {}) {
  return { title: 'Scheduled maintenance', content: 'The service is down on Sunday.', type: 'Maintenance', ...overrides };
}

const RECORD_KEYS = [
  'actionLabel',
  'actionUrl',
  'content',
  'createdAt',
  'expiresAt',
  'id',
  'isDismissible',
  'isPinned',
  'publishAt',
  'status',
  'target',
  'targetValue',
  'title',
  'type',
  'updatedAt',
];

describe.each(testDialects())('announcements over HTTP on %s', (dialect) => {
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

  const create = async (token: string, overrides: Record<string, unknown> = {}) =>
    expectJson(await call('POST', '/v1/admin/announcements', { token, body: announcement(overrides) }), 201);
  const publish = async (token: string, id: string) =>
    expectJson(await call('POST', `/v1/admin/announcements/${id}/publish`, { token }));
  const activeIds = async (token: string) =>
    (await expectJson(await call('GET', '/v1/announcements', { token }))).map((a: { id: string }) => a.id);

  it('creates a Draft (201, Location) that readers see only once published; publishing writes the event', async () => {
    const response = await call('POST', '/v1/admin/announcements', { token: world.a.tokens.owner, body: announcement() });
    const draft = await expectJson(response, 201);
    expect(response.headers.get('location')).toBe(`/v1/admin/announcements/${draft.id}`);
    expect(Object.keys(draft).sort()).toEqual(RECORD_KEYS);
    expect(draft).toMatchObject({
      status: 'Draft',
      target: 'organization',
      targetValue: null,
      publishAt: null,
      isPinned: false,
      isDismissible: true,
    });
    expect(await activeIds(world.a.tokens.user)).not.toContain(draft.id);

    const published = await publish(world.a.tokens.owner, draft.id);
    expect(published).toMatchObject({ id: draft.id, status: 'Published', publishAt: expect.any(String) });
    // Publishing again is a no-op: same record, no second event.
    expect(await publish(world.a.tokens.owner, draft.id)).toEqual(published);
    const events = (await outboxEvents(server.database.db, 'AnnouncementPublishedEvent')).filter(
      (e) => e.announcementId === draft.id,
    );
    expect(events).toEqual([
      {
        announcementId: draft.id,
        organizationId: world.a.organization.id,
        title: 'Scheduled maintenance',
        type: 'Maintenance',
        target: 'organization',
        targetValue: null,
        publishedAt: published.publishAt,
      },
    ]);
    expect(await activeIds(world.a.tokens.user)).toContain(draft.id);
    expect(await activeIds(world.b.tokens.user)).not.toContain(draft.id);
  });

  it('writes one event when the same announcement is published twice at once', async () => {
    const draft = await create(world.b.tokens.owner, { title: 'Race' });
    const responses = await Promise.all([1, 2, 3].map(() => publish_(world.b.tokens.owner, draft.id)));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200]);
    const events = (await outboxEvents(server.database.db, 'AnnouncementPublishedEvent')).filter(
      (e) => e.announcementId === draft.id,
    );
    expect(events).toHaveLength(1);
  });

  it('keeps another organization’s announcements invisible to its managers (404)', async () => {
    const mine = await create(world.a.tokens.owner);
    await expectProblem(
      await call('GET', `/v1/admin/announcements/${mine.id}`, { token: world.b.tokens.owner }),
      404,
      'Announcements.NotFound',
    );
    await expectProblem(await publish_(world.b.tokens.owner, mine.id), 404, 'Announcements.NotFound');
    await expectProblem(
      await call('DELETE', `/v1/admin/announcements/${mine.id}`, { token: world.b.tokens.owner }),
      404,
      'Announcements.NotFound',
    );
    const listed = await expectJson(await call('GET', '/v1/admin/announcements', { token: world.b.tokens.owner }));
    expect(listed.map((a: { id: string }) => a.id)).not.toContain(mine.id);
    await expectProblem(
      await call('POST', `/v1/announcements/${mine.id}/dismiss`, { token: world.b.tokens.user }),
      404,
      'Announcements.NotFound',
    );
  });

  function publish_(token: string, id: string) {
    return call('POST', `/v1/admin/announcements/${id}/publish`, { token });
  }

  it('targets a role (case-insensitive) and, for platform administrators only, every organization', async () => {
    const managers = await create(world.a.tokens.owner, { title: 'For managers', target: 'role', targetValue: 'Manager' });
    expect(managers.targetValue).toBe('manager');
    await publish(world.a.tokens.owner, managers.id);
    // The manager role holds no AnnouncementRead: give the reading to a member with both roles.
    expect(await activeIds(world.a.tokens.user)).not.toContain(managers.id);
    expect(await activeIds(world.a.tokens.admin)).not.toContain(managers.id);
    await server.database.db('identity_membership_roles').insert({
      membership_id: (
        await server.database
          .db('identity_memberships')
          .where({ user_id: world.a.user.id, organization_id: world.a.organization.id })
          .first('id')
      ).id,
      role: 'manager',
    });
    expect(await activeIds(world.a.tokens.user)).toContain(managers.id);

    await expectProblem(
      await call('POST', '/v1/admin/announcements', { token: world.a.tokens.owner, body: announcement({ target: 'all' }) }),
      403,
      'Auth.Forbidden',
    );
    const everyone = await create(world.platformToken, { title: 'For everyone', target: 'all' });
    await publish(world.platformToken, everyone.id);
    expect(await activeIds(world.a.tokens.user)).toContain(everyone.id);
    expect(await activeIds(world.b.tokens.user)).toContain(everyone.id);
    // Only the platform organization manages it.
    await expectProblem(
      await call('GET', `/v1/admin/announcements/${everyone.id}`, { token: world.b.tokens.owner }),
      404,
      'Announcements.NotFound',
    );
  });

  it('lists pinned first, then newest', async () => {
    const first = await create(world.b.tokens.owner, { title: 'First' });
    await publish(world.b.tokens.owner, first.id);
    const pinned = await create(world.b.tokens.owner, { title: 'Pinned', isPinned: true });
    await publish(world.b.tokens.owner, pinned.id);
    const last = await create(world.b.tokens.owner, { title: 'Last' });
    await publish(world.b.tokens.owner, last.id);
    const titles = (await expectJson(await call('GET', '/v1/announcements', { token: world.b.tokens.user }))).map(
      (a: { title: string }) => a.title,
    );
    expect(titles.indexOf('Pinned')).toBe(0);
    expect(titles.indexOf('Last')).toBeLessThan(titles.indexOf('First'));
  });

  it('dismisses per user (204, idempotent); a non-dismissible one is 422', async () => {
    const note = await create(world.a.tokens.owner, { title: 'Dismiss me' });
    await publish(world.a.tokens.owner, note.id);
    expect((await call('POST', `/v1/announcements/${note.id}/dismiss`, { token: world.a.tokens.user })).status).toBe(204);
    expect((await call('POST', `/v1/announcements/${note.id}/dismiss`, { token: world.a.tokens.user })).status).toBe(204);
    expect(await activeIds(world.a.tokens.user)).not.toContain(note.id);
    expect(await activeIds(world.a.tokens.admin)).toContain(note.id);

    const sticky = await create(world.a.tokens.owner, { title: 'Sticky', isDismissible: false });
    await publish(world.a.tokens.owner, sticky.id);
    await expectProblem(
      await call('POST', `/v1/announcements/${sticky.id}/dismiss`, { token: world.a.tokens.user }),
      422,
      'Announcements.NotDismissible',
    );
    const draft = await create(world.a.tokens.owner, { title: 'Not out yet' });
    await expectProblem(
      await call('POST', `/v1/announcements/${draft.id}/dismiss`, { token: world.a.tokens.user }),
      404,
      'Announcements.NotFound',
    );
    await expectProblem(
      await call('POST', '/v1/announcements/not-a-guid/dismiss', { token: world.a.tokens.user }),
      404,
      'Announcements.NotFound',
    );
    const service = await mintServiceToken(server, {
      clientId: 'sa-alpha-reader',
      organizationId: world.a.organization.id,
      scope: 'announcements.read',
    });
    expect(await activeIds(service)).toContain(note.id);
    await expectProblem(await call('POST', `/v1/announcements/${note.id}/dismiss`, { token: service }), 403, 'Auth.Forbidden');
  });

  it('edits Draft, Scheduled and Published ones; PUT plans Draft/Scheduled by publishAt; Archived ones are 422', async () => {
    const draft = await create(world.a.tokens.owner, { title: 'Editable' });
    const later = new Date(Date.now() + 24 * HOUR).toISOString();
    const scheduled = await expectJson(
      await call('PUT', `/v1/admin/announcements/${draft.id}`, {
        token: world.a.tokens.owner,
        body: announcement({ title: 'Later', publishAt: later }),
      }),
    );
    expect(scheduled).toMatchObject({ status: 'Scheduled', title: 'Later', publishAt: later });
    const unscheduled = await expectJson(
      await call('PUT', `/v1/admin/announcements/${draft.id}`, {
        token: world.a.tokens.owner,
        body: announcement({ title: 'Back' }),
      }),
    );
    expect(unscheduled).toMatchObject({ status: 'Draft', publishAt: null });
    const published = await publish(world.a.tokens.owner, draft.id);
    const edited = await expectJson(
      await call('PUT', `/v1/admin/announcements/${draft.id}`, {
        token: world.a.tokens.owner,
        body: announcement({ title: 'Fixed typo', publishAt: later }),
      }),
    );
    expect(edited).toMatchObject({ status: 'Published', title: 'Fixed typo', publishAt: published.publishAt });

    expect((await call('DELETE', `/v1/admin/announcements/${draft.id}`, { token: world.a.tokens.owner })).status).toBe(204);
    expect((await call('DELETE', `/v1/admin/announcements/${draft.id}`, { token: world.a.tokens.owner })).status).toBe(204);
    expect(
      await expectJson(await call('GET', `/v1/admin/announcements/${draft.id}`, { token: world.a.tokens.owner })),
    ).toMatchObject({
      status: 'Archived',
    });
    expect(await activeIds(world.a.tokens.user)).not.toContain(draft.id);
    await expectProblem(await publish_(world.a.tokens.owner, draft.id), 422, 'Announcements.InvalidStatusTransition');
    await expectProblem(
      await call('PUT', `/v1/admin/announcements/${draft.id}`, { token: world.a.tokens.owner, body: announcement() }),
      422,
      'Announcements.InvalidStatusTransition',
    );
    const archived = await expectJson(
      await call('GET', '/v1/admin/announcements?status=archived', { token: world.a.tokens.owner }),
    );
    expect(archived.map((a: { id: string }) => a.id)).toEqual([draft.id]);
  });

  it('shows nothing to the members of an organization that turned announcements.enabled off', async () => {
    const shown = await create(world.b.tokens.owner, { title: 'Hidden soon' });
    await publish(world.b.tokens.owner, shown.id);
    expect(await activeIds(world.b.tokens.user)).toContain(shown.id);
    await expectJson(
      await call('PUT', '/v1/configuration/settings/announcements.enabled', {
        token: world.b.tokens.owner,
        body: { value: false },
      }),
    );
    expect(await activeIds(world.b.tokens.user)).toEqual([]);
    expect(await activeIds(world.a.tokens.user)).not.toEqual([]);
    expect(
      (await call('DELETE', '/v1/configuration/settings/announcements.enabled', { token: world.b.tokens.owner })).status,
    ).toBe(204);
    expect(await activeIds(world.b.tokens.user)).toContain(shown.id);
  });

  it('validates the body (400 keyed by field)', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ title: '' }, 'title'],
      [{ title: 'x'.repeat(201) }, 'title'],
      [{ content: 'Hi <SCRIPT>alert(1)</script>' }, 'content'],
      [{ content: 'x'.repeat(5001) }, 'content'],
      [{ type: 'News' }, 'type'],
      [{ target: 'plan' }, 'target'],
      [{ target: 'role' }, 'targetValue'],
      [{ target: 'organization', targetValue: 'x' }, 'targetValue'],
      [{ publishAt: '2030-01-02T00:00:00Z', expiresAt: '2030-01-01T00:00:00Z' }, 'expiresAt'],
      [{ actionUrl: 'javascript:alert(1)' }, 'actionUrl'],
      [{ actionUrl: '//evil.example' }, 'actionUrl'],
      [{ publishAt: 'soon' }, 'publishAt'],
    ];
    for (const [overrides, field] of cases) {
      const problem = await expectProblem(
        await call('POST', '/v1/admin/announcements', { token: world.a.tokens.owner, body: announcement(overrides) }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(problem.errors), JSON.stringify(overrides)).toContain(field);
    }
  });

  it('needs AnnouncementManage to manage and AnnouncementRead to read', async () => {
    await expectProblem(
      await call('POST', '/v1/admin/announcements', { token: world.a.tokens.user, body: announcement() }),
      403,
      'Auth.Forbidden',
    );
    await expectProblem(await call('GET', '/v1/admin/announcements', { token: world.a.tokens.user }), 403, 'Auth.Forbidden');
    await expectProblem(await call('GET', '/v1/announcements', { token: world.a.tokens.manager }), 403, 'Auth.Forbidden');
    await expectProblem(await call('GET', '/v1/announcements'), 401, 'Auth.Unauthenticated');
    await expectProblem(await call('GET', '/v1/announcements', { token: world.outsiderToken }), 403, 'Tenant.Required');
  });
});

describe.each(testDialects())('the announcement job on a manual clock on %s', (dialect) => {
  const clock = createManualClock(Date.now());
  let server: TestIdt;
  let world: World;

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  const token = (who: 'owner' | 'user') => mintAccessToken(server, { sub: world.a[who].id, org_id: world.a.organization.id });
  const activeIds = async () =>
    (await expectJson(await caller(server)('GET', '/v1/announcements', { token: await token('user') }))).map(
      (a: { id: string }) => a.id,
    );
  const statusOf = async (id: string) =>
    (await expectJson(await caller(server)('GET', `/v1/admin/announcements/${id}`, { token: await token('owner') }))).status;

  it('publishes scheduled announcements when due and expires them after expiresAt, never sleeping', async () => {
    const start = clock.now().getTime();
    const publishAt = new Date(start + HOUR).toISOString();
    const expiresAt = new Date(start + 3 * HOUR).toISOString();
    const scheduled = await expectJson(
      await caller(server)('POST', '/v1/admin/announcements', {
        token: await token('owner'),
        body: announcement({ publishAt, expiresAt }),
      }),
      201,
    );
    expect(scheduled.status).toBe('Scheduled');
    await server.idt.runJobs('platform.announcements.schedule');
    expect(await statusOf(scheduled.id)).toBe('Scheduled');

    clock.advance(HOUR);
    await server.idt.runJobs('platform.announcements.schedule');
    expect(await statusOf(scheduled.id)).toBe('Published');
    expect(await activeIds()).toContain(scheduled.id);
    expect((await outboxEvents(server.database.db, 'AnnouncementPublishedEvent')).map((e) => e.announcementId)).toEqual([
      scheduled.id,
    ]);
    await server.idt.runJobs('platform.announcements.schedule');
    expect(await outboxEvents(server.database.db, 'AnnouncementPublishedEvent')).toHaveLength(1);

    clock.advance(2 * HOUR - 1);
    expect(await activeIds()).toContain(scheduled.id);
    clock.advance(1);
    // Readers stop seeing it at expiresAt, even before the job runs.
    expect(await activeIds()).not.toContain(scheduled.id);
    await server.idt.runJobs('platform.announcements.schedule');
    expect(await statusOf(scheduled.id)).toBe('Expired');
  });

  it('expires, without publishing, a scheduled announcement whose whole window passed before the job ran', async () => {
    const start = clock.now().getTime();
    const missed = await expectJson(
      await caller(server)('POST', '/v1/admin/announcements', {
        token: await token('owner'),
        body: announcement({
          publishAt: new Date(start + HOUR).toISOString(),
          expiresAt: new Date(start + 2 * HOUR).toISOString(),
        }),
      }),
      201,
    );
    const before = (await outboxEvents(server.database.db, 'AnnouncementPublishedEvent')).length;
    clock.advance(3 * HOUR);
    await server.idt.runJobs('platform.announcements.schedule');
    expect(await statusOf(missed.id)).toBe('Expired');
    expect(await outboxEvents(server.database.db, 'AnnouncementPublishedEvent')).toHaveLength(before);
  });
});
