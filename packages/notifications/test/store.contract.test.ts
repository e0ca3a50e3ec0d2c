import { newId } from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, seedMembership, seedOrganization, seedUser, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notificationsMigrations } from '../src/knex/migrations.js';
import { createKnexNotificationStore } from '../src/knex/store.js';
import type { NotificationOwner, NotificationStore, StoredNotification } from '../src/store.js';

/** The contract of every NotificationStore, run against the knex store on each engine. */
describe.each(testDialects())('the notification store on %s', (dialect) => {
  let database: TestDatabase;
  let store: NotificationStore;
  let acme: string;
  let globex: string;

  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, notificationsMigrations]);
    store = createKnexNotificationStore(database.db);
    acme = (await seedOrganization(database.db, { name: 'Acme' })).id;
    globex = (await seedOrganization(database.db, { name: 'Globex' })).id;
  });
  afterAll(async () => {
    await database?.destroy();
  });

  /** A fresh user with no notifications: each test starts from an empty inbox. */
  const newUser = async () => (await seedUser(database.db)).id;
  let clock = Date.parse('2030-01-01T00:00:00.000Z');
  /** A notification of `userId`, created a second after the previous one. */
  const notification = (userId: string, overrides: Partial<StoredNotification> = {}): StoredNotification => {
    clock += 1000;
    return {
      id: newId(),
      userId,
      organizationId: acme,
      type: 'SystemNotification',
      title: 'Title',
      message: 'Message',
      actionUrl: null,
      createdAt: new Date(clock).toISOString(),
      sourceKey: null,
      ...overrides,
    };
  };
  const stored = async (userId: string, overrides: Partial<StoredNotification> = {}) => {
    const created = notification(userId, overrides);
    expect(await store.insert(created)).toBe(true);
    return created;
  };
  const listed = async (owner: NotificationOwner) =>
    (await store.list(owner, { limit: 100, offset: 0 })).items.map((item) => item.title);

  it('stores a notification and finds it by id, unread', async () => {
    const userId = await newUser();
    const created = await stored(userId, { actionUrl: '/v1/inquiries/1', type: 'InquirySubmitted' });
    expect(await store.find(created.id)).toEqual({
      id: created.id,
      userId,
      organizationId: acme,
      type: 'InquirySubmitted',
      title: 'Title',
      message: 'Message',
      isRead: false,
      readAt: null,
      actionUrl: '/v1/inquiries/1',
      createdAt: created.createdAt,
    });
    expect(await store.find(newId())).toBeUndefined();
  });

  it('stores a source key once per user', async () => {
    const [ada, bob] = [await newUser(), await newUser()];
    expect(await store.insert(notification(ada, { sourceKey: 'event-1:handler' }))).toBe(true);
    expect(await store.insert(notification(ada, { sourceKey: 'event-1:handler' }))).toBe(false);
    expect(await store.insert(notification(bob, { sourceKey: 'event-1:handler' }))).toBe(true);
    // Without a source key, nothing is deduplicated.
    expect(await store.insert(notification(ada))).toBe(true);
    expect(await store.insert(notification(ada))).toBe(true);
    expect(await store.countUnread({ userId: ada, organizationId: acme })).toBe(3);
  });

  it('lets exactly one of concurrent inserts of a source key win', async () => {
    const userId = await newUser();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => store.insert(notification(userId, { sourceKey: 'event-2:handler' }))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('lists the owner’s notifications of the organization and the personal ones, newest first, with the total', async () => {
    const [ada, bob] = [await newUser(), await newUser()];
    const sameTime = new Date(clock + 60_000).toISOString();
    await stored(ada, { title: 'acme old' });
    await stored(ada, { title: 'personal', organizationId: null });
    await stored(ada, { title: 'globex', organizationId: globex });
    await stored(bob, { title: 'bob' });
    // Ties on the creation time are broken by id, descending.
    const [first, second] = [newId(), newId()].sort();
    await stored(ada, { id: first as string, title: 'tie low', createdAt: sameTime });
    await stored(ada, { id: second as string, title: 'tie high', createdAt: sameTime });
    const owner = { userId: ada, organizationId: acme };
    expect(await listed(owner)).toEqual(['tie high', 'tie low', 'personal', 'acme old']);
    expect(await listed({ userId: ada, organizationId: globex })).toEqual(['globex', 'personal']);
    const page = await store.list(owner, { limit: 2, offset: 1 });
    expect(page.items.map((item) => item.title)).toEqual(['tie low', 'personal']);
    expect(page.totalCount).toBe(4);
    expect(await store.list({ userId: '', organizationId: '' }, { limit: 10, offset: 0 })).toEqual({ items: [], totalCount: 0 });
  });

  it('marks one notification read once, and only the owner’s', async () => {
    const userId = await newUser();
    const owner = { userId, organizationId: acme };
    const created = await stored(userId);
    expect(await store.markRead({ userId, organizationId: globex }, created.id, '2031-01-01T00:00:00.000Z')).toBe(false);
    expect(await store.markRead({ userId: await newUser(), organizationId: acme }, created.id, '2031-01-01T00:00:00.000Z')).toBe(
      false,
    );
    expect(await store.markRead(owner, newId(), '2031-01-01T00:00:00.000Z')).toBe(false);
    expect(await store.countUnread(owner)).toBe(1);
    expect(await store.markRead(owner, created.id, '2031-01-01T00:00:00.000Z')).toBe(true);
    // A notification read already keeps the time it was first read.
    expect(await store.markRead(owner, created.id, '2032-01-01T00:00:00.000Z')).toBe(true);
    expect(await store.find(created.id)).toMatchObject({ isRead: true, readAt: '2031-01-01T00:00:00.000Z' });
    expect(await store.countUnread(owner)).toBe(0);
  });

  it('marks all of the owner’s unread notifications read, keeping the time of those read before', async () => {
    const userId = await newUser();
    const owner = { userId, organizationId: acme };
    const early = await stored(userId);
    const personal = await stored(userId, { organizationId: null });
    const elsewhere = await stored(userId, { organizationId: globex });
    await store.markRead(owner, early.id, '2031-01-01T00:00:00.000Z');
    await store.markAllRead(owner, '2031-06-01T00:00:00.000Z');
    expect(await store.countUnread(owner)).toBe(0);
    expect((await store.find(early.id))?.readAt).toBe('2031-01-01T00:00:00.000Z');
    expect((await store.find(personal.id))?.readAt).toBe('2031-06-01T00:00:00.000Z');
    expect((await store.find(elsewhere.id))?.readAt).toBeNull();
  });

  it('archives one of the owner’s notifications, which then is not the owner’s any more', async () => {
    const userId = await newUser();
    const owner = { userId, organizationId: acme };
    const created = await stored(userId, { title: 'archived' });
    await stored(userId, { title: 'kept' });
    expect(await store.archive({ userId, organizationId: globex }, created.id, '2031-01-01T00:00:00.000Z')).toBe(false);
    expect(await store.archive(owner, created.id, '2031-01-01T00:00:00.000Z')).toBe(true);
    expect(await store.archive(owner, created.id, '2031-01-02T00:00:00.000Z')).toBe(false);
    expect(await store.markRead(owner, created.id, '2031-01-02T00:00:00.000Z')).toBe(false);
    expect(await listed(owner)).toEqual(['kept']);
    expect(await store.countUnread(owner)).toBe(1);
    // Found by id all the same (the hub of another instance reads it back).
    expect((await store.find(created.id))?.title).toBe('archived');
  });

  it('stores preferences per member and organization, replacing one of the same channel and type', async () => {
    const userId = await newUser();
    expect(await store.preferences(userId, acme)).toEqual([]);
    await store.savePreference(userId, acme, { channel: 'email', type: '*', enabled: false }, '2031-01-01T00:00:00.000Z');
    await store.savePreference(
      userId,
      acme,
      { channel: 'inApp', type: 'Announcement', enabled: false },
      '2031-01-01T00:00:00.000Z',
    );
    await store.savePreference(
      userId,
      acme,
      { channel: 'inApp', type: 'Announcement', enabled: true },
      '2031-01-02T00:00:00.000Z',
    );
    const sorted = (await store.preferences(userId, acme)).sort((a, b) => a.channel.localeCompare(b.channel));
    expect(sorted).toEqual([
      { channel: 'email', type: '*', enabled: false },
      { channel: 'inApp', type: 'Announcement', enabled: true },
    ]);
    expect(await store.preferences(userId, globex)).toEqual([]);
  });

  it('tells an active member from a pending one and from a stranger', async () => {
    const [active, pending] = [await newUser(), await newUser()];
    await seedMembership(database.db, { userId: active, organizationId: acme });
    await seedMembership(database.db, { userId: pending, organizationId: acme, status: 'pending' });
    expect(await store.isActiveMember(active, acme)).toBe(true);
    expect(await store.isActiveMember(pending, acme)).toBe(false);
    expect(await store.isActiveMember(active, globex)).toBe(false);
  });

  it('records each mail once per source key and recipient', async () => {
    const key = `${newId()}:inquiry-submitted`;
    expect(await store.wasMailed(key, 'ada@example.com')).toBe(false);
    await store.recordMail(key, 'ada@example.com', '2031-01-01T00:00:00.000Z');
    await store.recordMail(key, 'ada@example.com', '2031-01-01T00:00:01.000Z');
    expect(await store.wasMailed(key, 'ada@example.com')).toBe(true);
    expect(await store.wasMailed(key, 'bob@example.com')).toBe(false);
    expect(await store.wasMailed(`${newId()}:other`, 'ada@example.com')).toBe(false);
  });

  it('commits the work of a transaction, and rolls all of it back when the work throws', async () => {
    const userId = await newUser();
    const owner = { userId, organizationId: acme };
    const kept = notification(userId, { title: 'committed' });
    expect(await store.transaction((tx) => tx.insert(kept))).toBe(true);
    const failure = new Error('decided against it');
    await expect(
      store.transaction(async (tx) => {
        await tx.insert(notification(userId, { title: 'rolled back' }));
        await tx.savePreference(userId, acme, { channel: 'inApp', type: '*', enabled: false }, '2031-01-01T00:00:00.000Z');
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await listed(owner)).toEqual(['committed']);
    expect(await store.preferences(userId, acme)).toEqual([]);
  });
});
