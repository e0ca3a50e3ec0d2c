import { newId } from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, seedOrganization, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FilesStore, StoredFileRecord } from '../../src/files/store.js';
import { BUCKETS_TABLE, createKnexFilesStore, storageMigrations } from '../../src/knex.js';

/**
 * The contract of every {@link FilesStore}, run against the knex store on
 * SQLite and PostgreSQL: each call is scoped to one organization (another
 * one can neither find, list nor remove a file), a bucket comes with its
 * first file (once, even when first files arrive together), listings are
 * newest first with a stable order for pages, a folder filter matches its
 * characters literally, and of concurrent removes exactly one gets the row.
 */
describe.each(testDialects())('the files store contract on %s', (dialect) => {
  let database: TestDatabase | undefined;
  let store: FilesStore | undefined;
  let acme = '';
  let globex = '';
  beforeAll(async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, storageMigrations]);
    store = createKnexFilesStore(database.db);
    acme = (await seedOrganization(database.db, { name: 'Acme' })).id;
    globex = (await seedOrganization(database.db, { name: 'Globex' })).id;
  });
  afterAll(async () => {
    await database?.destroy();
  });
  const db = () => {
    if (!database) throw new Error('The database is created in beforeAll');
    return database.db;
  };
  const files = () => {
    if (!store) throw new Error('The store is created in beforeAll');
    return store;
  };

  let sequence = 0;
  /** A bucket name no other test uses. */
  const newBucket = () => `bucket-${++sequence}`;
  let clock = Date.parse('2030-01-01T00:00:00.000Z');
  /** A file of `organizationId`, uploaded a second after the previous one unless told. */
  const file = (organizationId: string, overrides: Partial<StoredFileRecord> = {}): StoredFileRecord => {
    clock += 1000;
    const id = overrides.id ?? newId();
    return {
      id,
      organizationId,
      bucket: 'default',
      fileName: 'report.pdf',
      contentType: 'application/pdf',
      sizeBytes: 1234,
      path: null,
      isPublic: false,
      uploadedBy: newId(),
      uploadedAt: new Date(clock).toISOString(),
      blobKey: `${organizationId}/${id}`,
      ...overrides,
    };
  };
  const stored = async (organizationId: string, overrides: Partial<StoredFileRecord> = {}) => {
    const created = file(organizationId, overrides);
    await files().insert(created);
    return created;
  };
  const everything = { path: null, page: 1, pageSize: 100 };
  /** The ids a listing answers, in its order. */
  const listed = async (
    organizationId: string,
    query: { bucket: string; path?: string | null; page?: number; pageSize?: number },
  ) => (await files().list(organizationId, { ...everything, ...query })).items.map((item) => item.id);
  const bucketRows = (organizationId: string, name: string) =>
    db()(BUCKETS_TABLE).where({ organization_id: organizationId, name }).select('id');

  describe('insert and find', () => {
    it('stores a file as given and finds it in its own organization only', async () => {
      const created = await stored(acme, {
        bucket: newBucket(),
        fileName: 'Quarterly report (final).pdf',
        sizeBytes: 5_000_000_000,
        path: 'reports/2030',
        isPublic: true,
        uploadedAt: '2030-02-03T04:05:06.789Z',
      });
      expect(await files().find(acme, created.id)).toEqual(created);
      expect(await files().find(globex, created.id)).toBeUndefined();
      expect(await files().find(acme, newId())).toBeUndefined();
    });

    it('keeps an empty file, a file without a folder and a private file', async () => {
      const created = await stored(acme, { bucket: newBucket(), sizeBytes: 0, path: null, isPublic: false });
      expect(await files().find(acme, created.id)).toEqual(created);
    });

    it('refuses a taken id, keeping the stored file and creating no bucket', async () => {
      const created = await stored(acme, { bucket: newBucket() });
      const bucket = newBucket();
      await expect(files().insert(file(acme, { id: created.id, bucket, fileName: 'other.txt' }))).rejects.toThrow();
      expect(await files().find(acme, created.id)).toEqual(created);
      expect(await bucketRows(acme, bucket)).toEqual([]);
    });

    it("creates a bucket with its first file, once, even when first files arrive together; another organization's bucket of that name is its own", async () => {
      const bucket = newBucket();
      const together = Array.from({ length: 8 }, () => file(acme, { bucket }));
      await Promise.all(together.map((created) => files().insert(created)));
      await stored(acme, { bucket });
      expect(await bucketRows(acme, bucket)).toHaveLength(1);
      expect((await files().list(acme, { ...everything, bucket })).totalCount).toBe(9);

      const theirs = await stored(globex, { bucket });
      expect(await bucketRows(globex, bucket)).toHaveLength(1);
      expect(await listed(globex, { bucket })).toEqual([theirs.id]);
      expect((await files().list(acme, { ...everything, bucket })).totalCount).toBe(9);
    });
  });

  describe('list', () => {
    it("lists one organization's files of one bucket, newest first, page by page with the total", async () => {
      const bucket = newBucket();
      const ours = [];
      for (let index = 0; index < 5; index++) ours.push(await stored(acme, { bucket }));
      await stored(globex, { bucket });
      await stored(acme, { bucket: newBucket() });
      const newestFirst = ours.map((created) => created.id).reverse();

      const first = await files().list(acme, { bucket, path: null, page: 1, pageSize: 2 });
      expect(first.totalCount).toBe(5);
      expect(first.items).toEqual([ours[4], ours[3]]);
      expect(await listed(acme, { bucket, page: 2, pageSize: 2 })).toEqual(newestFirst.slice(2, 4));
      expect(await listed(acme, { bucket, page: 3, pageSize: 2 })).toEqual(newestFirst.slice(4));
      expect(await files().list(acme, { bucket, path: null, page: 4, pageSize: 2 })).toEqual({ items: [], totalCount: 5 });
      expect(await listed(acme, { bucket })).toEqual(newestFirst);
      expect(await files().list(acme, { ...everything, bucket: newBucket() })).toEqual({ items: [], totalCount: 0 });
    });

    it('orders files uploaded at the same instant by id, descending, so pages neither repeat nor skip one', async () => {
      const bucket = newBucket();
      const instant = '2031-01-01T00:00:00.000Z';
      const ids: string[] = [];
      for (let index = 0; index < 4; index++) ids.push((await stored(acme, { bucket, uploadedAt: instant })).id);
      const expected = [...ids].sort().reverse();
      const pages = [];
      for (let page = 1; page <= 4; page++) pages.push(...(await listed(acme, { bucket, page, pageSize: 1 })));
      expect(pages).toEqual(expected);
    });

    it('with a folder, lists the files in it and in the folders below it, and no sibling whose name merely starts alike', async () => {
      const bucket = newBucket();
      const at = async (path: string | null) => (await stored(acme, { bucket, path })).id;
      const docs = await at('docs');
      const year = await at('docs/2030');
      const quarter = await at('docs/2030/q1');
      await at('docsx');
      await at('docs2/a');
      const capital = await at('Docs');
      const nested = await at('other/docs');
      const root = await at(null);

      expect(await listed(acme, { bucket, path: 'docs' })).toEqual([quarter, year, docs]);
      expect((await files().list(acme, { bucket, path: 'docs', page: 1, pageSize: 1 })).totalCount).toBe(3);
      expect(await listed(acme, { bucket, path: 'docs/2030' })).toEqual([quarter, year]);
      // Case matters on every engine.
      expect(await listed(acme, { bucket, path: 'Docs' })).toEqual([capital]);
      expect(await listed(acme, { bucket, path: 'other' })).toEqual([nested]);
      expect(await listed(acme, { bucket, path: 'nowhere' })).toEqual([]);
      // No folder: the whole bucket, files without a folder included.
      expect(await listed(acme, { bucket })).toHaveLength(8);
      expect(await listed(acme, { bucket })).toContain(root);
      expect(await listed(globex, { bucket, path: 'docs' })).toEqual([]);
    });

    it('matches folder names literally (no wildcards) and by characters, not bytes', async () => {
      const bucket = newBucket();
      const at = async (path: string) => (await stored(acme, { bucket, path })).id;
      const underscore = await at('a_b');
      await at('axb/c');
      const percent = await at('a%b/c');
      await at('aXb');
      const umlaut = await at('ü');
      const below = await at('ü/x');
      await at('üx');
      const emoji = await at('😀/y');
      await at('😀y');

      expect(await listed(acme, { bucket, path: 'a_b' })).toEqual([underscore]);
      expect(await listed(acme, { bucket, path: 'a%b' })).toEqual([percent]);
      expect(await listed(acme, { bucket, path: 'ü' })).toEqual([below, umlaut]);
      expect(await listed(acme, { bucket, path: '😀' })).toEqual([emoji]);
    });
  });

  describe('remove', () => {
    it('deletes a file and answers it, once; another organization removes nothing', async () => {
      const bucket = newBucket();
      const created = await stored(acme, { bucket });
      const other = await stored(acme, { bucket });
      expect(await files().remove(globex, created.id)).toBeUndefined();
      expect(await files().find(acme, created.id)).toEqual(created);

      expect(await files().remove(acme, created.id)).toEqual(created);
      expect(await files().find(acme, created.id)).toBeUndefined();
      expect(await files().remove(acme, created.id)).toBeUndefined();
      expect(await files().remove(acme, newId())).toBeUndefined();
      expect(await files().list(acme, { ...everything, bucket })).toEqual({ items: [other], totalCount: 1 });
    });

    it('gives the row to exactly one of concurrent removes', async () => {
      const created = await stored(acme, { bucket: newBucket() });
      const results = await Promise.allSettled(Array.from({ length: 6 }, () => files().remove(acme, created.id)));
      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      const answered = results.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
      expect(answered).toEqual([created]);
      expect(await files().find(acme, created.id)).toBeUndefined();
    });
  });
});
