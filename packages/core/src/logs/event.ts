/**
 * The browser log event (SPEC 2.8) and its batch envelope: limits, parsing
 * of what a page sends, and redaction of secret-looking attributes.
 */

/** The levels a browser event may carry, least to most severe. */
export type BrowserLogLevel = 'debug' | 'info' | 'warn' | 'error';

/** {@link BrowserLogLevel} as a list. */
export const BROWSER_LOG_LEVELS: readonly BrowserLogLevel[] = Object.freeze(['debug', 'info', 'warn', 'error']);

/** Limits of a browser log batch (SPEC 8.2, SPEC-NOTES "Browser log batch"). */
export const LOG_BATCH_LIMITS = Object.freeze({
  /** Largest request body, in bytes; a larger one is refused with 413, never truncated. */
  maxBytes: 65_536,
  /** Most events in one batch. */
  maxEvents: 100,
  /** Longest event name, in characters. */
  maxEventNameLength: 120,
  /** Most attributes on one event (top-level keys). */
  maxAttrs: 32,
  /** Deepest nesting of attribute values kept; deeper values become `'[truncated]'`. */
  maxAttrDepth: 4,
});

/** A dotted, lowercase, low-cardinality event name (SPEC 2.8): `auth.sign-in.failed`. */
export const LOG_EVENT_NAME = /^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$/;

/** The error an event may carry. */
export interface LogEventError {
  readonly name?: string;
  readonly message: string;
  readonly stack?: string;
}

/** An event as a page sends it (SPEC 2.8), once validated and rebuilt. */
export interface BrowserLogEvent {
  /** The browser's claim of when the event happened (ISO 8601). */
  readonly ts: string;
  readonly level: BrowserLogLevel;
  readonly event: string;
  /** Attributes, already redacted. */
  readonly attrs: Readonly<Record<string, unknown>>;
  readonly correlationId?: string;
  readonly error?: LogEventError;
}

/** A validated batch: the envelope `{ events, csrfToken? }`. */
export interface LogBatch {
  readonly events: readonly BrowserLogEvent[];
  /** The CSRF token a `sendBeacon` request carries in its body (it cannot set headers). */
  readonly csrfToken?: string;
}

/**
 * A browser event as the server records it: rebuilt field by field, with the
 * fields only the server may set (SPEC 2.8).
 */
export interface IngestedLogEvent {
  /** Receipt time (ISO 8601), from the server's clock. */
  readonly ts: string;
  /** The browser's claim of the event time (ISO 8601). */
  readonly clientTs: string;
  readonly level: BrowserLogLevel;
  readonly event: string;
  readonly attrs: Readonly<Record<string, unknown>>;
  /** The service that took the batch, e.g. `idt-signin`. */
  readonly service: string;
  /** The peer address the host reported. */
  readonly clientIp: string;
  readonly userId: string | null;
  readonly tenantId: string | null;
  /** The event's own correlation id, else the request's `x-request-id`, else `null`. */
  readonly correlationId: string | null;
  readonly error?: LogEventError;
}

/** What {@link parseLogBatch} answers. */
export type LogBatchParseResult =
  | { readonly ok: true; readonly batch: LogBatch }
  | {
      readonly ok: false;
      /** Why the whole batch is refused; sent to the page as the problem's `reason`. */
      readonly reason: string;
      /**
       * The camelCase member path at fault, as the problem's `errors` key:
       * `events[2].level`, `events`, `csrfToken`, or `''` for the whole body.
       */
      readonly member: string;
      /** The position of the offending event, when one is at fault. */
      readonly index?: number;
    };

/** The reasons a batch is refused with 400, as sent in the problem's `reason` (SPEC-NOTES "Browser log batch"). */
export const LOG_BATCH_REASONS = Object.freeze({
  notJson: 'body is not valid JSON',
  notObject: 'body is not an object',
  noEvents: 'body has no events array',
  empty: 'batch is empty',
  tooMany: 'batch holds too many events',
  eventNotObject: 'event is not an object',
  level: 'event has no valid level',
  name: 'event name is not a dotted low-cardinality name',
  ts: 'event has no valid ts',
  attrs: 'event attrs is not an object',
  tooManyAttrs: 'event carries too many attributes',
  error: 'event error is not an object or a string',
  csrfToken: 'csrfToken is not a string',
});

/**
 * Attribute keys whose values are never kept (case-insensitive substring):
 * credentials, and e-mail addresses (personal data a log pipeline should
 * not collect; log a user id instead).
 */
export const SECRET_KEY = /password|passwd|secret|token|authorization|cookie|credential|api[-_]?key|private[-_]?key|email/i;

/** Values that are credentials whatever their key: a JWT, or an `Authorization` header value. */
const SECRET_VALUE = /^(?:eyJ[\w-]*\.[\w-]+\.[\w-]*|(?:Bearer|Basic)\s+\S+)$/;

/** What replaces a redacted value. */
export const REDACTED = '[redacted]';

const CORRELATION_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** Whether a value is a sane correlation id (the shape of an `x-request-id`): 1-128 URL-safe characters. */
export function isCorrelationId(value: unknown): value is string {
  return typeof value === 'string' && CORRELATION_ID.test(value);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A copy of attributes with every value under a secret-looking key (at any
 * depth) replaced by `'[redacted]'`, JWT- and `Bearer`-shaped strings
 * redacted wherever they are, and values nested deeper than
 * {@link LOG_BATCH_LIMITS.maxAttrDepth} replaced by `'[truncated]'`. Keys are
 * copied as data (a `__proto__` key stays a plain key).
 */
export function redactLogAttrs(attrs: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return rebuildObject(attrs, 1);
}

function rebuildObject(value: Readonly<Record<string, unknown>>, depth: number): Record<string, unknown> {
  return Object.fromEntries(
    Object.keys(value).map((key) => [key, SECRET_KEY.test(key) ? REDACTED : rebuildValue(value[key], depth)]),
  );
}

function rebuildValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return SECRET_VALUE.test(value) ? REDACTED : value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'boolean' || value === null) return value;
  if (typeof value !== 'object') return null;
  if (depth >= LOG_BATCH_LIMITS.maxAttrDepth) return '[truncated]';
  if (Array.isArray(value)) return value.map((item) => rebuildValue(item, depth + 1));
  return rebuildObject(value as Record<string, unknown>, depth + 1);
}

/** The browser's timestamp as ISO 8601: an ISO string or epoch milliseconds. */
function clientTimestamp(value: unknown): string | undefined {
  const ms = typeof value === 'string' && value.length <= 64 ? Date.parse(value) : typeof value === 'number' ? value : Number.NaN;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) return undefined;
  return new Date(ms).toISOString();
}

function eventError(value: unknown): LogEventError | undefined | false {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return { message: value };
  if (!isRecord(value)) return false;
  const { name, message, stack } = value;
  return {
    ...(typeof name === 'string' ? { name } : {}),
    message: typeof message === 'string' ? message : '',
    ...(typeof stack === 'string' ? { stack } : {}),
  };
}

/**
 * Validates a parsed batch envelope and rebuilds every event field by field:
 * unknown fields (a smuggled `service` or `userId`) are dropped and
 * attributes are redacted. One bad event refuses the whole batch.
 */
export function parseLogBatch(body: unknown): LogBatchParseResult {
  const R = LOG_BATCH_REASONS;
  if (!isRecord(body)) return { ok: false, reason: R.notObject, member: '' };
  if (!Array.isArray(body.events)) return { ok: false, reason: R.noEvents, member: 'events' };
  if (body.events.length === 0) return { ok: false, reason: R.empty, member: 'events' };
  if (body.events.length > LOG_BATCH_LIMITS.maxEvents) return { ok: false, reason: R.tooMany, member: 'events' };
  if (body.csrfToken !== undefined && typeof body.csrfToken !== 'string') {
    return { ok: false, reason: R.csrfToken, member: 'csrfToken' };
  }
  const events: BrowserLogEvent[] = [];
  for (let index = 0; index < body.events.length; index++) {
    const raw: unknown = body.events[index];
    const refuse = (reason: string, field?: string): LogBatchParseResult => ({
      ok: false,
      reason,
      member: field === undefined ? `events[${index}]` : `events[${index}].${field}`,
      index,
    });
    if (!isRecord(raw)) return refuse(R.eventNotObject);
    if (!BROWSER_LOG_LEVELS.includes(raw.level as BrowserLogLevel)) return refuse(R.level, 'level');
    const name = raw.event;
    if (typeof name !== 'string' || name.length > LOG_BATCH_LIMITS.maxEventNameLength || !LOG_EVENT_NAME.test(name)) {
      return refuse(R.name, 'event');
    }
    const ts = clientTimestamp(raw.ts);
    if (ts === undefined) return refuse(R.ts, 'ts');
    const attrs = raw.attrs ?? {};
    if (!isRecord(attrs)) return refuse(R.attrs, 'attrs');
    if (Object.keys(attrs).length > LOG_BATCH_LIMITS.maxAttrs) return refuse(R.tooManyAttrs, 'attrs');
    const error = eventError(raw.error);
    if (error === false) return refuse(R.error, 'error');
    const correlationId = isCorrelationId(raw.correlationId) ? raw.correlationId : undefined;
    events.push({
      ts,
      level: raw.level as BrowserLogLevel,
      event: name,
      attrs: redactLogAttrs(attrs),
      ...(correlationId ? { correlationId } : {}),
      ...(error ? { error } : {}),
    });
  }
  return { ok: true, batch: { events, ...(typeof body.csrfToken === 'string' ? { csrfToken: body.csrfToken } : {}) } };
}
