/**
 * The browser logger of `@idt/bff/browser`: structured events from the page
 * to the BFF's `POST /bff/logs` (or the sign-in host's `POST /logs`),
 * batched, redacted and bounded (SPEC 2.8, 8.2). No dependencies and no
 * Node APIs; the DOM objects it uses are typed by the small interfaces below
 * so that tests can hand in fakes.
 */

/** Levels, least to most severe. */
export type BrowserLogLevel = 'debug' | 'info' | 'warn' | 'error';

/** The error an event carries. */
export interface BrowserLogError {
  readonly name?: string;
  readonly message: string;
  readonly stack?: string;
}

/** One event as sent (SPEC 2.8). The server adds `service`, the user, the client address and its own `ts`. */
export interface BrowserLogRecord {
  /** When the page logged it (ISO 8601); the server keeps it as `clientTs`. */
  readonly ts: string;
  readonly level: BrowserLogLevel;
  readonly event: string;
  readonly attrs: Record<string, unknown>;
  readonly correlationId?: string;
  readonly error?: BrowserLogError;
}

/** The `fetch` the logger needs. */
export type FetchLike = (
  url: string,
  init: {
    method: 'POST';
    headers: Record<string, string>;
    body: string;
    keepalive?: boolean;
    credentials?: 'same-origin';
  },
) => Promise<{ readonly ok: boolean; readonly status: number }>;

/** `navigator.sendBeacon`. */
export interface NavigatorLike {
  sendBeacon?(url: string, data: string): boolean;
}

/** `addEventListener` / `removeEventListener` of `window` and `document`. */
export interface EventTargetLike {
  addEventListener(type: string, listener: () => void): void;
  removeEventListener(type: string, listener: () => void): void;
}

/** The part of `document` the logger reads. */
export interface DocumentLike extends EventTargetLike {
  readonly visibilityState: string;
}

/** Where the logger reports its own transport failures. */
export interface ConsoleLike {
  warn(...data: unknown[]): void;
}

/** Options of {@link createBrowserLogger}; every browser object can be replaced (tests, other runtimes). */
export interface BrowserLoggerOptions {
  /** Where batches are POSTed; default `/bff/logs`. */
  readonly endpoint?: string;
  /**
   * The CSRF token of the session (`GET /bff/user` answers it): sent as
   * `x-csrf-token` on fetch requests and as `csrfToken` in the body of a
   * beacon, which cannot carry headers. A function is read at every send.
   */
  readonly csrfToken?: string | (() => string | null | undefined);
  /** The least severe level kept; default `info`. */
  readonly level?: BrowserLogLevel;
  /** A correlation id for each event (e.g. the current navigation's); absent, the server uses the request id. */
  readonly correlationId?: () => string | null | undefined;
  readonly fetch?: FetchLike;
  readonly navigator?: NavigatorLike;
  /** Listened to for `visibilitychange`. */
  readonly document?: DocumentLike;
  /** Listened to for `pagehide`. */
  readonly window?: EventTargetLike;
  /** Epoch milliseconds; `Date.now` by default. */
  readonly now?: () => number;
  readonly setTimeout?: (callback: () => void, ms: number) => unknown;
  readonly clearTimeout?: (handle: unknown) => void;
  readonly console?: ConsoleLike;
}

/** A structured logger for the page. */
export interface BrowserLogger {
  /**
   * Buffers an event, redacted at once. `event` is a dotted lowercase name
   * (`checkout.payment-failed`); an invalid one is dropped with a console
   * warning, since the server would refuse the whole batch.
   */
  debug(event: string, attrs?: Record<string, unknown>, error?: unknown): void;
  info(event: string, attrs?: Record<string, unknown>, error?: unknown): void;
  warn(event: string, attrs?: Record<string, unknown>, error?: unknown): void;
  error(event: string, attrs?: Record<string, unknown>, error?: unknown): void;
  /** Sends what is buffered now; resolves when the requests settled (it never rejects). */
  flush(): Promise<void>;
  /** Flushes, then stops the timer and removes the page listeners. */
  close(): Promise<void>;
}

/** The numbers of SPEC 8.2 and the server's batch limits. */
export const BROWSER_LOGGER_LIMITS = Object.freeze({
  /** Buffered events that trigger a send. */
  batchSize: 20,
  /** A buffered event is sent at the latest this long after it was logged. */
  flushIntervalMs: 5000,
  /** Most events buffered; the oldest are dropped and a `logger.dropped` warning counts them. */
  maxBuffered: 200,
  /** After a failed send, nothing is sent for this long. */
  backoffMs: 30_000,
  /** Largest request body; bigger batches are split. */
  maxBatchBytes: 65_536,
  /** Most events per request (the server refuses more). */
  maxBatchEvents: 100,
  /** Most attributes per event (the server refuses more; extra ones are left out). */
  maxAttrs: 32,
  /** Deepest attribute nesting kept. */
  maxDepth: 4,
  /** Longest event name. */
  maxEventNameLength: 120,
});

const RANK: Record<BrowserLogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const EVENT_NAME = /^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$/;
/** Keys whose values never leave the page (case-insensitive substring); the server applies the same rule again. */
const SECRET_KEY = /password|passwd|secret|token|authorization|cookie|credential|api[-_]?key|private[-_]?key|email/i;
/** A JWT or an `Authorization` header value, whatever its key. */
const SECRET_VALUE = /^(?:eyJ[\w-]*\.[\w-]+\.[\w-]*|(?:Bearer|Basic)\s+\S+)$/;
const REDACTED = '[redacted]';
const TRUNCATED = '[truncated]';

/**
 * A redacted, JSON-safe copy of attributes: values under secret-looking keys
 * become `'[redacted]'` at any depth, objects nested deeper than four levels
 * become `'[truncated]'`, only the first 32 top-level keys are kept.
 */
export function redactBrowserAttrs(attrs: unknown): Record<string, unknown> {
  if (!isPlainObject(attrs)) return {};
  const out = copyObject(attrs, 1);
  const keys = Object.keys(out);
  if (keys.length <= BROWSER_LOGGER_LIMITS.maxAttrs) return out;
  return Object.fromEntries(keys.slice(0, BROWSER_LOGGER_LIMITS.maxAttrs).map((key) => [key, out[key]]));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function copyObject(value: Record<string, unknown>, depth: number): Record<string, unknown> {
  const entries: Array<[string, unknown]> = [];
  for (const key of Object.keys(value)) {
    if (SECRET_KEY.test(key)) {
      entries.push([key, REDACTED]);
      continue;
    }
    const copied = copyValue(value[key], depth);
    if (copied !== undefined) entries.push([key, copied]);
  }
  return Object.fromEntries(entries);
}

function copyValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      return SECRET_VALUE.test(value) ? REDACTED : value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) return null;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (depth >= BROWSER_LOGGER_LIMITS.maxDepth) return TRUNCATED;
  if (Array.isArray(value)) return value.map((item) => copyValue(item, depth + 1) ?? null);
  return copyObject(value as Record<string, unknown>, depth + 1);
}

function errorOf(error: unknown): BrowserLogError | undefined {
  if (error === undefined || error === null) return undefined;
  if (typeof error === 'string') return { message: error };
  if (typeof error === 'object') {
    const { name, message, stack } = error as { name?: unknown; message?: unknown; stack?: unknown };
    return {
      ...(typeof name === 'string' ? { name } : {}),
      message: typeof message === 'string' ? message : String(error),
      ...(typeof stack === 'string' ? { stack } : {}),
    };
  }
  return { message: String(error) };
}

const encoder = new TextEncoder();
const byteLength = (text: string) => encoder.encode(text).length;

/** The envelope's bytes around the events: `{"events":[` … `]}` plus the body token. */
function envelopeBytes(csrfToken: string | undefined): number {
  return byteLength(envelope([], csrfToken));
}

function envelope(events: readonly string[], csrfToken: string | undefined): string {
  return `{"events":[${events.join(',')}]${csrfToken === undefined ? '' : `,"csrfToken":${JSON.stringify(csrfToken)}`}}`;
}

/** An event that alone exceeds the budget, cut down: attributes replaced, error text shortened. */
function shrink(record: BrowserLogRecord): string {
  const error = record.error && {
    ...(record.error.name ? { name: record.error.name.slice(0, 200) } : {}),
    message: record.error.message.slice(0, 1000),
  };
  return JSON.stringify({ ...record, attrs: { truncated: true }, ...(error ? { error } : {}) });
}

/**
 * Splits events into request bodies of at most 65,536 bytes and 100 events
 * each (the server refuses bigger ones whole).
 */
export function splitBrowserLogBatches(records: readonly BrowserLogRecord[], csrfToken?: string): string[] {
  const { maxBatchBytes, maxBatchEvents } = BROWSER_LOGGER_LIMITS;
  const overhead = envelopeBytes(csrfToken);
  const bodies: string[] = [];
  let current: string[] = [];
  let size = overhead;
  for (const record of records) {
    let json = JSON.stringify(record);
    let bytes = byteLength(json);
    if (overhead + bytes > maxBatchBytes) {
      json = shrink(record);
      bytes = byteLength(json);
      if (overhead + bytes > maxBatchBytes) continue;
    }
    const added = bytes + (current.length > 0 ? 1 : 0);
    if (current.length > 0 && (size + added > maxBatchBytes || current.length >= maxBatchEvents)) {
      bodies.push(envelope(current, csrfToken));
      current = [];
      size = overhead;
    }
    size += bytes + (current.length > 0 ? 1 : 0);
    current.push(json);
  }
  if (current.length > 0) bodies.push(envelope(current, csrfToken));
  return bodies;
}

type Transport = 'fetch' | 'keepalive' | 'beacon';

/**
 * Creates the page's logger. Events below `level` are ignored; the rest are
 * redacted and buffered, then sent:
 * - when 20 are buffered, and at the latest 5 seconds after being logged
 *   (fetch);
 * - when the page becomes hidden (fetch with `keepalive`, `x-csrf-token`);
 * - on {@link BrowserLogger.flush};
 * - on `pagehide`, with `navigator.sendBeacon` (token in the body).
 *
 * At most 200 events wait; beyond that the oldest are dropped and the next
 * send starts with a `logger.dropped` warning carrying `{ count }`. A failed
 * send (network error, non-2xx answer, refused beacon) is not retried: the
 * console is warned once and nothing is sent for 30 seconds (events keep
 * buffering). Requests are split to at most 65,536 bytes and 100 events. The
 * logger never sends a `service`: the server sets it.
 *
 * @example
 * import { createBrowserLogger } from '@idt/bff/browser';
 * const user = await (await fetch('/bff/user')).json();
 * const log = createBrowserLogger({ csrfToken: user.csrfToken });
 * log.info('checkout.started', { items: 3 });
 */
export function createBrowserLogger(options: BrowserLoggerOptions = {}): BrowserLogger {
  const global = globalThis as {
    fetch?: FetchLike;
    navigator?: NavigatorLike;
    document?: DocumentLike;
    addEventListener?: EventTargetLike['addEventListener'];
    console?: ConsoleLike;
  };
  const endpoint = options.endpoint ?? '/bff/logs';
  const threshold = RANK[options.level ?? 'info'];
  const fetchImpl = options.fetch ?? (global.fetch ? (global.fetch.bind(globalThis) as FetchLike) : undefined);
  const nav = options.navigator ?? global.navigator;
  const doc = options.document ?? global.document;
  const win =
    options.window ?? (typeof global.addEventListener === 'function' ? (globalThis as unknown as EventTargetLike) : undefined);
  const now = options.now ?? Date.now;
  const schedule = options.setTimeout ?? ((callback: () => void, ms: number) => setTimeout(callback, ms));
  const cancel = options.clearTimeout ?? ((handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>));
  const out = options.console ?? global.console ?? { warn: () => undefined };
  const limits = BROWSER_LOGGER_LIMITS;

  let buffer: BrowserLogRecord[] = [];
  let dropped = 0;
  let timer: unknown;
  let disabledUntil = Number.NEGATIVE_INFINITY;
  let warned = false;
  const badNames = new Set<string>();

  const csrfToken = (): string | undefined => {
    const token = typeof options.csrfToken === 'function' ? options.csrfToken() : options.csrfToken;
    return token ? token : undefined;
  };

  function arm() {
    if (timer !== undefined || (buffer.length === 0 && dropped === 0)) return;
    timer = schedule(() => {
      timer = undefined;
      void send('fetch');
    }, limits.flushIntervalMs);
  }

  function disarm() {
    if (timer === undefined) return;
    cancel(timer);
    timer = undefined;
  }

  function failed(reason: unknown) {
    disabledUntil = now() + limits.backoffMs;
    if (warned) return;
    warned = true;
    out.warn(`[idt] sending browser logs to ${endpoint} failed; pausing for ${limits.backoffMs / 1000} s`, reason);
  }

  async function post(body: string, transport: Transport): Promise<boolean> {
    if (transport === 'beacon' && typeof nav?.sendBeacon === 'function') {
      try {
        return nav.sendBeacon(endpoint, body);
      } catch {
        return false;
      }
    }
    if (!fetchImpl) return false;
    const token = csrfToken();
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token) headers['x-csrf-token'] = token;
    try {
      const response = await fetchImpl(endpoint, {
        method: 'POST',
        headers,
        body,
        credentials: 'same-origin',
        ...(transport === 'fetch' ? {} : { keepalive: true }),
      });
      if (!response.ok) failed(`HTTP ${response.status}`);
      return response.ok;
    } catch (error) {
      failed(error);
      return false;
    }
  }

  async function send(transport: Transport): Promise<void> {
    if (buffer.length === 0 && dropped === 0) return;
    if (now() < disabledUntil) {
      // Paused after a failure: keep buffering; the pending timer (or the next event) tries again.
      arm();
      return;
    }
    disarm();
    const records = buffer;
    buffer = [];
    if (dropped > 0) {
      records.unshift({ ts: new Date(now()).toISOString(), level: 'warn', event: 'logger.dropped', attrs: { count: dropped } });
      dropped = 0;
    }
    // A beacon cannot set headers: the token rides in the body (and is not needed there on fetch requests).
    const beacon = transport === 'beacon' && typeof nav?.sendBeacon === 'function';
    const bodies = splitBrowserLogBatches(records, beacon ? csrfToken() : undefined);
    const results = await Promise.all(bodies.map((body) => post(body, transport)));
    if (results.every(Boolean)) warned = false;
    else if (beacon && results.some((ok) => !ok)) failed('sendBeacon refused the batch');
  }

  function log(level: BrowserLogLevel, event: string, attrs?: Record<string, unknown>, error?: unknown) {
    if (RANK[level] < threshold) return;
    if (typeof event !== 'string' || event.length > limits.maxEventNameLength || !EVENT_NAME.test(event)) {
      if (badNames.size < 20 && !badNames.has(String(event))) {
        badNames.add(String(event));
        out.warn(`[idt] browser log event name "${String(event)}" is not a dotted lowercase name; event dropped`);
      }
      return;
    }
    const correlationId = options.correlationId?.() ?? undefined;
    const failure = errorOf(error);
    const record: BrowserLogRecord = {
      ts: new Date(now()).toISOString(),
      level,
      event,
      attrs: redactBrowserAttrs(attrs),
      ...(correlationId ? { correlationId } : {}),
      ...(failure ? { error: failure } : {}),
    };
    if (buffer.length >= limits.maxBuffered) {
      buffer.shift();
      dropped += 1;
    }
    buffer.push(record);
    if (buffer.length >= limits.batchSize) void send('fetch');
    else arm();
  }

  const onVisibility = () => {
    if (doc?.visibilityState === 'hidden') void send('keepalive');
  };
  const onPageHide = () => void send('beacon');
  doc?.addEventListener('visibilitychange', onVisibility);
  win?.addEventListener('pagehide', onPageHide);

  return {
    debug: (event, attrs, error) => log('debug', event, attrs, error),
    info: (event, attrs, error) => log('info', event, attrs, error),
    warn: (event, attrs, error) => log('warn', event, attrs, error),
    error: (event, attrs, error) => log('error', event, attrs, error),
    flush: () => send('fetch'),
    async close() {
      await send('fetch');
      disarm();
      doc?.removeEventListener('visibilitychange', onVisibility);
      win?.removeEventListener('pagehide', onPageHide);
    },
  };
}
