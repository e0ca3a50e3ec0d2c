import { ConfigError, type Env, envReader } from '@idt/core';
import { z } from 'zod';

/** The scopes a BFF asks for when `OIDC_SCOPES` is not set. */
export const DEFAULT_BFF_SCOPES: readonly string[] = Object.freeze(['openid', 'profile', 'email', 'offline_access']);

/** The session lifetime when `BFF_SESSION_TTL_SECONDS` is not set: 24 hours (SPEC 5.4). */
export const DEFAULT_BFF_SESSION_TTL_SECONDS = 86_400;

/** The session cookie's name when `COOKIE_NAME` is not set and cookies are `Secure`. */
export const DEFAULT_BFF_COOKIE_NAME = '__Host-idt_bff';

/** The session cookie's name when `COOKIE_SECURE=false` (plain http off loopback, or Safari: no `__Host-` prefix). */
export const DEFAULT_BFF_INSECURE_COOKIE_NAME = 'idt_bff';

/** The least length of a cookie secret (SPEC 5.4 and 8.2). */
export const MIN_COOKIE_SECRET_LENGTH = 32;

/** The key id a single `COOKIE_PASSWORD` seals under. */
export const DEFAULT_COOKIE_KEY_ID = 'default';

/** The path the BFF serves the authorization callback on; `OIDC_REDIRECT_URI` must end there. */
export const BFF_CALLBACK_PATH = '/bff/callback';

/**
 * The cookie secrets: {@link currentKeyId} seals, every entry of
 * {@link secrets} unseals (SPEC 5.4).
 */
export interface CookieKeyring {
  /** The key id new cookies (and tokens at rest) are sealed under: the first of `COOKIE_PASSWORDS`, or `default`. */
  readonly currentKeyId: string;
  /** Key id to secret, in the order given. */
  readonly secrets: ReadonlyMap<string, string>;
}

/** The resolved, validated configuration of a BFF. */
export interface BffConfig {
  /** `OIDC_ISSUER`: must equal the issuer the provider advertises, path prefix included (SPEC 5.4). */
  readonly issuer: string;
  /**
   * `OIDC_METADATA_URL`: where the BFF reads the discovery document when it
   * reaches the provider by another address than the public issuer (split
   * horizon, e.g. `http://idt:8080/.well-known/openid-configuration` inside a
   * container network). Server-to-server calls (token, JWKS, revocation) then
   * go to this URL's origin; the browser is still sent to the public
   * authorization and end-session endpoints.
   */
  readonly metadataUrl: string | undefined;
  /** `OIDC_CLIENT_ID`. */
  readonly clientId: string;
  /** `OIDC_CLIENT_SECRET`. */
  readonly clientSecret: string;
  /** `OIDC_REDIRECT_URI`: the public URL of `/bff/callback`, registered with the client. */
  readonly redirectUri: string;
  /** `OIDC_POST_LOGOUT_REDIRECT_URI`: where the provider sends the browser after logout (registered with the client). */
  readonly postLogoutRedirectUri: string | undefined;
  /** `OIDC_SCOPES` (space-separated); `openid profile email offline_access` by default. */
  readonly scopes: readonly string[];
  /** `BFF_API_BASE_URL`: the idt API that `/api/*` is proxied to. */
  readonly apiBaseUrl: string;
  /** `BFF_SESSION_TTL_SECONDS`: the absolute session lifetime (86,400 by default). */
  readonly sessionTtlSeconds: number;
  readonly cookie: {
    /** `COOKIE_NAME`; `__Host-idt_bff` by default (`idt_bff` when not secure). The login-transaction cookie is this name plus `_tx`. */
    readonly name: string;
    /**
     * `COOKIE_SECURE` (default `true`, also on `http://localhost` and
     * `http://127.0.0.1`, where Chrome, Edge and Firefox keep `Secure`
     * cookies): `false` only for plain http on another host name, or Safari.
     */
    readonly secure: boolean;
    /** `COOKIE_PASSWORD` or `COOKIE_PASSWORDS`. */
    readonly keyring: CookieKeyring;
  };
}

/**
 * The BFF's settings as an object (the same rules as the environment
 * variables; see {@link bffConfigFromEnv}). Give either `cookiePassword` or
 * `cookiePasswords`.
 *
 * @example
 * const config = resolveBffConfig({
 *   issuer: 'https://id.example.com',
 *   clientId: 'acme-dashboard',
 *   clientSecret: process.env.OIDC_CLIENT_SECRET,
 *   redirectUri: 'https://app.example.com/bff/callback',
 *   postLogoutRedirectUri: 'https://app.example.com/',
 *   apiBaseUrl: 'https://id.example.com',
 *   cookiePassword: process.env.COOKIE_PASSWORD,
 * });
 */
export interface BffOptions {
  readonly issuer?: string | undefined;
  readonly metadataUrl?: string | undefined;
  readonly clientId?: string | undefined;
  readonly clientSecret?: string | undefined;
  readonly redirectUri?: string | undefined;
  readonly postLogoutRedirectUri?: string | undefined;
  /** Scopes as an array or a space-separated string. */
  readonly scopes?: readonly string[] | string | undefined;
  readonly apiBaseUrl?: string | undefined;
  readonly sessionTtlSeconds?: number | undefined;
  readonly cookieName?: string | undefined;
  readonly cookieSecure?: boolean | undefined;
  /** One secret of at least 32 characters (sealed under the key id `default`). */
  readonly cookiePassword?: string | undefined;
  /**
   * Key id to secret, for rotation: the first entry seals, every entry
   * unseals. Ids are letters, digits and underscores and not all digits (a
   * JSON object lists integer-like keys first, which would change which key
   * seals). When rotating away from a single `cookiePassword` for the first
   * time, key the outgoing secret `default`: that is the id cookies sealed
   * under it carry.
   */
  readonly cookiePasswords?: Readonly<Record<string, string>> | undefined;
}

type Field = keyof BffOptions;

/** The environment variable behind each option, as problems name them. */
const ENV_NAMES: Record<Field, string> = {
  issuer: 'OIDC_ISSUER',
  metadataUrl: 'OIDC_METADATA_URL',
  clientId: 'OIDC_CLIENT_ID',
  clientSecret: 'OIDC_CLIENT_SECRET',
  redirectUri: 'OIDC_REDIRECT_URI',
  postLogoutRedirectUri: 'OIDC_POST_LOGOUT_REDIRECT_URI',
  scopes: 'OIDC_SCOPES',
  apiBaseUrl: 'BFF_API_BASE_URL',
  sessionTtlSeconds: 'BFF_SESSION_TTL_SECONDS',
  cookieName: 'COOKIE_NAME',
  cookieSecure: 'COOKIE_SECURE',
  cookiePassword: 'COOKIE_PASSWORD',
  cookiePasswords: 'COOKIE_PASSWORDS',
};

const OPTION_NAMES = Object.fromEntries(Object.keys(ENV_NAMES).map((key) => [key, key])) as Record<Field, string>;

const MAX_SESSION_TTL_SECONDS = 31_536_000;
const MIN_SESSION_TTL_SECONDS = 60;
const KEY_ID = /^\w+$/;
const ALL_DIGITS = /^\d+$/;
/** RFC 6265 cookie-name token characters. */
const COOKIE_NAME = /^[!#$%&'*+\-.^`|~\w]+$/;

/**
 * Reads the BFF configuration from environment variables (SPEC 2.1 and 5.4)
 * and reports every problem at once.
 *
 * | Variable | |
 * |---|---|
 * | `OIDC_ISSUER` | required; exactly the issuer the provider advertises |
 * | `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET` | required; a confidential application client |
 * | `OIDC_REDIRECT_URI` | required; the public URL of `/bff/callback` |
 * | `OIDC_POST_LOGOUT_REDIRECT_URI` | optional; where the provider returns after logout |
 * | `OIDC_SCOPES` | space-separated; default `openid profile email offline_access` |
 * | `OIDC_METADATA_URL` | optional; discovery document address for split-horizon networks |
 * | `BFF_API_BASE_URL` | required; the API `/api/*` is proxied to |
 * | `COOKIE_PASSWORD` | a secret of at least 32 characters, or: |
 * | `COOKIE_PASSWORDS` | JSON `{"keyId": "secret", ...}`; the first seals, all unseal; ids `^\w+$`, not all digits; the outgoing secret of a first rotation is keyed `default` |
 * | `BFF_SESSION_TTL_SECONDS` | default 86400 |
 * | `COOKIE_NAME` | default `__Host-idt_bff` (`idt_bff` when not secure) |
 * | `COOKIE_SECURE` | default `true` (fine on `http://localhost`); `false` only for plain http on another host, or Safari |
 *
 * @throws ConfigError listing each invalid or missing variable and how to fix it.
 *
 * @example
 * const config = bffConfigFromEnv(process.env);
 */
export function bffConfigFromEnv(env: Env): BffConfig {
  const read = envReader(env);
  const options: Settings = {
    issuer: read.string('OIDC_ISSUER'),
    metadataUrl: read.string('OIDC_METADATA_URL'),
    clientId: read.string('OIDC_CLIENT_ID'),
    clientSecret: read.string('OIDC_CLIENT_SECRET'),
    redirectUri: read.string('OIDC_REDIRECT_URI'),
    postLogoutRedirectUri: read.string('OIDC_POST_LOGOUT_REDIRECT_URI'),
    scopes: read.string('OIDC_SCOPES'),
    apiBaseUrl: read.string('BFF_API_BASE_URL'),
    sessionTtlSeconds: read.integer('BFF_SESSION_TTL_SECONDS', {
      default: DEFAULT_BFF_SESSION_TTL_SECONDS,
      min: MIN_SESSION_TTL_SECONDS,
      max: MAX_SESSION_TTL_SECONDS,
    }),
    cookieName: read.string('COOKIE_NAME'),
    cookieSecure: read.boolean('COOKIE_SECURE', true),
    // Not trimmed: a secret is taken as written (only a blank value counts as unset).
    cookiePassword: env.COOKIE_PASSWORD?.trim() ? env.COOKIE_PASSWORD : undefined,
  };
  const passwordsJson = read.string('COOKIE_PASSWORDS');
  if (passwordsJson !== undefined) {
    try {
      const parsed: unknown = JSON.parse(passwordsJson);
      options.cookiePasswords = isPlainObject(parsed) ? parsed : invalidMap;
    } catch {
      options.cookiePasswords = notJson;
    }
  }
  const result = validate(options, ENV_NAMES);
  for (const problem of result.problems) read.problem(problem);
  read.done();
  return result.config as BffConfig;
}

/**
 * Validates settings given as an object ({@link BffOptions}) with the same
 * rules as {@link bffConfigFromEnv}; problems name the option.
 *
 * @throws ConfigError listing every problem.
 */
export function resolveBffConfig(options: BffOptions): BffConfig {
  const result = validate(options, OPTION_NAMES);
  if (result.config === undefined) throw new ConfigError(result.problems);
  return result.config;
}

/** Whether a value is a resolved {@link BffConfig} rather than {@link BffOptions}. */
export function isBffConfig(value: BffConfig | BffOptions): value is BffConfig {
  return typeof (value as BffConfig).cookie === 'object' && (value as BffConfig).cookie !== null;
}

const notJson = Symbol('not JSON');
const invalidMap = Symbol('not an object');

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isLoopback(url: URL): boolean {
  return url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
}

/** The name each option goes by in problems: the environment variable or the option itself. */
type Names = Readonly<Record<Field, string>>;

/** Every option, given or not, as the schema reads it. */
type Settings = { -readonly [K in Field]?: unknown };

/** The rules an address setting follows besides being an absolute http(s) URL without fragment or credentials. */
interface UrlRules {
  /** Plain http is fine off loopback too (server-to-server addresses); otherwise only with `COOKIE_SECURE=false`. */
  readonly allowHttp: boolean;
  readonly noQuery?: boolean;
  /** The path the URL must name. */
  readonly path?: string;
}

/** A string setting, trimmed; absent, `null` or blank is unset. */
function trimmedText(value: unknown, ctx: z.RefinementCtx): string | undefined {
  if (typeof value === 'string') return value.trim() === '' ? undefined : value.trim();
  if (value !== undefined && value !== null) ctx.addIssue({ code: 'custom', message: 'must be a string' });
  return undefined;
}

const optionalText = z.unknown().transform(trimmedText);

/** A string setting that must be given; `what` says what to set it to. */
function requiredText(what: string) {
  return z.unknown().transform((value, ctx): string => {
    const text = trimmedText(value, ctx);
    if (text !== undefined) return text;
    ctx.addIssue({ code: 'custom', message: `is required: set it to ${what}` });
    return z.NEVER;
  });
}

/**
 * The schema of the settings. Messages name options as `names` does;
 * `isSecure` (`COOKIE_SECURE`, read first) decides whether plain http and
 * prefixed cookie names are allowed. The settings and the cookie keyring are
 * checked side by side, so every problem is reported at once, in the order of
 * the fields.
 */
function bffConfigSchema(names: Names, isSecure: boolean) {
  const url = (rules: UrlRules) =>
    z.string().superRefine((value, ctx) => {
      const problem = (message: string) => ctx.addIssue({ code: 'custom', message });
      if (!URL.canParse(value)) {
        problem(`"${value}" is not an absolute URL: give the full address, e.g. https://example.com`);
        return;
      }
      const parsed = new URL(value);
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
        problem(`must be an http(s) URL, not ${parsed.protocol}`);
        return;
      }
      if (parsed.protocol === 'http:' && !rules.allowHttp && !isLoopback(parsed) && isSecure) {
        problem('must use https (http is accepted only for localhost and 127.0.0.1, or with COOKIE_SECURE=false)');
      }
      if (parsed.hash || value.includes('#')) problem('must not carry a fragment (#...)');
      if (parsed.username || parsed.password) problem('must not carry credentials');
      if (rules.noQuery && parsed.search) problem('must not carry a query string');
      if (rules.path !== undefined && parsed.pathname !== rules.path) {
        problem(`must point at ${rules.path} (the route that completes the sign-in), e.g. https://app.example.com${rules.path}`);
      }
    });

  const scopes = z
    .union([z.string(), z.array(z.unknown())], { error: 'must be a space-separated list of scopes' })
    .nullish()
    .transform((value) => {
      const given = typeof value === 'string' ? value.trim().split(/\s+/).filter(Boolean) : (value ?? []).map(String);
      return [...new Set(given.length > 0 ? given : DEFAULT_BFF_SCOPES)];
    })
    .refine((list) => list.includes('openid'), {
      error: 'must include openid (the BFF signs users in with OpenID Connect)',
    });

  const ttlProblem = `must be a whole number of seconds between ${MIN_SESSION_TTL_SECONDS} and ${MAX_SESSION_TTL_SECONDS}`;
  const sessionTtlSeconds = z
    .int({ error: ttlProblem })
    .min(MIN_SESSION_TTL_SECONDS, { error: ttlProblem })
    .max(MAX_SESSION_TTL_SECONDS, { error: ttlProblem })
    .default(DEFAULT_BFF_SESSION_TTL_SECONDS);

  const cookieName = optionalText.pipe(
    z
      .string()
      .regex(COOKIE_NAME, { error: "may hold only letters, digits and !#$%&'*+-.^_`|~", abort: true })
      .refine((name) => isSecure || !(name.startsWith('__Host-') || name.startsWith('__Secure-')), {
        error: (issue) =>
          `"${String(issue.input)}" needs Secure cookies: drop the __Host-/__Secure- prefix or leave ${names.cookieSecure} true`,
      })
      .default(isSecure ? DEFAULT_BFF_COOKIE_NAME : DEFAULT_BFF_INSECURE_COOKIE_NAME),
  );

  const settings = z.object({
    cookieSecure: z.boolean({ error: 'must be true or false' }).optional(),
    issuer: requiredText('the issuer URL the identity server advertises').pipe(url({ allowHttp: false, noQuery: true })),
    metadataUrl: optionalText.pipe(url({ allowHttp: true, noQuery: true }).optional()),
    clientId: requiredText('the client id of the registered application'),
    clientSecret: requiredText('the client secret shown once at registration'),
    redirectUri: requiredText(`the public URL of ${BFF_CALLBACK_PATH} on this host`).pipe(
      url({ allowHttp: false, path: BFF_CALLBACK_PATH }),
    ),
    postLogoutRedirectUri: optionalText.pipe(url({ allowHttp: false }).optional()),
    apiBaseUrl: requiredText('the base URL of the idt API').pipe(url({ allowHttp: true, noQuery: true })),
    scopes,
    sessionTtlSeconds,
    cookieName,
  });

  return settings.and(cookieKeyringSchema(names)).transform(
    (valid): BffConfig => ({
      issuer: valid.issuer,
      metadataUrl: valid.metadataUrl,
      clientId: valid.clientId,
      clientSecret: valid.clientSecret,
      redirectUri: valid.redirectUri,
      postLogoutRedirectUri: valid.postLogoutRedirectUri,
      scopes: valid.scopes,
      apiBaseUrl: valid.apiBaseUrl,
      sessionTtlSeconds: valid.sessionTtlSeconds,
      cookie: { name: valid.cookieName, secure: isSecure, keyring: valid.keyring },
    }),
  );
}

/**
 * The cookie secrets: `cookiePassword` or `cookiePasswords` (never both), each
 * secret at least {@link MIN_COOKIE_SECRET_LENGTH} characters, and key ids that
 * keep their order in JSON.
 */
function cookieKeyringSchema(names: Names) {
  const short = `must be at least ${MIN_COOKIE_SECRET_LENGTH} characters: generate one with \`openssl rand -base64 32\``;
  const isSecret = (value: unknown): value is string => typeof value === 'string' && value.length >= MIN_COOKIE_SECRET_LENGTH;
  return z
    .object({ cookiePassword: z.unknown(), cookiePasswords: z.unknown() })
    .transform(({ cookiePassword: single, cookiePasswords: map }, ctx): { keyring: CookieKeyring } => {
      const problem = (field: 'cookiePassword' | 'cookiePasswords', message: string) => {
        ctx.addIssue({ code: 'custom', path: [field], message });
        return z.NEVER;
      };
      const hasSingle = single !== undefined && single !== null && single !== '';
      const hasMap = map !== undefined && map !== null;
      if (hasSingle && hasMap) {
        return problem('cookiePassword', `set either ${names.cookiePassword} or ${names.cookiePasswords}, not both`);
      }
      if (hasSingle) {
        if (!isSecret(single)) return problem('cookiePassword', short);
        return { keyring: { currentKeyId: DEFAULT_COOKIE_KEY_ID, secrets: new Map([[DEFAULT_COOKIE_KEY_ID, single]]) } };
      }
      if (!hasMap) {
        return problem(
          'cookiePassword',
          `is required: set ${names.cookiePassword} to a secret of at least ${MIN_COOKIE_SECRET_LENGTH} characters (or ${names.cookiePasswords} for rotation)`,
        );
      }
      if (map === notJson) {
        return problem(
          'cookiePasswords',
          'is not valid JSON: write an object such as {"k2":"<new secret>","default":"<old secret>"}',
        );
      }
      if (!isPlainObject(map)) {
        return problem(
          'cookiePasswords',
          'must be a JSON object of key id to secret, such as {"k2":"<new secret>","default":"<old secret>"}',
        );
      }
      const entries = Object.entries(map);
      if (entries.length === 0) return problem('cookiePasswords', 'must hold at least one key id and secret');
      const secrets = new Map<string, string>();
      for (const [id, secret] of entries) {
        const idProblem = !KEY_ID.test(id)
          ? `key id "${id}" may hold only letters, digits and underscores`
          : ALL_DIGITS.test(id)
            ? `key id "${id}" is all digits: add a letter (e.g. "k${id}"), since JSON lists such keys first and the wrong key would seal`
            : undefined;
        if (idProblem !== undefined) problem('cookiePasswords', idProblem);
        if (!isSecret(secret)) problem('cookiePasswords', `the secret of "${id}" ${short}`);
        else if (idProblem === undefined) secrets.set(id, secret);
      }
      const [currentKeyId] = secrets.keys();
      if (currentKeyId === undefined || secrets.size < entries.length) return z.NEVER;
      return { keyring: { currentKeyId, secrets } };
    });
}

/** Checks every setting against {@link bffConfigSchema}: the configuration, or every problem in the order of the fields. */
function validate(
  input: Settings,
  names: Names,
): { config: BffConfig; problems: [] } | { config: undefined; problems: string[] } {
  // Every option is present (most as `undefined`), so each rule runs whether or not it was given.
  const settings = Object.fromEntries(Object.keys(names).map((field) => [field, input[field as Field]]));
  const result = bffConfigSchema(names, input.cookieSecure !== false).safeParse(settings);
  if (result.success) return { config: result.data, problems: [] };
  return {
    config: undefined,
    problems: result.error.issues.map((issue) => `${names[issue.path[0] as Field] ?? 'options'}: ${issue.message}`),
  };
}
