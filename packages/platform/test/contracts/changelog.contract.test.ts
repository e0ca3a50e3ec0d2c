import { newId } from '@idt/core';
import { describe, expect, it } from 'vitest';
import type { ChangelogRecord, ChangelogStore } from '../../src/changelog/store.js';
import { createKnexChangelogStore } from '../../src/knex.js';
import { describeStoreContract, itRunsOneUnitOfWork, winners } from './harness.js';

const AT = '2030-01-01T00:00:00.000Z';

describeStoreContract('changelog', (world) => {
  let store: ChangelogStore;
  const changelog = () => {
    store ??= createKnexChangelogStore(world().options);
    return store;
  };
  const entry = (overrides: Partial<ChangelogRecord> = {}): ChangelogRecord => ({
    id: newId(),
    version: `1.${Math.floor(Math.random() * 1e9)}.0`,
    title: 'A release',
    content: 'What changed.',
    releasedAt: AT,
    isPublished: false,
    items: [{ description: 'Faster sign-in', type: 'Improvement' }],
    createdAt: AT,
    updatedAt: AT,
    ...overrides,
  });
  const publish = (id: string, isPublished = true, at = AT) =>
    changelog().transaction((tx) => tx.setPublished(id, isPublished, at));

  itRunsOneUnitOfWork(world, changelog, {
    prepare: async () => {
      const value = entry();
      await changelog().insert(value);
      return value;
    },
    write: (tx, _probe, value) => tx.setPublished(value.id, true, AT),
    written: async (_probe, value) => (await changelog().find(value.id))?.isPublished === true,
  });

  describe('insert and update', () => {
    it('stores an entry as given, and of concurrent inserts of one version exactly one wins', async () => {
      const value = entry();
      const answers = await Promise.all([changelog().insert(value), changelog().insert({ ...entry(), version: value.version })]);
      expect(answers.sort()).toEqual(['created', 'version-exists']);
      expect(await changelog().findByVersion(value.version, false)).toBeDefined();
      expect(await changelog().find(value.id)).toEqual(value);
    });

    it('replaces the fields but not isPublished; not-found for a missing entry, version-exists for a taken version', async () => {
      const value = entry();
      const taken = entry();
      await changelog().insert(value);
      await changelog().insert(taken);
      const later = '2030-02-01T00:00:00.000Z';
      expect(await changelog().update({ ...value, title: 'Renamed', isPublished: true, updatedAt: later })).toBe('updated');
      expect(await changelog().find(value.id)).toEqual({ ...value, title: 'Renamed', updatedAt: later });
      expect(await changelog().update({ ...value, version: taken.version })).toBe('version-exists');
      expect((await changelog().find(value.id))?.version).toBe(value.version);
      expect(await changelog().update(entry())).toBe('not-found');
    });
  });

  describe('findByVersion and list', () => {
    it('answers published entries only when asked, newest release first, at most the limit', async () => {
      const older = entry({ releasedAt: '2040-01-01T00:00:00.000Z' });
      const newer = entry({ releasedAt: '2040-02-01T00:00:00.000Z' });
      const unpublished = entry({ releasedAt: '2040-03-01T00:00:00.000Z' });
      for (const value of [older, newer, unpublished]) await changelog().insert(value);
      await publish(older.id);
      await publish(newer.id);

      expect(await changelog().findByVersion(unpublished.version, true)).toBeUndefined();
      expect((await changelog().findByVersion(unpublished.version, false))?.id).toBe(unpublished.id);
      expect((await changelog().findByVersion(newer.version, true))?.id).toBe(newer.id);
      expect((await changelog().list({ publishedOnly: true, limit: 2 })).map((found) => found.id)).toEqual([newer.id, older.id]);
      expect((await changelog().list({ publishedOnly: false, limit: 3 })).map((found) => found.id)).toEqual([
        unpublished.id,
        newer.id,
        older.id,
      ]);
      expect(await changelog().list({ publishedOnly: false, limit: 1 })).toHaveLength(1);
    });
  });

  describe('setPublished', () => {
    it('changes the entry once: of concurrent publications exactly one changes it, and a repeat answers it unchanged', async () => {
      const value = entry();
      await changelog().insert(value);
      const later = '2030-02-01T00:00:00.000Z';
      expect(
        await winners([publish(value.id, true, later), publish(value.id, true, later)], (answer) => answer?.changed === true),
      ).toBe(1);
      expect(await publish(value.id)).toEqual({ entry: { ...value, isPublished: true, updatedAt: later }, changed: false });
      expect(await publish(value.id, false, AT)).toEqual({
        entry: { ...value, isPublished: false, updatedAt: AT },
        changed: true,
      });
      expect(await publish(value.id, false)).toMatchObject({ changed: false });
    });

    it('answers undefined for a missing entry', async () => {
      expect(await publish(newId())).toBeUndefined();
    });
  });
});
