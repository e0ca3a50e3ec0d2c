/** The statuses of an inquiry, in the order an inquiry moves through them. */
export const INQUIRY_STATUSES = ['New', 'Reviewed', 'Contacted', 'Closed'] as const;

/** An inquiry status, exactly as responses spell it. */
export type InquiryStatus = (typeof INQUIRY_STATUSES)[number];

const byLowerCase = new Map<string, InquiryStatus>(INQUIRY_STATUSES.map((status) => [status.toLowerCase(), status]));

/**
 * Parses a status name case-insensitively (surrounding spaces ignored).
 *
 * @returns the status, or `undefined` for anything else.
 * @example
 * parseInquiryStatus('reviewed'); // 'Reviewed'
 * parseInquiryStatus('Archived'); // undefined
 */
export function parseInquiryStatus(value: unknown): InquiryStatus | undefined {
  return typeof value === 'string' ? byLowerCase.get(value.trim().toLowerCase()) : undefined;
}

/**
 * Whether an inquiry may move from `from` to `to`: only one step forward,
 * New → Reviewed → Contacted → Closed. Staying put is not a move.
 */
export function canTransition(from: InquiryStatus, to: InquiryStatus): boolean {
  return INQUIRY_STATUSES.indexOf(to) === INQUIRY_STATUSES.indexOf(from) + 1;
}

/** The status an inquiry may move to next, or `undefined` once it is closed. */
export function nextStatus(from: InquiryStatus): InquiryStatus | undefined {
  return INQUIRY_STATUSES[INQUIRY_STATUSES.indexOf(from) + 1];
}
