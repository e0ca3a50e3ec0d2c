/**
 * The waits before retries 1..7 (Svix's schedule): 5 s, 5 min, 30 min, 2 h,
 * 5 h, 10 h, 10 h. The first attempt is immediate; after the eighth the
 * message has failed for that endpoint.
 */
export const WEBHOOK_RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
]);

/** An endpoint that has failed continuously this long is disabled. */
export const WEBHOOK_DISABLE_AFTER_MS = 5 * 24 * 3_600_000;

/** One attempt's timeout. */
export const WEBHOOK_TIMEOUT_MS = 15_000;

/**
 * The wait before the next attempt after `failedAttempts` failures, or
 * `null` when the schedule is exhausted: the step ±10 % jitter; a
 * `Retry-After` longer than that is honoured up to the following step.
 */
export function nextRetryDelayMs(
  failedAttempts: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  const step = WEBHOOK_RETRY_SCHEDULE_MS[failedAttempts - 1];
  if (step === undefined) return null;
  const jittered = Math.round(step * (0.9 + 0.2 * random()));
  if (retryAfterMs === null || retryAfterMs <= jittered) return jittered;
  const ceiling = WEBHOOK_RETRY_SCHEDULE_MS[failedAttempts] ?? step;
  return Math.min(retryAfterMs, Math.max(ceiling, jittered));
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), or `null`. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now.getTime());
}
