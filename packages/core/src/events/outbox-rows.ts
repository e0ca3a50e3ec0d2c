/** An event payload as the outbox stores it: a JSON object. */
export type Payload = Record<string, unknown>;

/** A delivery this dispatcher holds the claim of: its claim is ours while `claimed_by` and `attempts` are unchanged. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  handler: string;
  attempts: number;
}

/** A row of `core_outbox_events`, as read back (or as written, with `occurred_at` a string). */
export interface EventRow {
  id: string;
  type: string;
  payload: string;
  occurred_at: unknown;
}
