/**
 * Where ingested browser log events go (SPEC 4.10): an OpenTelemetry
 * collector over OTLP/HTTP JSON when `OTEL_EXPORTER_OTLP_ENDPOINT` is set,
 * else standard output as JSON lines.
 *
 * The OTLP JSON is written by hand (the `ExportLogsServiceRequest` shape of
 * opentelemetry-proto, JSON encoding): a few dozen lines instead of the
 * OpenTelemetry SDK and exporter packages and their dependency tree.
 */
import { type Logger, silentLogger } from '../logger.js';
import type { Env } from '../module.js';
import type { BrowserLogLevel, IngestedLogEvent } from './event.js';

/** Takes ingested events. The ingest handler never waits for it and ignores its failures. */
export interface LogSink {
  /** Takes events; should queue and return at once. A throw or rejection is logged and ignored. */
  write(events: readonly IngestedLogEvent[]): void | Promise<void>;
  /** Resolves once every event written so far was exported or dropped. */
  flush?(): Promise<void>;
  /** Flushes, then stops the sink's timers. */
  close?(): Promise<void>;
}

/** A sink with a bounded queue, exporting in batches off the request path. */
export interface BufferedLogSink extends LogSink {
  write(events: readonly IngestedLogEvent[]): void;
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Events dropped so far: queue overflow and failed exports. */
  readonly dropped: number;
}

/** Queue settings shared by the built-in sinks. */
export interface LogQueueOptions {
  /** Most events waiting; the oldest are dropped beyond it. Default 2,048. */
  readonly maxQueued?: number;
  /** Most events per export. Default 512. */
  readonly maxBatch?: number;
  /** How long a partial batch waits for company, in milliseconds. */
  readonly delayMs?: number;
  /** Where export failures and dropped events are reported (once per episode). */
  readonly logger?: Logger;
}

/**
 * The queue behind the built-in sinks: `write` only appends; a timer (or a
 * full batch) starts the export loop, one export at a time. A failed export
 * drops its batch (no retry); the first failure of an episode and the first
 * overflow are logged, later ones are not until an export succeeds again.
 */
function createQueue(
  name: string,
  exportBatch: (events: readonly IngestedLogEvent[]) => void | Promise<void>,
  options: LogQueueOptions,
  defaultDelayMs: number,
): BufferedLogSink {
  const maxQueued = options.maxQueued ?? 2048;
  const maxBatch = options.maxBatch ?? 512;
  const delayMs = options.delayMs ?? defaultDelayMs;
  const logger = options.logger ?? silentLogger;
  const queue: IngestedLogEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let failing = false;
  let overflowing = false;
  let dropped = 0;
  let closed = false;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch);
      try {
        await exportBatch(batch);
        failing = false;
      } catch (error) {
        dropped += batch.length;
        if (!failing) logger.warn(`${name}: export failed; dropping browser log events until it recovers`, { error });
        failing = true;
      }
    }
    overflowing = false;
  }

  function start(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (!running) {
      running = drain().finally(() => {
        running = undefined;
        // Written between the loop's last check and here: export those too.
        if (queue.length > 0) schedule();
      });
    }
    return running;
  }

  function schedule() {
    if (running || timer !== undefined || closed) return;
    if (queue.length >= maxBatch) {
      void start();
      return;
    }
    timer = setTimeout(() => void start(), delayMs);
    (timer as { unref?: () => void }).unref?.();
  }

  async function flush() {
    // Events written while an export runs are taken by the same loop; a second pass catches a race with its end.
    while (queue.length > 0 || running) await start();
  }

  return {
    write(events) {
      if (events.length === 0) return;
      queue.push(...events);
      const excess = queue.length - maxQueued;
      if (excess > 0) {
        queue.splice(0, excess);
        dropped += excess;
        if (!overflowing) logger.warn(`${name}: queue full; dropping the oldest browser log events`, { maxQueued });
        overflowing = true;
      }
      if (closed) void start();
      else schedule();
    },
    flush,
    async close() {
      await flush();
      closed = true;
    },
    get dropped() {
      return dropped;
    },
  };
}

/** Options of {@link createStdoutLogSink}. */
export interface StdoutLogSinkOptions extends LogQueueOptions {
  /** Writes one chunk of JSON lines (each ending in `\n`); standard output by default. */
  readonly write?: (chunk: string) => void;
}

/**
 * Writes each event as one JSON line, off the request path (a write to a
 * pipe is synchronous on Linux). The line is the event itself: `ts`,
 * `clientTs`, `level`, `event`, `attrs`, `service`, `clientIp`, `userId`,
 * `tenantId`, `correlationId`, `error`.
 *
 * @example
 * const sink = createStdoutLogSink();
 * const lines: string[] = [];
 * const captured = createStdoutLogSink({ write: (chunk) => lines.push(...chunk.trimEnd().split('\n')) });
 */
export function createStdoutLogSink(options: StdoutLogSinkOptions = {}): BufferedLogSink {
  const write = options.write ?? ((chunk: string) => void process.stdout.write(chunk));
  return createQueue(
    'stdout log sink',
    (events) => write(events.map((event) => `${JSON.stringify(event)}\n`).join('')),
    options,
    0,
  );
}

/** Options of {@link createOtlpLogSink}. */
export interface OtlpLogSinkOptions extends LogQueueOptions {
  /** The collector's OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`, e.g. `http://collector:4318`); `/v1/logs` is appended. */
  readonly endpoint: string;
  /** The path appended to {@link endpoint}; `/v1/logs` by default, `''` for a signal-specific endpoint used as is. */
  readonly path?: string;
  /** The resource `service.name` of events that carry none; each event's own `service` wins. Default `idt`. */
  readonly service?: string;
  /** Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`), e.g. a collector API key. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The Fetch implementation; the global one by default. */
  readonly fetch?: typeof fetch;
  /** Time budget of one export, in milliseconds. Default 10,000. */
  readonly timeoutMs?: number;
}

const SEVERITY: Record<BrowserLogLevel, { number: number; text: string }> = {
  debug: { number: 5, text: 'DEBUG' },
  info: { number: 9, text: 'INFO' },
  warn: { number: 13, text: 'WARN' },
  error: { number: 17, text: 'ERROR' },
};

/** An OTLP `AnyValue` (JSON encoding: 64-bit integers as strings). */
type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: AnyValue[] } }
  | { kvlistValue: { values: KeyValue[] } }
  | Record<string, never>;

interface KeyValue {
  key: string;
  value: AnyValue;
}

function anyValue(value: unknown): AnyValue {
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } };
  if (typeof value === 'object' && value !== null) {
    return { kvlistValue: { values: Object.entries(value).map(([key, item]) => ({ key, value: anyValue(item) })) } };
  }
  return {};
}

function unixNano(iso: string): string {
  return (BigInt(Date.parse(iso)) * 1_000_000n).toString();
}

/** One OTLP log record of an event; page attributes are namespaced `attrs.*` so they cannot pose as server fields. */
function logRecord(event: IngestedLogEvent) {
  const attributes: KeyValue[] = [
    { key: 'event.name', value: { stringValue: event.event } },
    { key: 'client.address', value: { stringValue: event.clientIp } },
    { key: 'idt.client_ts', value: { stringValue: event.clientTs } },
  ];
  if (event.userId) attributes.push({ key: 'user.id', value: { stringValue: event.userId } });
  if (event.tenantId) attributes.push({ key: 'idt.tenant_id', value: { stringValue: event.tenantId } });
  if (event.correlationId) attributes.push({ key: 'idt.correlation_id', value: { stringValue: event.correlationId } });
  if (event.error) {
    if (event.error.name) attributes.push({ key: 'exception.type', value: { stringValue: event.error.name } });
    attributes.push({ key: 'exception.message', value: { stringValue: event.error.message } });
    if (event.error.stack) attributes.push({ key: 'exception.stacktrace', value: { stringValue: event.error.stack } });
  }
  for (const [key, value] of Object.entries(event.attrs)) attributes.push({ key: `attrs.${key}`, value: anyValue(value) });
  const time = unixNano(event.ts);
  return {
    timeUnixNano: time,
    observedTimeUnixNano: time,
    severityNumber: SEVERITY[event.level].number,
    severityText: SEVERITY[event.level].text,
    body: { stringValue: event.event },
    attributes,
  };
}

/**
 * The OTLP/HTTP JSON `ExportLogsServiceRequest` of a batch: one
 * `resourceLogs` entry per service (resource attribute `service.name`), one
 * scope `idt.browser`, a log record per event. `timeUnixNano` is the receipt
 * time (the server's clock); the browser's claim is the `idt.client_ts`
 * attribute.
 */
export function toOtlpLogsRequest(events: readonly IngestedLogEvent[], fallbackService = 'idt') {
  const byService = new Map<string, IngestedLogEvent[]>();
  for (const event of events) {
    const service = event.service || fallbackService;
    const group = byService.get(service);
    if (group) group.push(event);
    else byService.set(service, [event]);
  }
  return {
    resourceLogs: [...byService].map(([service, group]) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
      scopeLogs: [{ scope: { name: 'idt.browser' }, logRecords: group.map(logRecord) }],
    })),
  };
}

/**
 * Exports events to an OpenTelemetry collector: OTLP/HTTP with a JSON body,
 * POSTed to `${endpoint}/v1/logs` in batches of up to 512 after at most a
 * second, from a queue of at most 2,048 events. A failed export (collector
 * down, non-2xx, timeout) drops its batch and is logged once per episode;
 * the ingest endpoint's answer never depends on it.
 *
 * @example
 * const sink = createOtlpLogSink({ endpoint: 'http://otel-collector:4318', logger });
 */
export function createOtlpLogSink(options: OtlpLogSinkOptions): BufferedLogSink {
  const url = `${options.endpoint.replace(/\/+$/, '')}${options.path ?? '/v1/logs'}`;
  const fetchImpl = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const headers = { 'content-type': 'application/json', ...options.headers };
  return createQueue(
    'OTLP log sink',
    async (events) => {
      const response = await fetchImpl(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(toOtlpLogsRequest(events, options.service)),
        signal: AbortSignal.timeout(timeoutMs),
      });
      // Read the answer to the end so the connection can be reused.
      await response.arrayBuffer().catch(() => undefined);
      if (!response.ok) throw new Error(`The collector answered ${response.status}`);
    },
    options,
    1000,
  );
}

/** Parses `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs, comma-separated, values percent-encoded. */
function otlpHeaders(value: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const index = pair.indexOf('=');
    if (index <= 0) continue;
    try {
      headers[pair.slice(0, index).trim().toLowerCase()] = decodeURIComponent(pair.slice(index + 1).trim());
    } catch {
      // A malformed escape: leave that header out.
    }
  }
  return headers;
}

/** Options of {@link logSinkFromEnv} besides the environment. */
export interface LogSinkFromEnvOptions extends LogQueueOptions {
  /** The Fetch implementation of the OTLP sink. */
  readonly fetch?: typeof fetch;
  /** The writer of the standard-output sink. */
  readonly write?: (chunk: string) => void;
}

/**
 * The sink SPEC 4.10 asks for: OTLP/HTTP JSON when
 * `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` (used as is) or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/logs` appended) is set, with the
 * headers of `OTEL_EXPORTER_OTLP_LOGS_HEADERS` / `OTEL_EXPORTER_OTLP_HEADERS`;
 * else JSON lines on standard output.
 *
 * @example
 * const sink = logSinkFromEnv(process.env, { logger });
 */
export function logSinkFromEnv(env: Env, options: LogSinkFromEnvOptions = {}): BufferedLogSink {
  const { fetch: fetchImpl, write, ...queue } = options;
  const signal = env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!signal && !base) return createStdoutLogSink({ ...queue, ...(write ? { write } : {}) });
  const headers = otlpHeaders(env.OTEL_EXPORTER_OTLP_LOGS_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS);
  return createOtlpLogSink({
    ...queue,
    ...(signal ? { endpoint: signal, path: '' } : { endpoint: base as string }),
    ...(env.OTEL_SERVICE_NAME ? { service: env.OTEL_SERVICE_NAME } : {}),
    headers,
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
}
