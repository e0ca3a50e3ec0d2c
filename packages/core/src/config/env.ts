import { ConfigError } from './config.js';

/** Environment variables as a module reads them (`process.env` by default). */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads a module's environment variables and collects every problem, so a
 * module reports all of its invalid settings at once ({@link EnvReader.done}).
 *
 * @example
 * const read = envReader(env);
 * const ttl = read.integer('IDT_ACCESS_TOKEN_MINUTES', { default: 15, min: 1, max: 1440 });
 * read.done(); // throws ConfigError when any variable was invalid
 */
export interface EnvReader {
  /** A trimmed value; `undefined` when unset or blank. */
  string(name: string): string | undefined;
  /** A whole number in `[min, max]`; the default when unset. */
  integer(name: string, options: { default: number; min?: number; max?: number }): number;
  /** `true`/`false` (also 1/0, yes/no, on/off); the default when unset. */
  boolean(name: string, fallback: boolean): boolean;
  /** One of `values`; the default when unset. */
  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T;
  /** Records a problem found by the module's own checks. */
  problem(message: string): void;
  /** @throws ConfigError when any problem was recorded. */
  done(): void;
}

/** A reader over `env` (see {@link EnvReader}). */
export function envReader(env: Env): EnvReader {
  const problems: string[] = [];
  const string = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  return {
    string,
    integer(name, options) {
      const value = string(name);
      if (value === undefined) return options.default;
      const min = options.min ?? 0;
      const max = options.max ?? Number.MAX_SAFE_INTEGER;
      if (!/^\d+$/.test(value)) {
        problems.push(`${name}: must be a whole number`);
        return options.default;
      }
      const parsed = Number(value);
      if (parsed < min || parsed > max) {
        problems.push(`${name}: must be between ${min} and ${max}`);
        return options.default;
      }
      return parsed;
    },
    boolean(name, fallback) {
      const value = string(name)?.toLowerCase();
      if (value === undefined) return fallback;
      if (['1', 'true', 'yes', 'on'].includes(value)) return true;
      if (['0', 'false', 'no', 'off'].includes(value)) return false;
      problems.push(`${name}: must be true or false`);
      return fallback;
    },
    oneOf(name, values, fallback) {
      const value = string(name);
      if (value === undefined) return fallback;
      if ((values as readonly string[]).includes(value)) return value as (typeof values)[number];
      problems.push(`${name}: must be one of ${values.join(', ')}`);
      return fallback;
    },
    problem(message) {
      problems.push(message);
    },
    done() {
      if (problems.length) throw new ConfigError(problems);
    },
  };
}
