import { newId } from '@idt/core';
import { seedOrganization } from '@idt/testing';
import { describe, expect, it } from 'vitest';
import { createKnexInquiriesStore } from '../../src/knex.js';
import type { CommentRecord, InquiriesStore, InquiryRecord } from '../../src/store.js';
import { describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('inquiries', (world) => {
  let store: InquiriesStore;
  const inquiries = () => {
    store ??= createKnexInquiriesStore(world().options);
    return store;
  };
  const inquiry = (organizationId: string, overrides: Partial<InquiryRecord> = {}): InquiryRecord => ({
    id: newId(),
    organizationId,
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    phone: '+44 20 7946 0000',
    company: null,
    submitterId: newId(),
    submitterIp: '203.0.113.7',
    projectType: 'Web application',
    budgetRange: '10k-50k',
    timeline: '3 months',
    message: 'We would like a quote.',
    status: 'New',
    createdAt: AT,
    updatedAt: null,
    ...overrides,
  });
  const inserted = async (organizationId: string, overrides: Partial<InquiryRecord> = {}) => {
    const value = inquiry(organizationId, overrides);
    await inquiries().transaction((tx) => tx.insert(value));
    return value;
  };
  const comment = (of: InquiryRecord, overrides: Partial<CommentRecord> = {}): CommentRecord => ({
    id: newId(),
    organizationId: of.organizationId,
    inquiryId: of.id,
    authorId: 'user-1',
    authorName: 'Grace Hopper',
    content: 'Called them back.',
    isInternal: false,
    createdAt: AT,
    ...overrides,
  });

  itRunsOneUnitOfWork(world, inquiries, {
    prepare: () => seedOrganization(world().db),
    write: (tx, probe, organization) => tx.insert(inquiry(organization.id, { message: probe })),
    written: async (probe, organization) =>
      (await inquiries().list(organization.id, {})).some((found) => found.message === probe),
  });

  describe('insert, find and list', () => {
    it('stores an inquiry as given; another organization cannot find or list it', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const value = await inserted(organization.id, { company: 'Analytical Engines Ltd', submitterId: null, submitterIp: null });
      expect(await inquiries().find(organization.id, value.id)).toEqual(value);
      expect(await inquiries().find(other.id, value.id)).toBeUndefined();
      expect(await inquiries().list(other.id, {})).toEqual([]);
    });

    it('refuses a second inquiry with the same id', async () => {
      const organization = await seedOrganization(world().db);
      const value = await inserted(organization.id);
      await expect(inquiries().transaction((tx) => tx.insert(value))).rejects.toThrow();
      expect(await inquiries().list(organization.id, {})).toEqual([value]);
    });

    it('lists newest first, by status or submitter', async () => {
      const organization = await seedOrganization(world().db);
      const submitter = newId();
      const oldest = await inserted(organization.id, { createdAt: '2030-01-01T00:00:00.000Z', submitterId: submitter });
      const middle = await inserted(organization.id, { createdAt: '2030-01-02T00:00:00.000Z', status: 'Reviewed' });
      const newest = await inserted(organization.id, { createdAt: '2030-01-03T00:00:00.000Z', submitterId: submitter });
      const ids = async (filter: Parameters<InquiriesStore['list']>[1]) =>
        (await inquiries().list(organization.id, filter)).map((found) => found.id);
      expect(await ids({})).toEqual([newest.id, middle.id, oldest.id]);
      expect(await ids({ status: 'New' })).toEqual([newest.id, oldest.id]);
      expect(await ids({ status: 'Reviewed' })).toEqual([middle.id]);
      expect(await ids({ submitterId: submitter })).toEqual([newest.id, oldest.id]);
      expect(await ids({ submitterId: submitter, status: 'Reviewed' })).toEqual([]);
    });
  });

  describe('transition', () => {
    it('moves the status while it is still `from`: of concurrent moves exactly one wins', async () => {
      const organization = await seedOrganization(world().db);
      const value = await inserted(organization.id);
      const at = '2030-02-01T00:00:00.000Z';
      const moves = [
        inquiries().transition(organization.id, value.id, 'New', 'Reviewed', at),
        inquiries().transition(organization.id, value.id, 'New', 'Reviewed', at),
      ];
      expect(await winners(moves, (moved) => moved !== undefined)).toBe(1);
      expect(await inquiries().find(organization.id, value.id)).toEqual({ ...value, status: 'Reviewed', updatedAt: at });
      expect(await inquiries().transition(organization.id, value.id, 'New', 'Reviewed', at)).toBeUndefined();
      expect(await inquiries().transition(organization.id, newId(), 'New', 'Reviewed', at)).toBeUndefined();
    });

    it("cannot move another organization's inquiry", async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const value = await inserted(organization.id);
      expect(await inquiries().transition(other.id, value.id, 'New', 'Reviewed', AT)).toBeUndefined();
      expect((await inquiries().find(organization.id, value.id))?.status).toBe('New');
    });
  });

  describe('comments', () => {
    it('stores a comment of an inquiry of its organization; inquiry-missing otherwise, with nothing written', async () => {
      const { db } = world();
      const organization = await seedOrganization(db);
      const other = await seedOrganization(db);
      const value = await inserted(organization.id);
      const written = comment(value, { isInternal: true });
      expect(await inquiries().insertComment(written)).toBe('created');
      expect(await inquiries().findComment(organization.id, value.id, written.id)).toEqual(written);

      const stranger = comment(value, { organizationId: other.id });
      expect(await inquiries().insertComment(stranger)).toBe('inquiry-missing');
      expect(await inquiries().insertComment(comment({ ...value, id: newId() }))).toBe('inquiry-missing');
      expect(await inquiries().findComment(other.id, value.id, stranger.id)).toBeUndefined();
      expect(await inquiries().findComment(other.id, value.id, written.id)).toBeUndefined();
      expect(await inquiries().listComments(other.id, value.id, { includeInternal: true })).toEqual([]);
    });

    it('lists oldest first, internal comments only when asked for; findComment needs the right inquiry', async () => {
      const organization = await seedOrganization(world().db);
      const value = await inserted(organization.id);
      const sibling = await inserted(organization.id);
      const first = comment(value, { createdAt: '2030-01-01T00:00:00.000Z' });
      const internal = comment(value, { createdAt: '2030-01-02T00:00:00.000Z', isInternal: true });
      const last = comment(value, { createdAt: '2030-01-03T00:00:00.000Z' });
      for (const written of [last, first, internal]) expect(await inquiries().insertComment(written)).toBe('created');
      await inquiries().insertComment(comment(sibling));

      const ids = async (includeInternal: boolean) =>
        (await inquiries().listComments(organization.id, value.id, { includeInternal })).map((found) => found.id);
      expect(await ids(true)).toEqual([first.id, internal.id, last.id]);
      expect(await ids(false)).toEqual([first.id, last.id]);
      expect(await inquiries().findComment(organization.id, sibling.id, first.id)).toBeUndefined();
    });
  });
});
