/** The statuses of an announcement. */
export const ANNOUNCEMENT_STATUSES = ['Draft', 'Scheduled', 'Published', 'Expired', 'Archived'] as const;

/** One status of an announcement. */
export type AnnouncementStatus = (typeof ANNOUNCEMENT_STATUSES)[number];

const MOVES: Readonly<Record<AnnouncementStatus, readonly AnnouncementStatus[]>> = {
  // Drafts get a future publishAt (Scheduled), are published at once, or archived.
  Draft: ['Scheduled', 'Published', 'Archived'],
  // Scheduled ones go back to Draft when publishAt is cleared, are published (by hand or when due),
  // expire unpublished when their window passed before publication, or are archived.
  Scheduled: ['Draft', 'Published', 'Expired', 'Archived'],
  Published: ['Expired', 'Archived'],
  Expired: ['Archived'],
  Archived: [],
};

/**
 * Whether an announcement may move from `from` to `to`. Staying put is not
 * a move: the services treat repeating an action on an announcement already
 * in its target status (publishing a published one, archiving an archived
 * one) as a no-op, never through this function.
 */
export function canTransition(from: AnnouncementStatus, to: AnnouncementStatus): boolean {
  return MOVES[from].includes(to);
}

/** The statuses `from` may move to. */
export function nextStatuses(from: AnnouncementStatus): readonly AnnouncementStatus[] {
  return MOVES[from];
}

/** A status name in any case, or `undefined`. */
export function parseAnnouncementStatus(value: unknown): AnnouncementStatus | undefined {
  if (typeof value !== 'string') return undefined;
  const lower = value.trim().toLowerCase();
  return ANNOUNCEMENT_STATUSES.find((status) => status.toLowerCase() === lower);
}

/** The status a created or edited Draft/Scheduled announcement has: Scheduled while `publishAt` is in the future. */
export function plannedStatus(publishAt: string | null, now: Date): 'Draft' | 'Scheduled' {
  return publishAt !== null && Date.parse(publishAt) > now.getTime() ? 'Scheduled' : 'Draft';
}
