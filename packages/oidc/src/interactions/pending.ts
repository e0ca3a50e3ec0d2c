import type { Interaction } from './interaction.js';

/**
 * A sign-in between its steps: who passed the first factor and with what,
 * and the step it waits for. Kept server-side in the interaction (the
 * provider's `Interaction` record, under {@link PENDING_KEY} of its
 * `result`): the browser only holds the interaction cookie, and the record
 * ends with the interaction. The identity session starts only when every
 * step is done.
 */
export interface PendingSignIn {
  readonly userId: string;
  /** The methods passed so far (RFC 8176). */
  readonly amr: readonly string[];
  /** The step waiting: a second factor, TOTP enrolment, or enrolment done (its recovery codes were shown). */
  readonly step: 'second-factor' | 'enrolment' | 'enrolled';
  /**
   * `login`: a sign-in (the session starts at the end); `consent`: a
   * signed-in user stepping up for an organization that requires MFA (the
   * session is kept, and marked re-authenticated).
   */
  readonly prompt: 'login' | 'consent';
  /** The organization whose policy asked the step, if one did. */
  readonly organizationId: string | null;
  /** The TOTP enrolment the enrolment page began. */
  readonly enrolmentId?: string;
}

/** Where the pending sign-in lives in the interaction's record. */
export const PENDING_KEY = 'idt_pending';

const STEPS = new Set(['second-factor', 'enrolment', 'enrolled']);

/** The sign-in waiting in this interaction for its next step, if any. */
export function pendingSignIn(interaction: Interaction): PendingSignIn | undefined {
  const value = (interaction.details.result as Record<string, unknown> | undefined)?.[PENDING_KEY] as
    | Partial<PendingSignIn>
    | undefined;
  if (!value || typeof value.userId !== 'string' || !Array.isArray(value.amr) || !STEPS.has(String(value.step))) {
    return undefined;
  }
  return value as PendingSignIn;
}

/** Keeps `pending` in the interaction's record (and in the request's view of it). */
export async function savePending(interaction: Interaction, pending: PendingSignIn): Promise<void> {
  const record = interaction.details as unknown as { result?: Record<string, unknown>; persist(): Promise<unknown> };
  record.result = { ...(record.result ?? {}), [PENDING_KEY]: pending };
  await record.persist();
}
