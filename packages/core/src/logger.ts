/** Log levels, least to most severe. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A structured logger; every idt package logs through this port. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
}

const rank: Record<LogLevel | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** The least severe level written; `silent` writes nothing. */
  level?: LogLevel | 'silent';
  /** Where lines go; standard error by default. */
  write?: (line: string) => void;
  /** Fields on every line, e.g. `{ service: 'idt' }`. */
  fields?: Record<string, unknown>;
}

/**
 * A logger that writes one JSON object per line.
 *
 * @example
 * const logger = createLogger({ level: 'info', fields: { service: 'idt' } });
 * logger.info('server started', { url });
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = rank[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const base = options.fields ?? {};
  const log = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (rank[level] < threshold) return;
    const entry: Record<string, unknown> = { ts: new Date().toISOString(), level, msg: message, ...base, ...fields };
    for (const [key, value] of Object.entries(entry)) {
      if (value instanceof Error) entry[key] = { name: value.name, message: value.message, stack: value.stack };
    }
    write(JSON.stringify(entry));
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
