import { newId } from '@idt/core';
import { seedOrganization } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import type { AnnouncementStatus } from '../../src/announcements/status.js';
import type { AnnouncementRecord, AnnouncementsStore } from '../../src/announcements/store.js';
import { createKnexAnnouncementsStore } from '../../src/knex.js';
import { describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';
const NOW = '2030-06-01T00:00:00.000Z';
const BEFORE = '2030-05-01T00:00:00.000Z';
const AFTER = '2030-07-01T00:00:00.000Z';

describeStoreContract('announcements', (world) => {
  let store: AnnouncementsStore;
  const announcements = () => {
    store ??= createKnexAnnouncementsStore(world().options);
    return store;
  };
  const announcement = (organizationId: string, overrides: Partial<AnnouncementRecord> = {}): AnnouncementRecord => ({
    id: newId(),
    organizationId,
    title: 'Maintenance tonight',
    content: 'We will be down for ten minutes.',
    type: 'Maintenance',
    target: 'organization',
    targetValue: null,
    status: 'Draft',
    publishAt: null,
    expiresAt: null,
    isPinned: false,
    isDismissible: true,
    actionUrl: null,
    actionLabel: null,
    createdBy: 'admin',
    createdAt: AT,
    updatedAt: AT,
    ...overrides,
  });
  const inserted = async (organizationId: string, overrides: Partial<AnnouncementRecord> = {}) => {
    const record = announcement(organizationId, overrides);
    await announcements().insert(record);
    return record;
  };
  const transition = (id: string, from: AnnouncementStatus, to: AnnouncementStatus, publishAt?: string) =>
    announcements().transaction((tx) => tx.transition(id, from, to, NOW, publishAt));

  itRunsOneUnitOfWork(world, announcements, {
    prepare: async () => inserted((await seedOrganization(world().db)).id),
    write: (tx, _probe, record) => tx.transition(record.id, 'Draft', 'Published', NOW),
    written: async (_probe, record) => (await announcements().find(record.organizationId, record.id))?.status === 'Published',
  });

  describe('insert, find and list', () => {
    it("finds and lists the organization's announcements only, newest first, optionally of one status", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const older = await inserted(organization.id, { createdAt: '2030-01-01T00:00:00.000Z' });
      const newer = await inserted(organization.id, {
        createdAt: '2030-01-02T00:00:00.000Z',
        status: 'Scheduled',
        publishAt: AFTER,
        actionUrl: 'https://example.com',
        actionLabel: 'Read more',
      });
      const elsewhere = await inserted(other.id);

      expect(await announcements().find(organization.id, newer.id)).toEqual(newer);
      expect(await announcements().find(organization.id, elsewhere.id)).toBeUndefined();
      expect((await announcements().list(organization.id)).map((found) => found.id)).toEqual([newer.id, older.id]);
      expect((await announcements().list(organization.id, 'Draft')).map((found) => found.id)).toEqual([older.id]);
      expect((await announcements().list(other.id)).map((found) => found.id)).toEqual([elsewhere.id]);
    });
  });

  describe('update', () => {
    it('replaces the fields while the status is still the expected one, in the organization only', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const record = await inserted(organization.id);
      const { id, organizationId, createdBy, createdAt, ...fields } = record;
      const change = { ...fields, title: 'Maintenance moved', isPinned: true, updatedAt: NOW };

      expect(await announcements().update(other.id, record.id, 'Draft', change)).toBeUndefined();
      expect(await announcements().update(organization.id, record.id, 'Scheduled', change)).toBeUndefined();
      expect(await announcements().find(organization.id, record.id)).toEqual(record);
      expect(await announcements().update(organization.id, record.id, 'Draft', change)).toEqual({ ...record, ...change });
      expect(await announcements().find(organization.id, record.id)).toEqual({ ...record, ...change });
    });
  });

  describe('transition', () => {
    it('moves the status while it is still `from`: of concurrent moves exactly one wins', async () => {
      const organization = await seedOrganization(world().db);
      const record = await inserted(organization.id);
      const moves = [transition(record.id, 'Draft', 'Published', NOW), transition(record.id, 'Draft', 'Published', NOW)];
      expect(await winners(moves, (moved) => moved !== undefined)).toBe(1);
      expect(await announcements().find(organization.id, record.id)).toEqual({
        ...record,
        status: 'Published',
        publishAt: NOW,
        updatedAt: NOW,
      });
      expect(await transition(record.id, 'Draft', 'Archived')).toBeUndefined();
      expect(await transition(newId(), 'Draft', 'Published')).toBeUndefined();
    });

    it('keeps publishAt when none is given', async () => {
      const organization = await seedOrganization(world().db);
      const record = await inserted(organization.id, { status: 'Scheduled', publishAt: AFTER });
      expect(await transition(record.id, 'Scheduled', 'Archived')).toMatchObject({ status: 'Archived', publishAt: AFTER });
    });
  });

  describe('active and dismiss', () => {
    it("answers the published announcements in their window, the organization's and every `all` one, without the user's dismissals", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const published = { status: 'Published' as const };
      const own = await inserted(organization.id, { ...published, publishAt: BEFORE, expiresAt: AFTER });
      const forAll = await inserted(other.id, { ...published, target: 'all' });
      const role = await inserted(organization.id, { ...published, target: 'role', targetValue: 'admin' });
      await inserted(other.id, published);
      await inserted(organization.id);
      await inserted(organization.id, { ...published, publishAt: AFTER });
      await inserted(organization.id, { ...published, expiresAt: NOW });

      const ids = async (userId: string | null) =>
        (await announcements().active(organization.id, userId, NOW)).map((found) => found.id).filter((id) => id !== forAll.id);
      expect((await ids('user-1')).sort()).toEqual([own.id, role.id].sort());
      expect((await announcements().active(organization.id, 'user-1', NOW)).map((found) => found.id)).toContain(forAll.id);
      expect((await announcements().active(other.id, 'user-1', NOW)).map((found) => found.id)).not.toContain(own.id);

      await announcements().dismiss(own.id, 'user-1', NOW);
      await announcements().dismiss(own.id, 'user-1', AFTER);
      expect(await ids('user-1')).toEqual([role.id]);
      expect((await ids('user-2')).sort()).toEqual([own.id, role.id].sort());
      expect((await ids(null)).sort()).toEqual([own.id, role.id].sort());
    });
  });

  describe('due', () => {
    it('answers due scheduled announcements and lapsed published ones, by id, at most the limit', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      // Far in the future, so no other case's rows are due at `now`.
      const now = '2090-01-01T00:00:00.000Z';
      const scheduled = await inserted(organization.id, { status: 'Scheduled', publishAt: '2089-01-01T00:00:00.000Z' });
      const lapsed = await inserted(organization.id, { status: 'Published', expiresAt: '2089-01-01T00:00:00.000Z' });
      await inserted(organization.id, { status: 'Scheduled', publishAt: '2091-01-01T00:00:00.000Z' });
      await inserted(organization.id, { status: 'Published', expiresAt: '2091-01-01T00:00:00.000Z' });
      await inserted(organization.id, { status: 'Draft', publishAt: '2089-01-01T00:00:00.000Z' });

      const mine = new Set([scheduled.id, lapsed.id]);
      const due = (await announcements().due(now, 1000)).map((found) => found.id);
      expect(due.filter((id) => mine.has(id))).toEqual([scheduled.id, lapsed.id].sort());
      expect(due).toEqual([...due].sort());
      expect(await announcements().due(now, 1)).toHaveLength(1);
      expect((await announcements().due('2088-01-01T00:00:00.000Z', 1000)).map((found) => found.id)).not.toContain(scheduled.id);
    });
  });
});
