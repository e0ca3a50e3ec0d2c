import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';

/** The deployment environments of idt. */
export const environments = ['Development', 'Testing', 'Production'] as const;

/** The deployment environment: decides error detail, rate limiting and migration policy. */
export type Environment = (typeof environments)[number];

/** The rate-limit policies of SPEC 8.1. */
export const ratePolicies = ['auth', 'upload', 'registration', 'global'] as const;

/** A rate-limit policy name. */
export type RatePolicyName = (typeof ratePolicies)[number];

/** A fixed window: at most `permitLimit` requests per `windowSeconds`. */
export interface RateLimitSetting {
  permitLimit: number;
  windowSeconds: number;
}

/** How outgoing mail is delivered (`IDT_SMTP_URL`, `IDT_MAIL_FROM`). */
export interface MailSettings {
  /** `smtp` when `IDT_SMTP_URL` is set, else `file` (development only: `.eml` files in {@link directory}). */
  transport: 'smtp' | 'file';
  /** `IDT_SMTP_URL`: `smtp://user:password@host:587` or `smtps://…:465`. */
  smtpUrl?: string;
  /** `IDT_MAIL_FROM`: the default sender, e.g. `idt <no-reply@example.com>`. */
  from: string;
  /** Where the file transport writes messages: `${dataDir}/mail`. */
  directory: string;
}

/** The default sender of outgoing mail. */
export const DEFAULT_MAIL_FROM = 'idt <no-reply@localhost>';

/** The resolved configuration of an idt deployment. */
export interface IdtConfig {
  /** `IDT_ENVIRONMENT`. */
  environment: Environment;
  /** `PORT`: the port the reference server listens on. */
  port: number;
  /** `HOST`: the interface the reference server binds. */
  host: string;
  /** `IDT_DATABASE_URL`: `sqlite:<file>` or `postgres://…`. */
  databaseUrl: string;
  /** `IDT_DATA_DIR`: where local state (SQLite file, dev mail, blobs) lives. */
  dataDir: string;
  /** `IDT_ISSUER`: the public origin (plus optional path) without the deployment prefix. */
  issuer: string;
  /** `IDT_PATH_PREFIX`: the optional deployment path prefix, `''` or `/segment[/segment…]`. */
  pathPrefix: string;
  /** `IDT_AUTH_URL`: where the sign-in and logout pages are served; defaults to the public base URL. */
  authUrl: string;
  /** The public base URL of the API: issuer plus path prefix. */
  publicBaseUrl: string;
  /** `IDT_TRUST_PROXY`: honour `x-forwarded-*` headers from a reverse proxy. */
  trustProxy: boolean;
  /** `IDT_KEY_ENCRYPTION_SECRET`: encrypts private signing keys at rest. */
  keyEncryptionSecret: string | undefined;
  /** `IDT_RATE_LIMIT_<POLICY>_PERMIT_LIMIT` / `_WINDOW_SECONDS`. */
  rateLimits: Record<RatePolicyName, RateLimitSetting>;
  /** `IDT_LOG_LEVEL`. */
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** Outgoing mail, derived from `IDT_SMTP_URL`, `IDT_MAIL_FROM` and `IDT_DATA_DIR`. */
  mail: MailSettings;
}

/** Defaults of the rate-limit policies (SPEC 8.1). */
export const defaultRateLimits: Readonly<Record<RatePolicyName, RateLimitSetting>> = Object.freeze({
  auth: { permitLimit: 30, windowSeconds: 60 },
  upload: { permitLimit: 10, windowSeconds: 3600 },
  registration: { permitLimit: 5, windowSeconds: 3600 },
  global: { permitLimit: 1000, windowSeconds: 3600 },
});

/** Where the variables of a configuration were read from, so errors can name the file to fix. */
export interface ConfigOrigin {
  /** The absolute path of the project env file read (see `loadProjectEnv`), when one was. */
  readonly envFile?: string | undefined;
  /** The variables whose value came from {@link envFile} (the others came from the environment). */
  readonly fromFile?: ReadonlySet<string> | undefined;
}

/** Where one variable came from: `/srv/app/.env` or `the environment`. */
export function variableOrigin(name: string, origin: ConfigOrigin | undefined): string {
  return origin?.envFile !== undefined && origin.fromFile?.has(name) ? origin.envFile : 'the environment';
}

/** Thrown when configuration is invalid; lists every problem at once. */
export class ConfigError extends Error {
  /** One message per invalid setting, prefixed with the variable name. */
  readonly problems: string[];
  /** Where the variables were read from, when the loader knew it. */
  readonly origin: ConfigOrigin | undefined;
  constructor(problems: string[], origin?: ConfigOrigin) {
    super(
      `Invalid configuration${origin?.envFile ? ` (the environment and ${origin.envFile})` : ''}:\n${problems
        .map((p) => {
          const name = p.split(':')[0]?.trim() ?? '';
          return origin?.envFile && origin.fromFile?.has(name) ? `  - ${p} (set in ${origin.envFile})` : `  - ${p}`;
        })
        .join('\n')}`,
    );
    this.name = 'ConfigError';
    this.problems = problems;
    this.origin = origin;
  }
}

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim()));

const booleanString = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value === '') return undefined;
    const normalized = value.toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(normalized)) return true;
    if (['0', 'false', 'no', 'off'].includes(normalized)) return false;
    ctx.addIssue({ code: 'custom', message: 'must be true or false' });
    return z.NEVER;
  });

function positiveInteger(max = Number.MAX_SAFE_INTEGER) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value === '') return undefined;
      if (!/^\d+$/.test(value.trim())) {
        ctx.addIssue({ code: 'custom', message: 'must be a whole number' });
        return z.NEVER;
      }
      const parsed = Number(value);
      if (parsed < 0 || parsed > max) {
        ctx.addIssue({ code: 'custom', message: `must be between 0 and ${max}` });
        return z.NEVER;
      }
      return parsed;
    });
}

/**
 * Normalizes a deployment path prefix: `''`, or `/a/b` with no trailing slash.
 *
 * @throws ConfigError when the prefix holds characters that cannot appear in a path segment.
 */
export function normalizePathPrefix(prefix: string | undefined): string {
  if (!prefix) return '';
  const trimmed = prefix.trim().replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  if (!/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(trimmed)) {
    throw new ConfigError([`IDT_PATH_PREFIX: "${prefix}" is not a plain path (letters, digits, . _ ~ - and /)`]);
  }
  return `/${trimmed}`;
}

function normalizeUrl(name: string, value: string, problems: string[]): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      problems.push(`${name}: must be an http or https URL`);
    }
    if (url.search || url.hash) problems.push(`${name}: must not have a query or fragment`);
    return url.href.replace(/\/+$/, '');
  } catch {
    problems.push(`${name}: "${value}" is not an absolute URL`);
    return value;
  }
}

const envSchema = z.object({
  IDT_ENVIRONMENT: z.enum(environments).optional(),
  PORT: positiveInteger(65535),
  HOST: optionalString,
  IDT_DATABASE_URL: optionalString,
  IDT_DATA_DIR: optionalString,
  IDT_ISSUER: optionalString,
  IDT_PATH_PREFIX: optionalString,
  IDT_AUTH_URL: optionalString,
  IDT_TRUST_PROXY: booleanString,
  IDT_KEY_ENCRYPTION_SECRET: optionalString,
  IDT_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).optional(),
  IDT_SMTP_URL: optionalString,
  IDT_MAIL_FROM: optionalString,
  ...Object.fromEntries(
    ratePolicies.flatMap((policy) => [
      [`IDT_RATE_LIMIT_${policy.toUpperCase()}_PERMIT_LIMIT`, positiveInteger()],
      [`IDT_RATE_LIMIT_${policy.toUpperCase()}_WINDOW_SECONDS`, positiveInteger()],
    ]),
  ),
});

/** Settings that code may pass instead of (and over) environment variables. */
export type IdtConfigOverrides = Partial<Omit<IdtConfig, 'rateLimits' | 'publicBaseUrl' | 'mail'>> & {
  /** The transport follows `smtpUrl`: SMTP when set, files otherwise. */
  mail?: Partial<Omit<MailSettings, 'transport'>>;
  rateLimits?: Partial<Record<RatePolicyName, Partial<RateLimitSetting>>>;
};

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** The host sends mail itself (a `mailer` given to `createIdt`): Production then needs no `IDT_SMTP_URL`. */
  readonly hasMailer?: boolean;
  /**
   * The project directory: when given, a relative `IDT_DATA_DIR` and a relative
   * `sqlite:` file are resolved against it (not the process's working
   * directory), so every process of a project finds the same data directory
   * and Development key-encryption secret. `loadProjectEnv` gives it.
   */
  readonly baseDir?: string;
  /**
   * The settings the caller uses, of those Production requires: `mail`
   * (`IDT_SMTP_URL`) and `keyEncryptionSecret` (`IDT_KEY_ENCRYPTION_SECRET`).
   * Both by default; a command that sends no mail passes `{ mail: false }`.
   */
  readonly requires?: { readonly mail?: boolean; readonly keyEncryptionSecret?: boolean };
  /** Where the variables came from, named by the errors (see `loadProjectEnv`). */
  readonly origin?: ConfigOrigin;
}

/** The file of a relative `sqlite:` URL resolved against `baseDir`; other URLs unchanged. */
function absoluteSqliteUrl(url: string, baseDir: string | undefined): string {
  if (baseDir === undefined || !url.startsWith('sqlite:')) return url;
  const file = url.slice('sqlite:'.length);
  if (file === '' || file === ':memory:' || file.startsWith('//') || isAbsolute(file) || file.startsWith('file:')) return url;
  return `sqlite:${resolve(baseDir, file)}`;
}

/** The file of a `sqlite:` URL naming one; `undefined` for memory databases and other engines. */
function sqliteFileOf(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  return file === '' || file === ':memory:' || file.startsWith('file:') ? undefined : file;
}

/**
 * Reads the configuration from environment variables (documented in
 * `docs/configuration.md`), applying `overrides` last.
 *
 * @throws ConfigError listing every invalid setting.
 *
 * @example
 * const config = loadConfig(process.env);
 * const testConfig = loadConfig({}, { environment: 'Testing', databaseUrl: 'sqlite::memory:' });
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: IdtConfigOverrides = {},
  options: LoadConfigOptions = {},
): IdtConfig {
  const parsed = envSchema.safeParse(env);
  const problems: string[] = [];
  const origin = options.origin;
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      problems.push(`${issue.path.join('.')}: ${issue.message}`);
    }
    throw new ConfigError(problems, origin);
  }
  const e = parsed.data as Record<string, unknown> & z.output<typeof envSchema>;
  const environment = overrides.environment ?? e.IDT_ENVIRONMENT ?? 'Production';
  const port = overrides.port ?? e.PORT ?? 8080;
  const host = overrides.host ?? e.HOST ?? '127.0.0.1';
  const baseDir = options.baseDir;
  const givenDataDir = overrides.dataDir ?? e.IDT_DATA_DIR;
  const givenDatabaseUrl = overrides.databaseUrl ?? e.IDT_DATABASE_URL;
  // Without IDT_DATA_DIR, a SQLite file's directory holds the local state beside it (the
  // Development key-encryption secret above all), so the two cannot be separated.
  const sqliteFile = givenDatabaseUrl === undefined ? undefined : sqliteFileOf(absoluteSqliteUrl(givenDatabaseUrl, baseDir));
  const relativeDataDir = givenDataDir ?? (sqliteFile !== undefined && baseDir !== undefined ? dirname(sqliteFile) : './data');
  const dataDir = baseDir === undefined ? relativeDataDir : resolve(baseDir, relativeDataDir);
  const databaseUrl = absoluteSqliteUrl(givenDatabaseUrl ?? `sqlite:${dataDir.replace(/\/+$/, '')}/idt.sqlite`, baseDir);
  let pathPrefix = '';
  try {
    pathPrefix = normalizePathPrefix(overrides.pathPrefix ?? e.IDT_PATH_PREFIX);
  } catch (error) {
    if (error instanceof ConfigError) problems.push(...error.problems);
    else throw error;
  }
  const issuer = normalizeUrl('IDT_ISSUER', overrides.issuer ?? e.IDT_ISSUER ?? `http://localhost:${port}`, problems);
  const publicBaseUrl = `${issuer}${pathPrefix}`;
  const authUrl = normalizeUrl('IDT_AUTH_URL', overrides.authUrl ?? e.IDT_AUTH_URL ?? publicBaseUrl, problems);
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    problems.push('IDT_DATABASE_URL: must start with sqlite: or postgres://');
  }
  const keyEncryptionSecret = overrides.keyEncryptionSecret ?? e.IDT_KEY_ENCRYPTION_SECRET;
  if (keyEncryptionSecret !== undefined && keyEncryptionSecret.length < 32) {
    problems.push('IDT_KEY_ENCRYPTION_SECRET: must be at least 32 characters');
  }
  if (environment === 'Production' && keyEncryptionSecret === undefined && options.requires?.keyEncryptionSecret !== false) {
    problems.push('IDT_KEY_ENCRYPTION_SECRET: is required in Production (at least 32 random characters)');
  }
  const rateLimits = {} as Record<RatePolicyName, RateLimitSetting>;
  for (const policy of ratePolicies) {
    const upper = policy.toUpperCase();
    const setting: RateLimitSetting = {
      permitLimit:
        overrides.rateLimits?.[policy]?.permitLimit ??
        (e[`IDT_RATE_LIMIT_${upper}_PERMIT_LIMIT`] as number | undefined) ??
        defaultRateLimits[policy].permitLimit,
      windowSeconds:
        overrides.rateLimits?.[policy]?.windowSeconds ??
        (e[`IDT_RATE_LIMIT_${upper}_WINDOW_SECONDS`] as number | undefined) ??
        defaultRateLimits[policy].windowSeconds,
    };
    if (!(setting.windowSeconds > 0)) {
      problems.push(`IDT_RATE_LIMIT_${upper}_WINDOW_SECONDS: must be a positive number of seconds`);
    }
    rateLimits[policy] = setting;
  }
  const mailOptional = (options.hasMailer ?? false) || options.requires?.mail === false;
  const mail = resolveMail(environment, dataDir, overrides.mail ?? {}, e, problems, mailOptional);
  if (problems.length > 0) throw new ConfigError(problems, origin);
  return {
    environment,
    port,
    host,
    databaseUrl,
    dataDir,
    issuer,
    pathPrefix,
    authUrl,
    publicBaseUrl,
    trustProxy: overrides.trustProxy ?? e.IDT_TRUST_PROXY ?? false,
    keyEncryptionSecret,
    rateLimits,
    logLevel: overrides.logLevel ?? e.IDT_LOG_LEVEL ?? (environment === 'Testing' ? 'warn' : 'info'),
    mail,
  };
}

function resolveMail(
  environment: Environment,
  dataDir: string,
  overrides: Partial<Omit<MailSettings, 'transport'>>,
  e: { IDT_SMTP_URL?: string | undefined; IDT_MAIL_FROM?: string | undefined },
  problems: string[],
  hasMailer: boolean,
): MailSettings {
  const smtpUrl = overrides.smtpUrl ?? e.IDT_SMTP_URL;
  const from = overrides.from ?? e.IDT_MAIL_FROM ?? DEFAULT_MAIL_FROM;
  const directory = overrides.directory ?? `${dataDir.replace(/\/+$/, '')}/mail`;
  if (smtpUrl !== undefined) {
    let protocol: string | undefined;
    try {
      protocol = new URL(smtpUrl).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'smtp:' && protocol !== 'smtps:') {
      problems.push('IDT_SMTP_URL: must be an smtp:// or smtps:// URL, e.g. smtp://user:password@mail.example.com:587');
    }
  } else if (environment === 'Production' && !hasMailer) {
    problems.push(
      'IDT_SMTP_URL: is required in Production (smtp://user:password@host:587 or smtps://…); without it mail is only written to files',
    );
  }
  if (!/^[^\s@<>]+@[^\s@<>]+$|<[^\s@<>]+@[^\s@<>]+>$/.test(from.trim())) {
    problems.push('IDT_MAIL_FROM: must be an e-mail address, optionally with a name: "idt <no-reply@example.com>"');
  }
  return { transport: smtpUrl === undefined ? 'file' : 'smtp', ...(smtpUrl === undefined ? {} : { smtpUrl }), from, directory };
}
