import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createManualClock } from '@idt/core';
import { mintAccessToken, seedMembership, seedUser, startTestServer, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { caller, expectJson, seedWorld, type World } from './helpers.js';

interface Listed {
  readonly items: Array<{
    id: string;
    type: string;
    title: string;
    message: string;
    actionUrl: string | null;
    organizationId: string;
  }>;
}

describe.each(testDialects())('platform notices through the notifications module on %s', (dialect) => {
  const clock = createManualClock(Date.now());
  let server: TestServer;
  let call: ReturnType<typeof caller>;
  let world: World;

  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      clock,
      modules: { platform: { webhooks: { allowPrivateHosts: true, jobIntervalMs: 3_600_000 } } },
    });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  const notificationsOf = async (token: string, type: string) =>
    ((await expectJson(await call('GET', '/v1/notifications?pageSize=100', { token }))) as Listed).items.filter(
      (item) => item.type === type,
    );
  const titlesOf = async (token: string, type = 'Announcement') => (await notificationsOf(token, type)).map((item) => item.title);
  async function publishAnnouncement(token: string, body: Record<string, unknown>) {
    const created = await expectJson(
      await call('POST', '/v1/admin/announcements', {
        token,
        body: { content: 'Read me.', type: 'Update', ...body },
      }),
      201,
    );
    await expectJson(await call('POST', `/v1/admin/announcements/${created.id}/publish`, { token }));
    return created as { id: string };
  }
  /** Waits until the outbox has handled every event written so far (no sleeping: polls the outbox). */
  const settled = () =>
    vi.waitFor(
      async () => {
        const pending = await server.database.db('core_outbox_deliveries').where({ status: 'pending' }).count({ n: '*' }).first();
        expect(Number(pending?.n)).toBe(0);
      },
      { timeout: 10_000, interval: 20 },
    );

  /** The members who read announcements (the manager role holds neither AnnouncementRead nor NotificationRead). */
  const readers = (tenant: World['a']) => [tenant.tokens.owner, tenant.tokens.admin, tenant.tokens.user];
  const rowsTitled = async (title: string) =>
    (await server.database.db('notifications').where({ title }).select('user_id', 'organization_id')) as Array<{
      user_id: string;
      organization_id: string;
    }>;

  it("turns a published announcement into one in-app notification per reader in the organization, and nobody else's", async () => {
    await publishAnnouncement(world.a.tokens.owner, { title: 'Alpha news', actionUrl: 'https://alpha.example/news' });
    await vi.waitFor(async () => expect(await titlesOf(world.a.tokens.user)).toContain('Alpha news'), {
      timeout: 10_000,
      interval: 25,
    });
    for (const token of readers(world.a)) expect(await titlesOf(token)).toEqual(['Alpha news']);
    const [notice] = await notificationsOf(world.a.tokens.user, 'Announcement');
    expect(notice).toMatchObject({
      message: 'Read me.',
      actionUrl: 'https://alpha.example/news',
      organizationId: world.a.organization.id,
    });
    await settled();
    for (const token of readers(world.b)) expect(await titlesOf(token)).toEqual([]);
    expect((await rowsTitled('Alpha news')).map((row) => row.user_id).sort()).toEqual(
      [world.a.owner.id, world.a.admin.id, world.a.user.id].sort(),
    );
  });

  it('notifies only the readers holding a targeted role, and for target all every reader of every organization', async () => {
    // The B user also becomes a manager: the one member holding the role who reads announcements.
    const membership = await server.database
      .db('identity_memberships')
      .where({ user_id: world.b.user.id, organization_id: world.b.organization.id })
      .first('id');
    await server.database.db('identity_membership_roles').insert({ membership_id: membership.id, role: 'manager' });
    await publishAnnouncement(world.b.tokens.owner, { title: 'Managers only', target: 'role', targetValue: 'Manager' });
    await settled();
    expect((await rowsTitled('Managers only')).map((row) => row.user_id)).toEqual([world.b.user.id]);
    expect(await titlesOf(world.b.tokens.user)).toEqual(['Managers only']);

    // Someone in both tenants gets one notification in each.
    const both = await seedUser(server.database.db, { firstName: 'Bo', lastName: 'Both' });
    await seedMembership(server.database.db, { userId: both.id, organizationId: world.a.organization.id, roles: ['user'] });
    await seedMembership(server.database.db, { userId: both.id, organizationId: world.b.organization.id, roles: ['user'] });
    await publishAnnouncement(world.platformToken, { title: 'Everyone', target: 'all' });
    await settled();
    for (const token of [...readers(world.a), ...readers(world.b), world.platformToken]) {
      expect(await titlesOf(token)).toContain('Everyone');
    }
    const everyone = await rowsTitled('Everyone');
    expect(
      everyone
        .filter((row) => row.user_id === both.id)
        .map((row) => row.organization_id)
        .sort(),
    ).toEqual([world.a.organization.id, world.b.organization.id].sort());
    expect(everyone.some((row) => row.user_id === world.a.manager.id)).toBe(false);
    const inA = await mintAccessToken(server, { sub: both.id, org_id: world.a.organization.id });
    expect(await titlesOf(inA)).toEqual(['Everyone']);
  });

  it('tells the platform administrators, and only them, when delivery disables a webhook endpoint', async () => {
    const receiver: Server = createServer((_req, res) => res.writeHead(410).end());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/gone`;
      const { endpoint } = await expectJson(
        await call('POST', '/v1/webhooks/endpoints', { token: world.platformToken, body: { url } }),
        201,
      );
      await expectJson(await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, { token: world.platformToken }), 202);
      await server.idt.runJobs('platform.webhooks.deliver');
      await vi.waitFor(
        async () =>
          expect(await titlesOf(world.platformToken, 'SystemNotification')).toEqual(['A webhook endpoint was disabled']),
        { timeout: 10_000, interval: 25 },
      );
      const [notice] = await notificationsOf(world.platformToken, 'SystemNotification');
      expect(notice?.message).toContain(url);
      expect(notice?.message).toContain('410');
      expect(notice?.actionUrl).toBe(`/v1/webhooks/endpoints/${endpoint.id}`);
      const events = await server.database.db('core_outbox_events').where({ type: 'WebhookEndpointDisabledEvent' });
      expect(events.map((row) => JSON.parse(row.payload))).toEqual([
        { endpointId: endpoint.id, url, reason: 'The endpoint answered 410 Gone.', disabledAt: expect.stringMatching(/Z$/) },
      ]);
      await settled();
      for (const token of readers(world.a)) expect(await titlesOf(token, 'SystemNotification')).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});
