import { describe, expect, it } from 'vitest';
import {
  ANNOUNCEMENT_STATUSES,
  type AnnouncementStatus,
  canTransition,
  parseAnnouncementStatus,
  plannedStatus,
} from './status.js';

const allowed = new Set([
  'Draft→Scheduled',
  'Draft→Published',
  'Draft→Archived',
  'Scheduled→Draft',
  'Scheduled→Published',
  'Scheduled→Expired',
  'Scheduled→Archived',
  'Published→Expired',
  'Published→Archived',
  'Expired→Archived',
]);

describe('canTransition over every pair of statuses', () => {
  const pairs: Array<[AnnouncementStatus, AnnouncementStatus]> = ANNOUNCEMENT_STATUSES.flatMap((from) =>
    ANNOUNCEMENT_STATUSES.map((to): [AnnouncementStatus, AnnouncementStatus] => [from, to]),
  );
  it('covers 25 pairs', () => expect(pairs).toHaveLength(25));
  it.each(pairs)('%s → %s', (from, to) => {
    expect(canTransition(from, to)).toBe(allowed.has(`${from}→${to}`));
  });
  it('never leaves Archived and never goes back to Published or Scheduled from Expired', () => {
    for (const to of ANNOUNCEMENT_STATUSES) expect(canTransition('Archived', to)).toBe(false);
    expect(canTransition('Expired', 'Published')).toBe(false);
    expect(canTransition('Published', 'Draft')).toBe(false);
  });
});

describe('parseAnnouncementStatus and plannedStatus', () => {
  it('parses names in any case', () => {
    expect(parseAnnouncementStatus(' published ')).toBe('Published');
    expect(parseAnnouncementStatus('SCHEDULED')).toBe('Scheduled');
    expect(parseAnnouncementStatus('live')).toBeUndefined();
    expect(parseAnnouncementStatus(3)).toBeUndefined();
  });
  it('is Scheduled only while publishAt is in the future', () => {
    const now = new Date('2026-01-01T00:00:00.000Z');
    expect(plannedStatus(null, now)).toBe('Draft');
    expect(plannedStatus('2026-01-01T00:00:00.000Z', now)).toBe('Draft');
    expect(plannedStatus('2026-01-01T00:00:00.001Z', now)).toBe('Scheduled');
  });
});
