import {
  bearer,
  mintServiceToken,
  startTestServer,
  type TenantWithTokens,
  type TestServer,
  tenantWithTokens,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe.each(testDialects())('notifications API on %s', (dialect) => {
  let server: TestServer;
  let acme: TenantWithTokens;
  let globex: TenantWithTokens;

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    acme = await tenantWithTokens(server, 'Acme');
    globex = await tenantWithTokens(server, 'Globex');
  });
  afterAll(async () => {
    await server?.close();
  });

  async function call(token: string, method: string, path: string, body?: unknown) {
    const response = await server.fetch(path, {
      method,
      headers: bearer(token),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  }
  async function send(tenant: TenantWithTokens, userId: string, title: string) {
    const created = await call(tenant.tokens.admin, 'POST', '/v1/notifications', {
      userId,
      type: 'SystemNotification',
      title,
      message: `About ${title}`,
    });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }

  it('sends, lists newest first with paging, counts unread, and marks read idempotently', async () => {
    const ids = [];
    for (const title of ['one', 'two', 'three']) ids.push(await send(acme, acme.user.id, title));
    const page = await call(acme.tokens.user, 'GET', '/v1/notifications?page=1&pageSize=2');
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({
      totalCount: 3,
      page: 1,
      pageSize: 2,
      totalPages: 2,
      hasNextPage: true,
      hasPreviousPage: false,
    });
    expect(page.body.items.map((item: { title: string }) => item.title)).toEqual(['three', 'two']);
    expect(page.body.items[0]).toEqual({
      id: ids[2],
      userId: acme.user.id,
      organizationId: acme.organization.id,
      type: 'SystemNotification',
      title: 'three',
      message: 'About three',
      isRead: false,
      readAt: null,
      actionUrl: null,
      createdAt: expect.any(String),
    });
    expect((await call(acme.tokens.user, 'GET', '/v1/notifications?pageSize=1000')).body.pageSize).toBe(100);
    expect((await call(acme.tokens.user, 'GET', '/v1/notifications/unread-count')).body).toEqual({ count: 3 });

    expect((await call(acme.tokens.user, 'POST', `/v1/notifications/${ids[0]}/read`)).status).toBe(204);
    const readAt = (await call(acme.tokens.user, 'GET', '/v1/notifications')).body.items[2].readAt;
    expect(readAt).toBeTruthy();
    expect((await call(acme.tokens.user, 'POST', `/v1/notifications/${ids[0]}/read`)).status).toBe(204);
    expect((await call(acme.tokens.user, 'GET', '/v1/notifications')).body.items[2].readAt).toBe(readAt);
    expect((await call(acme.tokens.user, 'GET', '/v1/notifications/unread-count')).body).toEqual({ count: 2 });

    expect((await call(acme.tokens.user, 'POST', '/v1/notifications/read-all')).status).toBe(204);
    expect((await call(acme.tokens.user, 'GET', '/v1/notifications/unread-count')).body).toEqual({ count: 0 });

    expect((await call(acme.tokens.user, 'POST', `/v1/notifications/${ids[1]}/archive`)).status).toBe(204);
    const afterArchive = await call(acme.tokens.user, 'GET', '/v1/notifications');
    expect(afterArchive.body.totalCount).toBe(2);
    expect(afterArchive.body.items.map((item: { id: string }) => item.id)).not.toContain(ids[1]);
    expect((await call(acme.tokens.user, 'POST', `/v1/notifications/${ids[1]}/archive`)).status).toBe(404);
  });

  it("answers 404 for another user's or another organization's notification, and never lists them", async () => {
    const mine = await send(acme, acme.owner.id, 'for the owner');
    const theirs = await send(globex, globex.user.id, 'for globex');
    for (const [token, id] of [
      [acme.tokens.user, mine],
      [acme.tokens.admin, mine],
      [acme.tokens.owner, theirs],
      [globex.tokens.admin, mine],
    ] as const) {
      for (const action of ['read', 'archive']) {
        const answer = await call(token, 'POST', `/v1/notifications/${id}/${action}`);
        expect(answer.status).toBe(404);
        expect(answer.body).toMatchObject({ code: 'Notifications.NotFound' });
      }
    }
    const globexList = await call(globex.tokens.user, 'GET', '/v1/notifications');
    expect(globexList.body.items.map((item: { title: string }) => item.title)).toEqual(['for globex']);
    const acmeAdmin = await call(acme.tokens.admin, 'GET', '/v1/notifications');
    expect(acmeAdmin.body.totalCount).toBe(0);
    // Still unread: nobody else could touch it.
    expect((await call(acme.tokens.owner, 'GET', '/v1/notifications/unread-count')).body).toEqual({ count: 1 });
    // Managers do not hold NotificationRead (SPEC-NOTES roles).
    expect((await call(acme.tokens.manager, 'GET', '/v1/notifications')).status).toBe(403);
  });

  it('validates the body of a new notification and names the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ userId: acme.user.id, type: 'Spam', title: 't', message: 'm' }, 'type'],
      [{ userId: acme.user.id, type: 'SystemNotification', title: 'x'.repeat(201), message: 'm' }, 'title'],
      [{ userId: acme.user.id, type: 'SystemNotification', title: 't', message: 'x'.repeat(2001) }, 'message'],
      [
        { userId: acme.user.id, type: 'SystemNotification', title: 't', message: 'm', actionUrl: 'javascript:alert(1)' },
        'actionUrl',
      ],
      [{ userId: acme.user.id, type: 'SystemNotification', title: '', message: 'm' }, 'title'],
      [{ type: 'SystemNotification', title: 't', message: 'm' }, 'userId'],
    ];
    const before = await server.database.db('notifications').count({ count: '*' }).first();
    for (const [body, field] of cases) {
      const answer = await call(acme.tokens.admin, 'POST', '/v1/notifications', body);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('Validation.Failed');
      expect(Object.keys(answer.body.errors)).toContain(field);
    }
    const after = await server.database.db('notifications').count({ count: '*' }).first();
    expect(Number(after?.count)).toBe(Number(before?.count));
  });

  it('lets only NotificationsWrite send, and only to members of the caller organization', async () => {
    const denied = await call(acme.tokens.user, 'POST', '/v1/notifications', {
      userId: acme.manager.id,
      type: 'SystemNotification',
      title: 't',
      message: 'm',
    });
    expect(denied.status).toBe(403);
    const outsider = await call(acme.tokens.admin, 'POST', '/v1/notifications', {
      userId: globex.user.id,
      type: 'SystemNotification',
      title: 't',
      message: 'm',
    });
    expect(outsider.status).toBe(422);
    expect(outsider.body.code).toBe('Notifications.RecipientNotMember');
    const service = await mintServiceToken(server, {
      clientId: `notifier-${dialect}`,
      organizationId: acme.organization.id,
      scope: 'notifications.write',
    });
    const byService = await call(service, 'POST', '/v1/notifications', {
      userId: acme.user.id,
      type: 'Announcement',
      title: 'From a service',
      message: 'm',
      actionUrl: 'https://example.com/news',
    });
    expect(byService.status).toBe(201);
    // A service account has no notifications of its own.
    const serviceRead = await mintServiceToken(server, {
      clientId: `reader-${dialect}`,
      organizationId: acme.organization.id,
      scope: 'notifications.read',
    });
    expect((await call(serviceRead, 'GET', '/v1/notifications')).body.totalCount).toBe(0);
    expect((await call(acme.tokens.user, 'GET', '/v1/notifications')).status).toBe(200);
    const anonymous = await server.fetch('/v1/notifications');
    expect(anonymous.status).toBe(401);
  });

  it('keeps preferences per channel and type (opt-out), and refuses unknown ones', async () => {
    const initial = await call(globex.tokens.admin, 'GET', '/v1/notifications/preferences');
    expect(initial.status).toBe(200);
    expect(initial.body.channels).toHaveLength(2);
    expect(initial.body.channels.every((channel: { enabled: boolean }) => channel.enabled)).toBe(true);
    expect(
      (
        await call(globex.tokens.admin, 'PUT', '/v1/notifications/preferences', {
          channel: 'email',
          type: 'InquirySubmitted',
          enabled: false,
        })
      ).status,
    ).toBe(204);
    expect(
      (await call(globex.tokens.admin, 'PUT', '/v1/notifications/preferences', { channel: 'inApp', enabled: false })).status,
    ).toBe(204);
    const saved = (await call(globex.tokens.admin, 'GET', '/v1/notifications/preferences')).body.channels;
    const email = saved.find((channel: { channel: string }) => channel.channel === 'email');
    expect(email.enabled).toBe(true);
    expect(email.types.find((type: { type: string }) => type.type === 'InquirySubmitted').enabled).toBe(false);
    expect(saved.find((channel: { channel: string }) => channel.channel === 'inApp').enabled).toBe(false);
    // Another member of the organization is unaffected.
    const other = (await call(globex.tokens.user, 'GET', '/v1/notifications/preferences')).body.channels;
    expect(other.every((channel: { enabled: boolean }) => channel.enabled)).toBe(true);
    for (const body of [
      { channel: 'sms', enabled: false },
      { channel: 'email', type: 'Spam', enabled: false },
      { channel: 'email' },
    ]) {
      const answer = await call(globex.tokens.admin, 'PUT', '/v1/notifications/preferences', body);
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('Validation.Failed');
    }
  });
});
