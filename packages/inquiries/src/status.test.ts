import { describe, expect, it } from 'vitest';
import { canTransition, INQUIRY_STATUSES, nextStatus, parseInquiryStatus } from './status.js';

describe('inquiry statuses', () => {
  it('parses names case-insensitively and nothing else', () => {
    expect(parseInquiryStatus('new')).toBe('New');
    expect(parseInquiryStatus(' CONTACTED ')).toBe('Contacted');
    expect(parseInquiryStatus('Archived')).toBeUndefined();
    expect(parseInquiryStatus(1)).toBeUndefined();
    expect(parseInquiryStatus(undefined)).toBeUndefined();
  });

  it('allows exactly the three forward steps among the sixteen pairs', () => {
    const allowed = INQUIRY_STATUSES.flatMap((from) =>
      INQUIRY_STATUSES.filter((to) => canTransition(from, to)).map((to) => `${from}→${to}`),
    );
    expect(allowed).toEqual(['New→Reviewed', 'Reviewed→Contacted', 'Contacted→Closed']);
    expect(nextStatus('Closed')).toBeUndefined();
  });
});
