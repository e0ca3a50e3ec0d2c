import { type Clock, isUuid, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { type PlatformActor, type PlatformDirectory, PlatformPermissions, requirePlatformAdministrator } from '../access.js';
import { ChangelogPublishedEvent } from '../events.js';
import { type ChangelogEntryResponse, ChangelogInput } from './schemas.js';
import type { ChangelogRecord, ChangelogStore } from './store.js';

/** Options of {@link createChangelogService}. */
export interface ChangelogServiceOptions {
  readonly store: ChangelogStore;
  readonly directory: PlatformDirectory;
  readonly clock?: Clock;
}

/** The global changelog: anonymous readers see published entries; platform administrators write. */
export interface ChangelogService {
  /** Published entries, newest first. */
  listPublished(limit: number): Promise<ChangelogEntryResponse[]>;
  /** The newest published entry; 404 `Changelog.NotFound` when there is none. */
  latest(): Promise<ChangelogEntryResponse>;
  /** A published entry by version; 404 `Changelog.NotFound` otherwise. */
  byVersion(version: string): Promise<ChangelogEntryResponse>;
  /** Every entry, drafts included (platform administrators). */
  listAll(actor: PlatformActor): Promise<ChangelogEntryResponse[]>;
  /** One entry by id, draft or not (platform administrators). */
  get(actor: PlatformActor, id: string): Promise<ChangelogEntryResponse>;
  /** Creates an unpublished entry; 409 `Changelog.VersionExists` for a taken version. */
  create(actor: PlatformActor, input: unknown): Promise<ChangelogEntryResponse>;
  /** Replaces an entry's fields; its publication state stays. */
  update(actor: PlatformActor, id: string, input: unknown): Promise<ChangelogEntryResponse>;
  /** Publishes (idempotent; the event is written on the first publication only). */
  publish(actor: PlatformActor, id: string): Promise<ChangelogEntryResponse>;
  /** Unpublishes (idempotent). */
  unpublish(actor: PlatformActor, id: string): Promise<ChangelogEntryResponse>;
}

/** A changelog record as the API answers it. */
export function toChangelogResponse(record: ChangelogRecord): ChangelogEntryResponse {
  return {
    id: record.id,
    version: record.version,
    title: record.title,
    content: record.content,
    releasedAt: record.releasedAt,
    isPublished: record.isPublished,
    items: record.items.map((item) => ({ description: item.description, type: item.type })),
  };
}

function notFound(): ProblemError {
  return new ProblemError('Changelog.NotFound');
}

function versionExists(version: string): ProblemError {
  return new ProblemError('Changelog.VersionExists', `A changelog entry for version ${version} already exists.`);
}

/**
 * Creates the changelog service. Writes need `ChangelogManage` in the
 * platform organization: the changelog is global, so an organization's own
 * administrators may not write it.
 *
 * @example
 * const changelog = createChangelogService({ store, directory });
 * const latest = await changelog.latest();
 */
export function createChangelogService(options: ChangelogServiceOptions): ChangelogService {
  const { store, directory } = options;
  const clock = options.clock ?? systemClock;
  const admin = (actor: PlatformActor) => requirePlatformAdministrator(directory, actor, PlatformPermissions.changelogManage);

  async function existing(id: string): Promise<ChangelogRecord> {
    const key = id.trim().toLowerCase();
    const record = isUuid(key) ? await store.find(key) : undefined;
    if (!record) throw notFound();
    return record;
  }

  async function setPublished(actor: PlatformActor, id: string, isPublished: boolean) {
    await admin(actor);
    const current = await existing(id);
    const at = clock.now().toISOString();
    const updated = await store.transaction(async (tx) => {
      const outcome = await tx.setPublished(current.id, isPublished, at);
      if (outcome?.changed && isPublished) {
        const { entry } = outcome;
        await tx.publish([
          {
            event: ChangelogPublishedEvent,
            payload: {
              entryId: entry.id,
              version: entry.version,
              title: entry.title,
              releasedAt: entry.releasedAt,
              publishedBy: actor.subject,
              publishedAt: at,
            },
          },
        ]);
      }
      return outcome?.entry;
    });
    if (!updated) throw notFound();
    return toChangelogResponse(updated);
  }

  return {
    async listPublished(limit) {
      return (await store.list({ publishedOnly: true, limit })).map(toChangelogResponse);
    },

    async latest() {
      const [newest] = await store.list({ publishedOnly: true, limit: 1 });
      if (!newest) throw notFound();
      return toChangelogResponse(newest);
    },

    async byVersion(version) {
      const record = await store.findByVersion(version.trim(), true);
      if (!record) throw notFound();
      return toChangelogResponse(record);
    },

    async listAll(actor) {
      await admin(actor);
      return (await store.list({ publishedOnly: false, limit: 1000 })).map(toChangelogResponse);
    },

    async get(actor, id) {
      await admin(actor);
      return toChangelogResponse(await existing(id));
    },

    async create(actor, input) {
      await admin(actor);
      const data = ChangelogInput.parse(input);
      const now = clock.now().toISOString();
      const record: ChangelogRecord = {
        id: newId(),
        version: data.version,
        title: data.title,
        content: data.content,
        releasedAt: data.releasedAt ?? now,
        isPublished: false,
        items: data.items,
        createdAt: now,
        updatedAt: now,
      };
      if ((await store.insert(record)) === 'version-exists') throw versionExists(data.version);
      return toChangelogResponse(record);
    },

    async update(actor, id, input) {
      await admin(actor);
      const data = ChangelogInput.parse(input);
      const current = await existing(id);
      const record: ChangelogRecord = {
        ...current,
        version: data.version,
        title: data.title,
        content: data.content,
        releasedAt: data.releasedAt ?? current.releasedAt,
        items: data.items,
        updatedAt: clock.now().toISOString(),
      };
      const outcome = await store.update(record);
      if (outcome === 'not-found') throw notFound();
      if (outcome === 'version-exists') throw versionExists(data.version);
      return toChangelogResponse((await store.find(current.id)) ?? record);
    },

    publish: (actor, id) => setPublished(actor, id, true),
    unpublish: (actor, id) => setPublished(actor, id, false),
  };
}
