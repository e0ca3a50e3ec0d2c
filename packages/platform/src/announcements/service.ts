import { type Clock, compareCodeUnits, isUuid, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import {
  isPlatformAdministrator,
  type PlatformActor,
  type PlatformDirectory,
  PlatformPermissions,
  requirePermission,
  tenantOf,
} from '../access.js';
import { AnnouncementPublishedEvent } from '../events.js';
import { AnnouncementInput, type AnnouncementResponse } from './schemas.js';
import { type AnnouncementStatus, canTransition, nextStatuses, plannedStatus } from './status.js';
import type { AnnouncementChange, AnnouncementRecord, AnnouncementsStore } from './store.js';

/** Options of {@link createAnnouncementsService}. */
export interface AnnouncementsServiceOptions {
  readonly store: AnnouncementsStore;
  readonly directory: PlatformDirectory;
  readonly clock?: Clock;
  /** Whether an organization shows announcements (the `announcements.enabled` setting); always by default. */
  readonly isEnabled?: (organizationId: string) => Promise<boolean>;
}

/** What one run of the scheduling job did. */
export interface AnnouncementSchedulingResult {
  readonly published: number;
  readonly expired: number;
}

/** Announcements: managed per organization, read by the members they target. */
export interface AnnouncementsService {
  /** The active announcements that target the caller and it has not dismissed; pinned first, then newest (`AnnouncementRead`). */
  listActive(actor: PlatformActor): Promise<AnnouncementResponse[]>;
  /** Dismisses an active announcement for the calling user (idempotent). */
  dismiss(actor: PlatformActor, id: string): Promise<void>;
  /** Every announcement of the organization, optionally of one status (`AnnouncementManage`). */
  list(actor: PlatformActor, status?: AnnouncementStatus): Promise<AnnouncementResponse[]>;
  get(actor: PlatformActor, id: string): Promise<AnnouncementResponse>;
  /** Creates a Draft, or a Scheduled announcement when `publishAt` is in the future. */
  create(actor: PlatformActor, input: unknown): Promise<AnnouncementResponse>;
  /** Replaces the fields of a Draft, Scheduled or Published announcement. */
  update(actor: PlatformActor, id: string, input: unknown): Promise<AnnouncementResponse>;
  /** Publishes now (idempotent on a published one); writes `AnnouncementPublishedEvent`. */
  publish(actor: PlatformActor, id: string): Promise<AnnouncementResponse>;
  /** Archives (idempotent on an archived one). */
  archive(actor: PlatformActor, id: string): Promise<void>;
  /** Publishes the Scheduled announcements that are due and expires the Published ones past `expiresAt`. */
  runSchedule(): Promise<AnnouncementSchedulingResult>;
}

/** An announcement record as the API answers it. */
export function toAnnouncementResponse(record: AnnouncementRecord): AnnouncementResponse {
  return {
    id: record.id,
    title: record.title,
    content: record.content,
    type: record.type,
    target: record.target,
    targetValue: record.targetValue,
    status: record.status,
    publishAt: record.publishAt,
    expiresAt: record.expiresAt,
    isPinned: record.isPinned,
    isDismissible: record.isDismissible,
    actionUrl: record.actionUrl,
    actionLabel: record.actionLabel,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

function notFound(): ProblemError {
  return new ProblemError('Announcements.NotFound');
}

function invalidTransition(from: AnnouncementStatus, to: AnnouncementStatus | 'edited'): ProblemError {
  const next = nextStatuses(from);
  const hint = next.length > 0 ? `it can move to ${next.join(', ')}` : 'it can no longer change';
  const what = to === 'edited' ? 'be edited' : `become ${to}`;
  return new ProblemError('Announcements.InvalidStatusTransition', `The announcement is ${from} and cannot ${what}; ${hint}.`);
}

/** Pinned first, then the newest publication (or creation) first. */
function readerOrder(a: AnnouncementRecord, b: AnnouncementRecord): number {
  if (a.isPinned !== b.isPinned) return a.isPinned ? -1 : 1;
  const at = (record: AnnouncementRecord) => record.publishAt ?? record.createdAt;
  return compareCodeUnits(at(b), at(a)) || compareCodeUnits(b.id, a.id);
}

const EDITABLE: readonly AnnouncementStatus[] = ['Draft', 'Scheduled', 'Published'];

/**
 * Creates the announcements service. An announcement belongs to the
 * organization of the manager who created it; target `all` reaches every
 * organization and is for platform administrators only (`AnnouncementManage`
 * in the platform organization). Another organization's announcement answers
 * 404, exactly as a missing one.
 *
 * @example
 * const announcements = createAnnouncementsService({ store, directory });
 * await announcements.publish(principal, id);
 */
export function createAnnouncementsService(options: AnnouncementsServiceOptions): AnnouncementsService {
  const { store, directory } = options;
  const clock = options.clock ?? systemClock;

  function manager(actor: PlatformActor): string {
    const organizationId = tenantOf(actor);
    requirePermission(actor, PlatformPermissions.announcementManage);
    return organizationId;
  }

  async function owned(actor: PlatformActor, id: string): Promise<AnnouncementRecord> {
    const organizationId = manager(actor);
    const key = id.trim().toLowerCase();
    const record = isUuid(key) ? await store.find(organizationId, key) : undefined;
    if (!record) throw notFound();
    return record;
  }

  async function checkTarget(actor: PlatformActor, input: AnnouncementInput): Promise<void> {
    if (input.target !== 'all') return;
    if (!(await isPlatformAdministrator(directory, actor, PlatformPermissions.announcementManage))) {
      throw new ProblemError('Auth.Forbidden', 'Only platform administrators may address every organization (target all).');
    }
  }

  function fields(input: AnnouncementInput): Omit<AnnouncementChange, 'status' | 'updatedAt'> {
    return {
      title: input.title,
      content: input.content,
      type: input.type,
      target: input.target,
      targetValue: input.target === 'role' ? (input.targetValue?.toLowerCase() ?? null) : null,
      publishAt: input.publishAt,
      expiresAt: input.expiresAt,
      isPinned: input.isPinned,
      isDismissible: input.isDismissible,
      actionUrl: input.actionUrl,
      actionLabel: input.actionLabel,
    };
  }

  /** The active announcements that target the caller (without the ones it dismissed, unless asked). */
  async function visible(actor: PlatformActor, includeDismissed = false): Promise<AnnouncementRecord[]> {
    const organizationId = tenantOf(actor);
    requirePermission(actor, PlatformPermissions.announcementRead);
    const now = clock.now();
    const candidates = await store.active(organizationId, includeDismissed ? null : actor.userId, now.toISOString());
    const needsRoles = candidates.some((record) => record.target === 'role');
    const roles =
      needsRoles && actor.userId !== null ? new Set(await directory.rolesOf(organizationId, actor.userId)) : new Set<string>();
    return candidates.filter(
      (record) => record.target !== 'role' || (record.targetValue !== null && roles.has(record.targetValue)),
    );
  }

  /**
   * Moves an announcement while its status is still `from`; a move to
   * Published writes `AnnouncementPublishedEvent` in the same transaction,
   * so of concurrent publications only the one that moved it announces it.
   */
  function transition(
    id: string,
    from: AnnouncementStatus,
    to: AnnouncementStatus,
    at: string,
    publishAt?: string,
  ): Promise<AnnouncementRecord | undefined> {
    return store.transaction(async (tx) => {
      const moved = await tx.transition(id, from, to, at, publishAt);
      if (moved && to === 'Published') {
        await tx.publish([
          {
            event: AnnouncementPublishedEvent,
            payload: {
              announcementId: moved.id,
              organizationId: moved.organizationId,
              title: moved.title,
              type: moved.type,
              target: moved.target,
              targetValue: moved.targetValue,
              publishedAt: moved.publishAt ?? at,
            },
          },
        ]);
      }
      return moved;
    });
  }

  async function move(record: AnnouncementRecord, to: AnnouncementStatus, publishAt?: string): Promise<AnnouncementRecord> {
    if (!canTransition(record.status, to)) throw invalidTransition(record.status, to);
    const moved = await transition(record.id, record.status, to, clock.now().toISOString(), publishAt);
    if (moved) return moved;
    // Another request (or the job) moved it between the read and the update.
    const now = await store.find(record.organizationId, record.id);
    if (!now) throw notFound();
    if (now.status === to) return now;
    throw invalidTransition(now.status, to);
  }

  return {
    async listActive(actor) {
      const active = await visible(actor);
      if (active.length > 0 && options.isEnabled && !(await options.isEnabled(tenantOf(actor)))) return [];
      return active.sort(readerOrder).map(toAnnouncementResponse);
    },

    async dismiss(actor, id) {
      if (actor.userId === null) throw new ProblemError('Auth.Forbidden', 'Only users dismiss announcements.');
      const key = id.trim().toLowerCase();
      // Dismissed ones count: dismissing twice is a no-op.
      const record = isUuid(key) ? (await visible(actor, true)).find((candidate) => candidate.id === key) : undefined;
      if (!record) throw notFound();
      if (!record.isDismissible) throw new ProblemError('Announcements.NotDismissible');
      await store.dismiss(record.id, actor.userId, clock.now().toISOString());
    },

    async list(actor, status) {
      const organizationId = manager(actor);
      return (await store.list(organizationId, status)).map(toAnnouncementResponse);
    },

    async get(actor, id) {
      return toAnnouncementResponse(await owned(actor, id));
    },

    async create(actor, input) {
      const organizationId = manager(actor);
      const data = AnnouncementInput.parse(input);
      await checkTarget(actor, data);
      const now = clock.now();
      const record: AnnouncementRecord = {
        id: newId(),
        organizationId,
        ...fields(data),
        status: plannedStatus(data.publishAt, now),
        createdBy: actor.subject,
        createdAt: now.toISOString(),
        updatedAt: now.toISOString(),
      };
      await store.insert(record);
      return toAnnouncementResponse(record);
    },

    async update(actor, id, input) {
      const current = await owned(actor, id);
      const data = AnnouncementInput.parse(input);
      await checkTarget(actor, data);
      if (!EDITABLE.includes(current.status)) throw invalidTransition(current.status, 'edited');
      const now = clock.now();
      const status = current.status === 'Published' ? 'Published' : plannedStatus(data.publishAt, now);
      const change: AnnouncementChange = {
        ...fields(data),
        // A published announcement keeps the time it went out.
        publishAt: current.status === 'Published' ? current.publishAt : data.publishAt,
        status,
        updatedAt: now.toISOString(),
      };
      const updated = await store.update(current.organizationId, current.id, current.status, change);
      if (!updated) {
        const moved = await store.find(current.organizationId, current.id);
        if (!moved) throw notFound();
        throw invalidTransition(moved.status, 'edited');
      }
      return toAnnouncementResponse(updated);
    },

    async publish(actor, id) {
      const current = await owned(actor, id);
      if (current.status === 'Published') return toAnnouncementResponse(current);
      const now = clock.now().toISOString();
      // Publishing by hand goes out now, even when it was scheduled for later.
      const publishAt = current.publishAt !== null && current.publishAt <= now ? current.publishAt : now;
      return toAnnouncementResponse(await move(current, 'Published', publishAt));
    },

    async archive(actor, id) {
      const current = await owned(actor, id);
      if (current.status === 'Archived') return;
      await move(current, 'Archived');
    },

    async runSchedule() {
      const now = clock.now().toISOString();
      let published = 0;
      let expired = 0;
      for (;;) {
        const due = await store.due(now, 100);
        if (due.length === 0) break;
        let progressed = false;
        for (const record of due) {
          const lapsed = record.expiresAt !== null && record.expiresAt <= now;
          if (record.status === 'Scheduled') {
            // A window that passed before publication expires without going out.
            const moved = await transition(
              record.id,
              'Scheduled',
              lapsed ? 'Expired' : 'Published',
              now,
              lapsed ? undefined : (record.publishAt ?? now),
            );
            if (moved) {
              progressed = true;
              if (lapsed) expired += 1;
              else published += 1;
            }
          } else if (record.status === 'Published' && lapsed) {
            if (await transition(record.id, 'Published', 'Expired', now)) {
              progressed = true;
              expired += 1;
            }
          }
        }
        // Another instance took these: stop rather than spin on the same rows.
        if (!progressed) break;
      }
      return { published, expired };
    },
  };
}
